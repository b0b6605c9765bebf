// Package gc removes what old ended jobs left behind: their worktrees,
// verify trees, engine folders and logs, their branches once the work is
// merged (any branch with force), and the environment cache's old entries
// and hub's rotated logs. The records and journals stay. Without apply it
// changes nothing and says what it would do. The daemon's gc handler only
// reads its settings and calls Collector.Collect.
package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/deps"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/logfile"
)

// MaxRetention bounds older_than_s, so it stays a time.Duration.
const MaxRetention = 100 * 365 * 24 * time.Hour

// Collector collects. Every field is required.
type Collector struct {
	Store   *store.Store
	Paths   config.Paths
	Log     zerolog.Logger
	Changed func() // a job's record changed (a note of what was removed)
}

// Collect is gc at the time now: it decides per job and, with p.Apply,
// removes. Each repository's jobs are handled under its lock (apply only),
// so gc never races a job being prepared or a cleanup.
func (s *Collector) Collect(ctx context.Context, p protocol.GCParams, olderThan time.Duration, now time.Time) (*protocol.GCResult, error) {
	jobs, err := s.Store.ListJobs(ctx, nil, "", 0)
	if err != nil {
		return nil, err
	}
	res := &protocol.GCResult{Applied: p.Apply, OlderThanS: int64(olderThan / time.Second), Force: p.Force, Jobs: []protocol.GCJob{}}
	cutoff := now.Add(-olderThan)
	out := make([]protocol.GCJob, len(jobs))
	byRepo := map[string][]int{}
	var repos []string
	for i, j := range jobs {
		out[i] = protocol.GCJob{ID: j.ID, State: j.State, Repo: j.Repo, EndedAt: j.EndedAt}
		reason, err := s.mustKeep(ctx, j, cutoff, olderThan, now)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			out[i].Action, out[i].Reason = protocol.GCKeep, reason
			continue
		}
		if _, ok := byRepo[j.Repo]; !ok {
			repos = append(repos, j.Repo)
		}
		byRepo[j.Repo] = append(byRepo[j.Repo], i)
	}
	for _, top := range repos {
		if ctx.Err() != nil { // the caller left: say which jobs were not looked at
			for _, i := range byRepo[top] {
				out[i].Action, out[i].Reason = protocol.GCSkip, "gc was cancelled before it got to this job"
			}
			continue
		}
		s.collectRepo(ctx, top, jobs, byRepo[top], out, p)
	}
	touched := false
	for i := range out {
		g := &out[i]
		if g.Action == "" {
			g.Action, g.Reason = jobAction(g.Items)
		}
		if g.Action == "" {
			res.Clean++
			continue
		}
		tally(res, g.Items)
		if p.Apply && g.Action == protocol.GCRemove {
			touched = true
			_, _ = s.Store.AppendEvent(context.WithoutCancel(ctx), g.ID, protocol.EventNote, "gc: "+removedText(g.Items), nil, now)
		}
		res.Jobs = append(res.Jobs, *g)
	}
	if touched {
		s.Changed()
	}
	res.Envs = s.collectEnvs(p, cutoff, now)
	tally(res, res.Envs)
	res.Logs = s.collectLogs(ctx, p.Apply)
	tally(res, res.Logs)
	return res, nil
}

// collectLogs removes (with apply) what rotated out of hub's own logs.
func (s *Collector) collectLogs(ctx context.Context, apply bool) []protocol.GCItem {
	var items []protocol.GCItem
	for _, path := range []string{s.Paths.DaemonLog(), s.Paths.MCPLog()} {
		old := logfile.Old(path)
		if !Exists(old) {
			continue
		}
		it := protocol.GCItem{Kind: protocol.GCLog, Path: old, Bytes: DiskUse(ctx, old), Action: protocol.GCRemove}
		if apply {
			if err := os.Remove(old); err != nil {
				it.Error = err.Error()
			}
		}
		items = append(items, it)
	}
	return items
}

// tally counts items into res: the bytes removed, the removals that failed.
func tally(res *protocol.GCResult, items []protocol.GCItem) {
	for _, it := range items {
		switch {
		case it.Error != "":
			res.Failed++
		case it.Action == protocol.GCRemove:
			res.FreedBytes += it.Bytes
		}
	}
}

// scratchAge is how old a folder an install left in the cache must be
// before gc takes it for abandoned (a live install writes to its own).
const scratchAge = time.Hour

// collectEnvs removes (with apply) the cache entries no job used since
// cutoff, and the folders interrupted installs left. An entry a job copies
// from at this moment is a whole tree until the rename of its removal:
// deps.Cache removes by renaming it aside first.
func (s *Collector) collectEnvs(p protocol.GCParams, cutoff, now time.Time) []protocol.GCItem {
	c := deps.Cache{Dir: s.Paths.EnvsDir()}
	ents, scratch, err := c.List()
	if err != nil {
		return []protocol.GCItem{{Kind: protocol.GCEnv, Path: c.Dir, Action: protocol.GCKeep, Error: err.Error()}}
	}
	var items []protocol.GCItem
	for _, e := range ents {
		it := protocol.GCItem{Kind: protocol.GCEnv, Path: e.Path, Bytes: DiskUse(context.Background(), e.Path), Action: protocol.GCRemove,
			Reason: fmt.Sprintf("%s (%s) not used for %s", strings.Join(e.Dirs, ", "), e.Manager, ago(now.Sub(e.LastUsed)))}
		if e.LastUsed.After(cutoff) {
			continue // in use: not worth a line
		}
		if p.Apply {
			if err := c.Drop(e.Key); err != nil {
				it.Error = err.Error()
			}
		}
		items = append(items, it)
	}
	for _, sc := range scratch {
		if sc.Age < scratchAge {
			continue
		}
		it := protocol.GCItem{Kind: protocol.GCEnv, Path: sc.Path, Bytes: sc.Bytes, Action: protocol.GCRemove,
			Reason: "left by an install that did not finish"}
		if p.Apply {
			if err := c.RemoveScratch(sc); err != nil {
				it.Error = err.Error()
			}
		}
		items = append(items, it)
	}
	return items
}

// mustKeep says why job j is kept whole ("" when gc may look at what it left):
// it has not ended, a question of it waits for an answer, or it ended too
// recently.
func (s *Collector) mustKeep(ctx context.Context, j *store.Job, cutoff time.Time, olderThan time.Duration, now time.Time) (string, error) {
	qs, err := s.Store.PendingQuestions(ctx, j.ID)
	if err != nil {
		return "", err
	}
	switch {
	case len(qs) > 0:
		return fmt.Sprintf("its question %s is not answered yet", qs[0].ID), nil
	case !j.State.Terminal():
		return fmt.Sprintf("it is %s; gc never touches a job that has not ended", j.State), nil
	case j.EndedAt.IsZero():
		return "no end time is recorded", nil
	case j.EndedAt.After(cutoff):
		return fmt.Sprintf("it ended %s ago; the retention is %s", ago(now.Sub(j.EndedAt)), span(olderThan)), nil
	}
	return "", nil
}

// collectRepo handles the old ended jobs idx of the repository at top ("" for
// jobs without one), filling out[i].Items.
func (s *Collector) collectRepo(ctx context.Context, top string, jobs []*store.Job, idx []int, out []protocol.GCJob, p protocol.GCParams) {
	var repo *gitx.Repo
	var repoErr error
	if top != "" {
		repo, repoErr = gitx.Open(top)
		if repoErr == nil && p.Apply {
			unlock, err := gitx.LockRepo(ctx, s.Paths.LocksDir(), repo)
			if err != nil {
				for _, i := range idx {
					out[i].Action, out[i].Reason = protocol.GCSkip, "cannot lock its repository: "+err.Error()
				}
				return
			}
			defer unlock()
		}
	}
	for _, i := range idx {
		j := jobs[i]
		g := &out[i]
		switch {
		case top == "":
		case repoErr != nil:
			g.Items = append(g.Items, s.orphanedCheckouts(ctx, j, repoErr)...)
		default:
			g.Items = append(g.Items, s.collectGit(ctx, repo, j, p)...)
		}
		g.Items = append(g.Items, s.collectFiles(ctx, j, p.Apply)...)
	}
}

// orphanedCheckouts lists the checkouts of a job whose repository cannot be
// opened (it moved or vanished): they are skipped, since they may hold work
// found nowhere else.
func (s *Collector) orphanedCheckouts(ctx context.Context, j *store.Job, repoErr error) []protocol.GCItem {
	var items []protocol.GCItem
	for _, c := range []struct{ kind, path string }{
		{protocol.GCWorktree, s.Paths.Worktree(j.ID)}, {protocol.GCVerifyTree, s.Paths.VerifyTree(j.ID)},
	} {
		if !Exists(c.path) {
			continue
		}
		items = append(items, protocol.GCItem{Kind: c.kind, Path: c.path, Bytes: DiskUse(ctx, c.path),
			Action: protocol.GCSkip,
			Reason: fmt.Sprintf("its repository %s cannot be opened (%v); if the repo moved or is gone, look for work in it and remove it by hand",
				j.Repo, repoErr)})
	}
	return items
}

// collectGit decides on job j's worktree, verify tree and branch in repo and,
// with p.Apply, removes them. The caller holds the repo's lock when applying.
func (s *Collector) collectGit(ctx context.Context, repo *gitx.Repo, j *store.Job, p protocol.GCParams) []protocol.GCItem {
	var items []protocol.GCItem
	c := job.Checkout(s.Paths, j, repo)
	wt := c.Dir
	wtItem, vtItem, brItem := -1, -1, -1
	wtKept := false
	if Exists(wt) {
		it := protocol.GCItem{Kind: protocol.GCWorktree, Path: wt, Bytes: DiskUse(ctx, wt)}
		it.Action, it.Reason = worktreeAction(ctx, c, j, p.Force)
		wtKept = it.Action != protocol.GCRemove
		wtItem = len(items)
		items = append(items, it)
	}
	if vt := s.Paths.VerifyTree(j.ID); Exists(vt) {
		vtItem = len(items)
		items = append(items, protocol.GCItem{Kind: protocol.GCVerifyTree, Path: vt, Bytes: DiskUse(ctx, vt), Action: protocol.GCRemove})
	}
	if j.Branch != "" && j.Branch == job.Branch(j.ID) {
		it := protocol.GCItem{Kind: protocol.GCBranch, Branch: j.Branch}
		ok, err := gitx.BranchExists(ctx, repo, j.Branch)
		switch {
		case err != nil:
			it.Action, it.Reason = protocol.GCKeep, "cannot tell whether it exists: "+err.Error()
		case !ok:
		case wtKept:
			it.Action, it.Reason = protocol.GCKeep, "it is checked out in the job's worktree, which is kept"
		default:
			it.Action, it.Reason = BranchAction(ctx, repo, j, p.Force)
		}
		if it.Action != "" {
			brItem = len(items)
			items = append(items, it)
		}
	}
	if !p.Apply {
		return items
	}

	if (wtItem >= 0 && items[wtItem].Action == protocol.GCRemove) || vtItem >= 0 {
		var removed bool
		var err error
		if wtItem >= 0 && items[wtItem].Action == protocol.GCRemove {
			// Looked at again under the lock: it may have changed since.
			if action, reason := worktreeAction(ctx, c, j, p.Force); action != protocol.GCRemove {
				err = errors.New(reason + "; it is kept")
			} else {
				removed, err = RemoveCheckouts(ctx, s.Paths, c, j.ID)
			}
		} else {
			_ = job.VerifyCheckout(s.Paths, j.ID, repo).Remove(ctx)
		}
		if err != nil && wtItem >= 0 {
			items[wtItem].Error = err.Error()
		}
		if removed && j.Worktree == wt {
			if err := s.Store.Update(ctx, j.ID, func(r *store.Job) error { r.Worktree = ""; return nil }); err != nil {
				s.Log.Error().Err(err).Str("job", j.ID).Msg("gc: record the removed worktree")
			}
		}
		if vtItem >= 0 && Exists(items[vtItem].Path) {
			items[vtItem].Error = "it is still there after its removal"
		}
	}
	if brItem >= 0 && items[brItem].Action == protocol.GCRemove {
		switch {
		case wtItem >= 0 && items[wtItem].Error != "":
			items[brItem].Error = "not deleted: the job's worktree could not be removed"
		default:
			if err := gitx.DeleteBranch(ctx, repo, j.Branch); err != nil {
				items[brItem].Error = err.Error()
			}
		}
	}
	return items
}

// worktreeAction decides on a job's worktree, from hub's record of its
// checkout (never what its .git says): it goes only when it has no
// uncommitted changes (whatever force says) and its HEAD is on the job's
// branch (with force, anyway).
func worktreeAction(ctx context.Context, c *gitx.Checkout, j *store.Job, force bool) (action, reason string) {
	dirty, err := c.Dirty(ctx, WorktreeRev(j))
	if err != nil {
		return protocol.GCKeep, "cannot tell whether it has uncommitted changes: " + err.Error()
	}
	if dirty {
		return protocol.GCKeep, "it has uncommitted changes; gc never removes those, not even with --force (commit or discard them first)"
	}
	if on, what := c.HeadOnBranch(); !on && j.Branch != "" && !force {
		return protocol.GCKeep, fmt.Sprintf("it is not on its branch %s (%s); look at it, or pass --force", j.Branch, what)
	}
	return protocol.GCRemove, ""
}

// BranchAction decides on job j's branch: it goes when its work is merged
// (its tip is on a branch outside hub/) or it has no commits beyond the
// job's base; with force it goes anyway.
func BranchAction(ctx context.Context, repo *gitx.Repo, j *store.Job, force bool) (action, reason string) {
	tip, err := repo.Resolve("refs/heads/" + j.Branch)
	if err != nil {
		return protocol.GCKeep, "cannot read its tip: " + err.Error()
	}
	if j.BaseSHA != "" {
		if ok, err := gitx.IsAncestor(ctx, repo.Top, tip, j.BaseSHA); err == nil && ok {
			return protocol.GCRemove, "it has no commits beyond its base"
		}
	}
	if len(j.Landed) > 0 {
		// A squashed landing holds the work under another commit: the
		// record says which tip landed.
		var l protocol.Landing
		if json.Unmarshal(j.Landed, &l) == nil && l.Head == tip {
			return protocol.GCRemove, fmt.Sprintf("its work landed on %s as %s", l.Into, view.ShortSHA(l.Commit))
		}
	}
	on, err := gitx.BranchesContaining(ctx, repo.Top, tip)
	if err != nil {
		return protocol.GCKeep, "cannot tell whether its work is merged: " + err.Error()
	}
	for _, b := range on {
		if !strings.HasPrefix(b, "hub/") {
			return protocol.GCRemove, "its work is merged into " + b
		}
	}
	if force {
		return protocol.GCRemove, fmt.Sprintf("its work (tip %s) is on no other branch; deleted because of --force", view.ShortSHA(tip))
	}
	return protocol.GCKeep, fmt.Sprintf("its work (tip %s) is on no other branch; merge it, or pass --force to delete it", view.ShortSHA(tip))
}

// collectFiles decides on job j's engine folder and logs under HUB_HOME, and
// removes them with apply. The journal stays.
func (s *Collector) collectFiles(ctx context.Context, j *store.Job, apply bool) []protocol.GCItem {
	var items []protocol.GCItem
	for _, f := range []struct{ kind, path string }{
		{protocol.GCEngine, s.Paths.EngineHome(j.ID)},
		{protocol.GCCache, s.Paths.JobCache(j.ID)},
		{protocol.GCCache, s.Paths.SetupHome(j.ID)},
		{protocol.GCLog, s.Paths.ShimLog(j.ID)},
		{protocol.GCLog, logfile.Old(s.Paths.ShimLog(j.ID))},
		{protocol.GCLog, s.Paths.WorkerLog(j.ID)},
		{protocol.GCLog, s.Paths.SetupLog(j.ID)},
	} {
		if !Exists(f.path) {
			continue
		}
		it := protocol.GCItem{Kind: f.kind, Path: f.path, Bytes: DiskUse(ctx, f.path), Action: protocol.GCRemove}
		if apply {
			if err := os.RemoveAll(f.path); err != nil {
				it.Error = err.Error()
			}
		}
		items = append(items, it)
	}
	return items
}

// jobAction sums up a job's items: remove when one goes, else keep or skip
// with the first item's reason; "" when nothing is left.
func jobAction(items []protocol.GCItem) (action, reason string) {
	for _, it := range items {
		if it.Action == protocol.GCRemove {
			return protocol.GCRemove, ""
		}
	}
	for _, it := range items {
		what := it.Kind
		if it.Branch != "" {
			what += " " + it.Branch
		}
		return it.Action, what + ": " + it.Reason
	}
	return "", ""
}

// removedText is the journal note of what gc removed.
func removedText(items []protocol.GCItem) string {
	var parts []string
	logs := 0
	var freed int64
	for _, it := range items {
		if it.Action != protocol.GCRemove || it.Error != "" {
			continue
		}
		freed += it.Bytes
		switch it.Kind {
		case protocol.GCWorktree:
			parts = append(parts, "worktree removed")
		case protocol.GCVerifyTree:
			parts = append(parts, "verify tree removed")
		case protocol.GCBranch:
			parts = append(parts, "branch "+it.Branch+" deleted")
		case protocol.GCEngine:
			parts = append(parts, "engine folder removed")
		case protocol.GCCache:
			parts = append(parts, "tools' cache removed")
		case protocol.GCLog:
			logs++
		}
	}
	if logs > 0 {
		parts = append(parts, fmt.Sprintf("%d log(s) removed", logs))
	}
	if len(parts) == 0 {
		return "nothing could be removed"
	}
	return fmt.Sprintf("%s (%d bytes)", strings.Join(parts, ", "), freed)
}

// Exists reports whether anything is at path (a symlink counts).
func Exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// ago is a rough age: whole days, hours, minutes or seconds.
func ago(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// span is an exact retention: in days when it is whole days.
func span(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
