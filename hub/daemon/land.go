package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/shim"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/errline"
)

// defaultCheckTimeout bounds a landing check when neither the request nor
// the job says.
const defaultCheckTimeout = 600 * time.Second

// JobLand lands ended jobs onto a target branch, one at a time, each
// checked on the integrated commit before the target moves. Everything a
// request could be refused for is checked before anything is made.
func (s *Server) JobLand(ctx context.Context, p protocol.LandParams) (*protocol.LandResult, error) {
	ids := unique(p.IDs)
	if len(ids) == 0 {
		return nil, invalid("ids", "name the jobs to land", "ids is empty")
	}
	switch p.Order {
	case "":
		p.Order = protocol.OrderGiven
	case protocol.OrderGiven, protocol.OrderAuto:
	default:
		return nil, invalid("order", "pass given or auto", "unknown order %q", p.Order)
	}
	switch p.Mode {
	case "":
		p.Mode = protocol.LandMerge
	case protocol.LandMerge, protocol.LandSquash, protocol.LandRebase:
	default:
		return nil, invalid("mode", "pass merge, squash or rebase", "unknown mode %q", p.Mode)
	}
	if p.VerifyTimeoutS < 0 {
		return nil, invalid("verify_timeout_s", "pass a number of seconds, or leave it out", "verify_timeout_s is negative")
	}
	jobs := make([]*store.Job, 0, len(ids))
	for _, id := range ids {
		j, err := s.st.Job(ctx, id)
		if err != nil {
			return nil, notFound(id, err)
		}
		if err := landable(j); err != nil {
			return nil, err
		}
		if len(jobs) > 0 && j.Repo != jobs[0].Repo {
			return nil, invalid("ids", "land each repository's jobs in a call of their own",
				"job %s is of %s and job %s of %s", jobs[0].ID, jobs[0].Repo, j.ID, j.Repo)
		}
		jobs = append(jobs, j)
	}
	repo, err := gitx.Open(jobs[0].Repo)
	if err != nil {
		return nil, wrongState("the repository is gone or unreadable; nothing can land", "%v", err)
	}
	for _, j := range jobs {
		if ok, err := gitx.BranchExists(ctx, repo, j.Branch); err != nil {
			return nil, internal(err)
		} else if !ok {
			return nil, wrongState("it was deleted (cleanup --delete-branch); nothing is left to land", "branch %s of job %s does not exist", j.Branch, j.ID)
		}
	}
	into := p.Into
	if into == "" {
		for _, j := range jobs {
			t := j.Target
			if t == "" {
				t = repo.BranchOf("HEAD")
			}
			if into != "" && t != into {
				return nil, invalid("into", "pass into: the branch to land them all on",
					"job %s started from %s and job %s from %s", jobs[0].ID, into, j.ID, t)
			}
			into = t
		}
		if into == "" {
			return nil, invalid("into", "pass into: the branch to land on", "the jobs started from a detached HEAD, so they have no target branch")
		}
	}
	if strings.HasPrefix(into, "refs/heads/") {
		into = strings.TrimPrefix(into, "refs/heads/")
	}
	if ok, err := gitx.BranchExists(ctx, repo, into); err != nil {
		return nil, invalid("into", "pass a local branch name, such as main", "%v", err)
	} else if !ok {
		return nil, invalid("into", "pass a local branch that exists (git branch lists them)", "no branch %q in %s", into, repo.Top)
	}
	if slices.ContainsFunc(jobs, func(j *store.Job) bool { return j.Branch == into }) {
		return nil, invalid("into", "pass the branch to land on, not a job's own", "%s is a job's own branch", into)
	}

	unlock, err := gitx.LockRepo(ctx, s.o.Paths.LocksDir(), repo)
	if err != nil {
		return nil, internal(err)
	}
	defer unlock()
	// Another landing may have taken a job while this one waited for the lock.
	for i, j := range jobs {
		if jobs[i], err = s.st.Job(ctx, j.ID); err != nil {
			return nil, notFound(j.ID, err)
		}
		if err := landable(jobs[i]); err != nil {
			return nil, err
		}
	}
	// The target's checkout (git lets a branch be checked out once): landing
	// moves its files too, so it must have no changes of its own.
	checkouts, err := gitx.CheckedOut(ctx, repo, into)
	if err != nil {
		return nil, internal(err)
	}
	for _, dir := range checkouts {
		if dirty, err := trackedChanges(ctx, dir); err != nil {
			return nil, internal(err)
		} else if dirty {
			return nil, wrongState("commit or stash your changes in "+dir+", or land into another branch",
				"%s is checked out in %s with uncommitted changes; hub would move it under them", into, dir)
		}
	}
	from, err := repo.Resolve("refs/heads/" + into)
	if err != nil {
		return nil, internal(err)
	}
	if p.Mode == protocol.LandRebase {
		for _, j := range jobs {
			if merges, err := gitx.HasMerges(ctx, repo, from, "refs/heads/"+j.Branch); err != nil {
				return nil, internal(err)
			} else if merges {
				return nil, wrongState("land it with mode merge or squash; a rebase would drop what its merges brought",
					"branch %s of job %s has merge commits", j.Branch, j.ID)
			}
		}
	}
	if p.Order == protocol.OrderAuto {
		jobs = s.landOrder(ctx, repo, from, jobs)
	}

	res := &protocol.LandResult{Into: into, From: from, Tip: from}
	stopped := ""
	for _, j := range jobs {
		if stopped != "" {
			res.Jobs = append(res.Jobs, protocol.LandItem{ID: j.ID, Outcome: protocol.LandSkipped, Reason: stopped})
			continue
		}
		item, err := s.landOne(ctx, repo, j, into, res.Tip, checkouts, p)
		if err != nil {
			// The target moved under hub, or git failed: what is landed stays, the rest waits.
			stopped = err.Error()
			item = protocol.LandItem{ID: j.ID, Outcome: protocol.LandSkipped, Reason: stopped}
		}
		if item.Outcome == protocol.LandLanded || (p.DryRun && item.Outcome == protocol.LandWould) {
			res.Tip = item.Commit
		}
		res.Jobs = append(res.Jobs, item)
	}
	if p.DryRun {
		res.Tip = from
	}
	if res.Tip != from && len(checkouts) > 0 {
		res.Checkout = "updated"
	}
	res.Line = landLine(res, p.DryRun)
	s.poke()
	return res, nil
}

// landable says why job j cannot land, if it cannot.
func landable(j *store.Job) error {
	switch {
	case j.Kind != protocol.KindWrite || j.Branch == "":
		return wrongState("a read job has no branch: there is nothing to land", "job %s is a read job", j.ID)
	case !j.State.Terminal():
		return wrongState("wait for it to end (hub wait "+j.ID+"), or stop it, then land", "job %s is %s; only an ended job can land", j.ID, j.State)
	case len(j.Landed) > 0:
		var l protocol.Landing
		_ = json.Unmarshal(j.Landed, &l)
		return wrongState("nothing to do: its work is on "+l.Into, "job %s already landed on %s as %s", j.ID, l.Into, view.ShortSHA(l.Commit))
	case j.HeadSHA == "" || j.HeadSHA == j.BaseSHA:
		return wrongState("the job changed nothing: there is nothing to land; hub cleanup "+j.ID+" removes it", "job %s has no commits on %s", j.ID, j.Branch)
	}
	return nil
}

// landOne integrates job j with the target's tip, checks the commit, and
// moves the target. An error means the batch must stop (the target moved
// under hub, or git failed); a job that does not land is an item.
func (s *Server) landOne(ctx context.Context, repo *gitx.Repo, j *store.Job, into, tip string, checkouts []string, p protocol.LandParams) (protocol.LandItem, error) {
	item := protocol.LandItem{ID: j.ID}
	head, err := repo.Resolve("refs/heads/" + j.Branch)
	if err != nil {
		return item, fmt.Errorf("read %s: %w", j.Branch, err)
	}
	if head != j.HeadSHA {
		// The branch is the work: a commit on it after the job ended (by
		// the user) lands with it, and the record says which commit.
		j.HeadSHA = head
	}
	if ok, err := gitx.IsAncestor(ctx, repo.Top, head, tip); err != nil {
		return item, err
	} else if ok {
		// Merged by hand, or landed by a hub that stopped before it wrote
		// the record: the work is there, and the record says so from now on.
		item.Outcome, item.Commit, item.Reason = protocol.LandAlready, tip, into+" already holds "+view.ShortSHA(head)
		if !p.DryRun {
			l := protocol.Landing{Into: into, Commit: tip, From: tip, Head: head, At: s.now(),
				Verified: "not checked by hub: " + into + " already held it when hub land looked"}
			raw, _ := json.Marshal(l)
			_, _ = s.st.SetLanded(ctx, j.ID, raw, fmt.Sprintf("found on %s already (%s)", into, view.ShortSHA(tip)), s.now())
		}
		return item, nil
	}
	msg := fmt.Sprintf("Land hub job %s: %s\n\nHub-Job: %s\n", j.ID, view.FirstLine(j.Task, 72), j.ID)
	if p.Mode == protocol.LandMerge {
		msg = fmt.Sprintf("Merge hub job %s: %s\n\nHub-Job: %s\n", j.ID, view.FirstLine(j.Task, 72), j.ID)
	}
	var commit string
	var files []string
	if p.Mode == protocol.LandRebase {
		commit, files, err = gitx.Replay(ctx, repo, s.o.Paths.LandTree(j.ID), tip, head, gitx.HubIdentity)
		if errors.Is(err, gitx.ErrHasMerges) {
			item.Outcome, item.Reason = protocol.LandSkipped, j.Branch+" has merge commits, which a rebase would drop: land it with mode merge or squash"
			return item, nil
		}
	} else {
		commit, files, err = gitx.Integrate(ctx, repo, tip, head, p.Mode == protocol.LandSquash, msg, gitx.HubIdentity)
	}
	if err != nil {
		return item, fmt.Errorf("integrate %s with %s: %w", j.Branch, into, err)
	}
	if len(files) > 0 {
		item.Outcome, item.Files = protocol.LandConflict, files
		item.Reason = fmt.Sprintf("%s conflicts with %s in %s", j.Branch, into, view.PathList(files, 5))
		if p.Resolve && !p.DryRun {
			item.FollowUp = s.startResolve(ctx, j, into, head, files)
		}
		return item, nil
	}
	item.Commit = commit
	if p.DryRun {
		item.Outcome = protocol.LandWould
		return item, nil
	}
	params, _ := store.DecodeSpec(j.Spec)
	timeout := time.Duration(p.VerifyTimeoutS) * time.Second
	if timeout == 0 && params.VerifyTimeoutS > 0 {
		timeout = time.Duration(params.VerifyTimeoutS) * time.Second
	}
	if timeout == 0 {
		timeout = defaultCheckTimeout
	}
	var verified []string
	for _, c := range []struct {
		command string
		into    **protocol.Verify
		what    string
	}{{params.Verify, &item.Verify, "the job's verify"}, {p.Verify, &item.Batch, "the batch verify"}} {
		if strings.TrimSpace(c.command) == "" {
			continue
		}
		v, err := shim.Check(ctx, shim.Options{Paths: s.o.Paths, Engines: s.o.Engines, HubBinary: s.o.HubBinary, Log: s.o.Log}, s.st, j.ID, commit, c.command, timeout, nil)
		*c.into = v
		if err != nil {
			item.Outcome = protocol.LandRed
			item.Reason = fmt.Sprintf("%s on the integrated commit %s: %s", c.what, view.ShortSHA(commit), err)
			if v != nil && v.OutputTail != "" {
				item.Reason += ": " + view.FirstLine(errline.Telling(v.OutputTail), 160)
			}
			return item, nil
		}
		verified = append(verified, fmt.Sprintf("`%s` exit 0", view.FirstLine(c.command, 60)))
	}
	// Move the target, only from the tip this commit was made on.
	if now, err := repo.Resolve("refs/heads/" + into); err != nil || now != tip {
		return item, fmt.Errorf("%s moved under hub (to %s) while it checked %s; land the rest again", into, view.ShortSHA(now), j.ID)
	}
	why := "hub land " + j.ID
	if len(checkouts) > 0 {
		for _, dir := range checkouts {
			if dirty, err := trackedChanges(ctx, dir); err != nil || dirty {
				return item, fmt.Errorf("%s's checkout %s changed while hub checked %s; nothing moved: commit or stash, then land the rest again", into, dir, j.ID)
			}
			if err := gitx.FastForward(ctx, dir, commit); err != nil {
				return item, err
			}
		}
	} else if err := gitx.MoveBranch(ctx, repo, into, commit, tip, why); err != nil {
		return item, fmt.Errorf("move %s: %w", into, err)
	}
	how := "not checked: the job has no verify and the batch none"
	if len(verified) > 0 {
		how = strings.Join(verified, ", ") + " on " + view.ShortSHA(commit)
	}
	l := protocol.Landing{Into: into, Commit: commit, From: tip, Head: head, Mode: p.Mode, At: s.now(), Verified: how}
	raw, _ := json.Marshal(l)
	if _, err := s.st.SetLanded(ctx, j.ID, raw, fmt.Sprintf("landed on %s as %s (%s)", into, view.ShortSHA(commit), how), s.now()); err != nil {
		s.o.Log.Error().Err(err).Str("job", j.ID).Msg("land: record")
	}
	item.Outcome = protocol.LandLanded
	return item, nil
}

// startResolve starts a job on j's engine to merge head into the target
// and resolve the conflicts; it returns its id ("" when it could not start).
func (s *Server) startResolve(ctx context.Context, j *store.Job, into, head string, files []string) string {
	params, err := store.DecodeSpec(j.Spec)
	if err != nil {
		return ""
	}
	task := fmt.Sprintf("Merge commit %s (the work of hub job %s: %s) into this branch, which is %s, and resolve the conflicts in %s, keeping what both sides meant. Commit the merge.",
		head, j.ID, view.FirstLine(j.Task, 120), into, strings.Join(files, ", "))
	np := protocol.StartParams{Task: task, Repo: j.Repo, Base: into, Engine: j.Engine, Exec: params.Exec, Profile: params.Profile, Model: params.Model,
		Effort: params.Effort, Isolation: params.Isolation, Verify: params.Verify, VerifyTimeoutS: params.VerifyTimeoutS,
		Setup: params.Setup, Deps: params.Deps, Files: files, MaxUSD: params.MaxUSD, TimeoutS: params.TimeoutS}
	r, err := s.JobStart(ctx, np)
	if err != nil {
		s.o.Log.Warn().Err(err).Str("job", j.ID).Msg("land: could not start the follow-up")
		return ""
	}
	_, _ = s.st.AppendEvent(ctx, j.ID, protocol.EventNote, fmt.Sprintf("land: conflicts with %s; job %s started to resolve them", into, r.ID), nil, s.now())
	return r.ID
}

// landOrder sorts jobs fewest predicted conflicts first (with the target's
// tip and with the others of the batch), oldest first among equals.
func (s *Server) landOrder(ctx context.Context, repo *gitx.Repo, tip string, jobs []*store.Job) []*store.Job {
	n := map[string]int{}
	for i, a := range jobs {
		if files, _ := gitx.MergeConflicts(ctx, repo.Top, tip, a.HeadSHA); len(files) > 0 {
			n[a.ID] += len(jobs) // a conflict with the target is worse than any with a peer
		}
		for _, b := range jobs[i+1:] {
			if files, _ := gitx.MergeConflicts(ctx, repo.Top, a.HeadSHA, b.HeadSHA); len(files) > 0 {
				n[a.ID]++
				n[b.ID]++
			}
		}
	}
	out := slices.Clone(jobs)
	slices.SortStableFunc(out, func(a, b *store.Job) int {
		if d := n[a.ID] - n[b.ID]; d != 0 {
			return d
		}
		return int(a.Seq - b.Seq)
	})
	return out
}

// landLine says what a landing did in one line.
func landLine(r *protocol.LandResult, dry bool) string {
	count := map[string]int{}
	for _, it := range r.Jobs {
		count[it.Outcome]++
	}
	var parts []string
	for _, o := range []string{protocol.LandLanded, protocol.LandWould, protocol.LandAlready, protocol.LandConflict, protocol.LandRed, protocol.LandSkipped} {
		if count[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[o], o))
		}
	}
	line := strings.Join(parts, ", ")
	switch {
	case dry:
		line = "dry run: " + line + "; nothing moved"
	case r.Tip != r.From:
		line += fmt.Sprintf("; %s %s → %s", r.Into, view.ShortSHA(r.From), view.ShortSHA(r.Tip))
		if r.Checkout == "updated" {
			line += ", checkout updated"
		} else {
			line += " (not checked out: no file of yours changed)"
		}
	default:
		line += "; " + r.Into + " did not move"
	}
	return line
}

// unique keeps the first of each id, in order.
func unique(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
