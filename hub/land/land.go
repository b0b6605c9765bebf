// Package land lands ended jobs onto a target branch: each job's work
// integrated with the target's tip without a checkout, checked on that
// commit exactly as the job's verify ran (shim.Checker), and only then the
// target moved, by compare-and-swap. Everything a request could be refused
// for is checked before anything is made. The daemon's job/land handler
// only calls Lander.Land.
package land

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/errline"
)

// DefaultCheckTimeout bounds a landing check when neither the request nor
// the job says.
const DefaultCheckTimeout = 600 * time.Second

// Lander lands jobs. Every field is required.
type Lander struct {
	Store *store.Store
	Paths config.Paths
	Log   zerolog.Logger
	Now   func() time.Time
	// Check runs command on commit of ended job id as its verify ran
	// (shim.Check): nil error means it ran and exited 0.
	Check func(ctx context.Context, id, commit, command string, timeout time.Duration) (*protocol.Verify, error)
	// Start starts a job: the follow-up that resolves a conflict.
	Start func(ctx context.Context, p protocol.StartParams) (*protocol.StartResult, error)
}

// Kind is what sort of refusal an Error is.
type Kind int

const (
	Invalid    Kind = iota // a parameter is wrong: Field names it
	WrongState             // a job, branch or checkout is not in a state to land
	NotFound               // no job by that id (Err from the store)
	Internal               // git or the store failed
)

// An Error is a landing refused before anything moved: what is wrong
// (Msg), and what to do about it (Hint).
type Error struct {
	Kind  Kind
	Field string // Invalid: the parameter
	ID    string // NotFound: the id asked for
	Hint  string
	Msg   string
	Err   error // NotFound, Internal: the cause
}

func (e *Error) Error() string {
	if e.Msg == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

func invalid(field, hint, format string, args ...any) error {
	return &Error{Kind: Invalid, Field: field, Hint: hint, Msg: fmt.Sprintf(format, args...)}
}

func wrongState(hint, format string, args ...any) error {
	return &Error{Kind: WrongState, Hint: hint, Msg: fmt.Sprintf(format, args...)}
}

func notFound(id string, err error) error { return &Error{Kind: NotFound, ID: id, Err: err} }

func internal(err error) error { return &Error{Kind: Internal, Err: err} }

// Land lands p.IDs (each once, in the order given or, with OrderAuto,
// fewest predicted conflicts first) onto p.Into, one at a time, under the
// repository's lock. A job that conflicts or whose check is red is an item
// of the result and the batch goes on; the target moving under hub stops
// it. A refusal before anything moved is an *Error.
func (l *Lander) Land(ctx context.Context, p protocol.LandParams) (*protocol.LandResult, error) {
	plan, err := l.Plan(ctx, p)
	if err != nil {
		return nil, err
	}
	return l.Run(ctx, plan)
}

// A Plan is a landing checked as far as it can be without the
// repository's lock: its parameters and its target (Run reads its jobs
// again under the lock).
type Plan struct {
	P    protocol.LandParams // with its defaults filled
	Repo *gitx.Repo
	Into string
}

// Plan checks p: everything a landing can be refused for before it waits
// for the lock. A refusal is an *Error.
func (l *Lander) Plan(ctx context.Context, p protocol.LandParams) (*Plan, error) {
	if err := normalize(&p); err != nil {
		return nil, err
	}
	jobs, err := l.landable(ctx, p.IDs)
	if err != nil {
		return nil, err
	}
	repo, err := gitx.Open(jobs[0].Repo)
	if err != nil {
		return nil, wrongState("the repository is gone or unreadable; nothing can land", "%v", err)
	}
	into, err := target(ctx, repo, jobs, p.Into)
	if err != nil {
		return nil, err
	}
	return &Plan{P: p, Repo: repo, Into: into}, nil
}

// Run lands plan under the repository's lock. What it is refused for
// once it holds the lock (a job landed meanwhile, the target's checkout
// has changes) is an *Error, and nothing moved. Cancelling ctx stops the
// check in progress and skips the jobs not landed yet, each saying
// context.Cause(ctx); the jobs landed by then stay landed.
func (l *Lander) Run(ctx context.Context, plan *Plan) (*protocol.LandResult, error) {
	p, repo, into := plan.P, plan.Repo, plan.Into
	unlock, err := gitx.LockRepo(ctx, l.Paths.LocksDir(), repo)
	if err != nil {
		if ctx.Err() != nil {
			return nil, wrongState("land them again", "the landing stopped while it waited for %s's lock: %v", repo.Top, context.Cause(ctx))
		}
		return nil, internal(err)
	}
	defer unlock()
	// Another landing may have taken a job while this one waited for the lock.
	jobs, err := l.landable(ctx, p.IDs)
	if err != nil {
		return nil, err
	}
	checkouts, from, err := ready(ctx, repo, jobs, into, p.Mode)
	if err != nil {
		return nil, err
	}
	if p.Order == protocol.OrderAuto {
		jobs = order(ctx, repo, from, jobs)
	}
	return l.batch(ctx, repo, jobs, into, from, checkouts, p), nil
}

// normalize fills p's defaults and refuses what it cannot take.
func normalize(p *protocol.LandParams) error {
	if len(p.IDs) == 0 {
		return invalid("ids", "name the jobs to land", "ids is empty")
	}
	switch p.Order {
	case "":
		p.Order = protocol.OrderGiven
	case protocol.OrderGiven, protocol.OrderAuto:
	default:
		return invalid("order", "pass given or auto", "unknown order %q", p.Order)
	}
	switch p.Mode {
	case "":
		p.Mode = protocol.LandMerge
	case protocol.LandMerge, protocol.LandSquash, protocol.LandRebase:
	default:
		return invalid("mode", "pass merge, squash or rebase", "unknown mode %q", p.Mode)
	}
	if p.VerifyTimeoutS < 0 {
		return invalid("verify_timeout_s", "pass a number of seconds, or leave it out", "verify_timeout_s is negative")
	}
	return nil
}

// landable reads the jobs ids name and says why one cannot land, if one
// cannot: all must be ended write jobs of one repository, not landed yet,
// with commits.
func (l *Lander) landable(ctx context.Context, ids []string) ([]*store.Job, error) {
	jobs := make([]*store.Job, 0, len(ids))
	for _, id := range ids {
		j, err := l.Store.Job(ctx, id)
		if err != nil {
			return nil, notFound(id, err)
		}
		if err := Landable(j); err != nil {
			return nil, err
		}
		if len(jobs) > 0 && j.Repo != jobs[0].Repo {
			return nil, invalid("ids", "land each repository's jobs in a call of their own",
				"job %s is of %s and job %s of %s", jobs[0].ID, jobs[0].Repo, j.ID, j.Repo)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// Landable says why job j cannot land, if it cannot.
func Landable(j *store.Job) error {
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

// target is the branch to land on: into, or the branch every job started
// from; it must exist and be no job's own. Each job's branch must exist.
func target(ctx context.Context, repo *gitx.Repo, jobs []*store.Job, into string) (string, error) {
	for _, j := range jobs {
		if ok, err := gitx.BranchExists(ctx, repo, j.Branch); err != nil {
			return "", internal(err)
		} else if !ok {
			return "", wrongState("it was deleted (cleanup --delete-branch); nothing is left to land", "branch %s of job %s does not exist", j.Branch, j.ID)
		}
	}
	if into == "" {
		for _, j := range jobs {
			t := j.Target
			if t == "" {
				t = repo.BranchOf("HEAD")
			}
			if into != "" && t != into {
				return "", invalid("into", "pass into: the branch to land them all on",
					"job %s started from %s and job %s from %s", jobs[0].ID, into, j.ID, t)
			}
			into = t
		}
		if into == "" {
			return "", invalid("into", "pass into: the branch to land on", "the jobs started from a detached HEAD, so they have no target branch")
		}
	}
	into = strings.TrimPrefix(into, "refs/heads/")
	if ok, err := gitx.BranchExists(ctx, repo, into); err != nil {
		return "", invalid("into", "pass a local branch name, such as main", "%v", err)
	} else if !ok {
		return "", invalid("into", "pass a local branch that exists (git branch lists them)", "no branch %q in %s", into, repo.Top)
	}
	if slices.ContainsFunc(jobs, func(j *store.Job) bool { return j.Branch == into }) {
		return "", invalid("into", "pass the branch to land on, not a job's own", "%s is a job's own branch", into)
	}
	return into, nil
}

// ready checks the target under the lock: its checkouts (git lets a branch
// be checked out once; landing moves its files too, so it must have no
// changes of its own) and, for a rebase, that no job's branch has merges.
// It returns the checkouts and the target's tip.
func ready(ctx context.Context, repo *gitx.Repo, jobs []*store.Job, into, mode string) ([]string, string, error) {
	checkouts, err := gitx.CheckedOut(ctx, repo, into)
	if err != nil {
		return nil, "", internal(err)
	}
	for _, dir := range checkouts {
		if dirty, err := gitx.TrackedChanges(ctx, dir); err != nil {
			return nil, "", internal(err)
		} else if dirty {
			return nil, "", wrongState("commit or stash your changes in "+dir+", or land into another branch",
				"%s is checked out in %s with uncommitted changes; hub would move it under them", into, dir)
		}
	}
	from, err := repo.Resolve("refs/heads/" + into)
	if err != nil {
		return nil, "", internal(err)
	}
	if mode == protocol.LandRebase {
		for _, j := range jobs {
			if merges, err := gitx.HasMerges(ctx, repo, from, "refs/heads/"+j.Branch); err != nil {
				return nil, "", internal(err)
			} else if merges {
				return nil, "", wrongState("land it with mode merge or squash; a rebase would drop what its merges brought",
					"branch %s of job %s has merge commits", j.Branch, j.ID)
			}
		}
	}
	return checkouts, from, nil
}

// batch lands jobs one at a time from the target's tip from; the first
// error (the target moved under hub, or git failed) skips the rest.
func (l *Lander) batch(ctx context.Context, repo *gitx.Repo, jobs []*store.Job, into, from string, checkouts []string, p protocol.LandParams) *protocol.LandResult {
	res := &protocol.LandResult{Into: into, From: from, Tip: from}
	stopped := ""
	for _, j := range jobs {
		if stopped != "" {
			res.Jobs = append(res.Jobs, protocol.LandItem{ID: j.ID, Outcome: protocol.LandSkipped, Reason: stopped})
			continue
		}
		if ctx.Err() != nil {
			stopped = "not tried: " + context.Cause(ctx).Error()
			res.Jobs = append(res.Jobs, protocol.LandItem{ID: j.ID, Outcome: protocol.LandSkipped, Reason: stopped})
			continue
		}
		item, err := l.one(ctx, repo, j, into, res.Tip, checkouts, p)
		if err == nil && item.Outcome == protocol.LandRed && ctx.Err() != nil {
			// Its check was stopped, not red: nothing moved for it.
			err = fmt.Errorf("its check was stopped: %w", context.Cause(ctx))
		}
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
	res.Line = Line(res, p.DryRun)
	return res
}

// one integrates job j with the target's tip, checks the commit, and moves
// the target. An error means the batch must stop (the target moved under
// hub, or git failed); a job that does not land is an item.
func (l *Lander) one(ctx context.Context, repo *gitx.Repo, j *store.Job, into, tip string, checkouts []string, p protocol.LandParams) (protocol.LandItem, error) {
	item := protocol.LandItem{ID: j.ID}
	head, err := repo.Resolve("refs/heads/" + j.Branch)
	if err != nil {
		return item, fmt.Errorf("read %s: %w", j.Branch, err)
	}
	// The branch is the work: a commit on it after the job ended (by the
	// user) lands with it, and the record says which commit.
	j.HeadSHA = head
	if ok, err := gitx.IsAncestor(ctx, repo.Top, head, tip); err != nil {
		return item, err
	} else if ok {
		l.already(ctx, j, into, tip, head, p.DryRun, &item)
		return item, nil
	}
	commit, files, err := integrate(ctx, repo, l.Paths.LandTree(j.ID), j, tip, head, p.Mode)
	switch {
	case errors.Is(err, gitx.ErrHasMerges):
		item.Outcome, item.Reason = protocol.LandSkipped, j.Branch+" has merge commits, which a rebase would drop: land it with mode merge or squash"
		return item, nil
	case err != nil:
		return item, fmt.Errorf("integrate %s with %s: %w", j.Branch, into, err)
	case len(files) > 0:
		item.Outcome, item.Files = protocol.LandConflict, files
		item.Reason = fmt.Sprintf("%s conflicts with %s in %s", j.Branch, into, view.PathList(files, 5))
		if p.Resolve && !p.DryRun {
			item.FollowUp = l.startResolve(ctx, j, into, head, files)
		}
		return item, nil
	}
	item.Commit = commit
	if p.DryRun {
		item.Outcome = protocol.LandWould
		return item, nil
	}
	how, red := l.check(ctx, j, commit, p, &item)
	if red {
		return item, nil
	}
	// Checked: the move and its record are not cut short (a git killed
	// mid-move would leave the branch's lock, or a checkout half moved).
	ctx = context.WithoutCancel(ctx)
	if err := move(ctx, repo, j, into, commit, tip, checkouts); err != nil {
		return item, err
	}
	rec := protocol.Landing{Into: into, Commit: commit, From: tip, Head: head, Mode: p.Mode, At: l.Now(), Verified: how}
	raw, _ := json.Marshal(rec)
	if _, err := l.Store.SetLanded(ctx, j.ID, raw, fmt.Sprintf("landed on %s as %s (%s)", into, view.ShortSHA(commit), how), l.Now()); err != nil {
		l.Log.Error().Err(err).Str("job", j.ID).Msg("land: record")
	}
	item.Outcome = protocol.LandLanded
	return item, nil
}

// already records a job whose work the target already holds: merged by
// hand, or landed by a hub that stopped before it wrote the record.
func (l *Lander) already(ctx context.Context, j *store.Job, into, tip, head string, dry bool, item *protocol.LandItem) {
	item.Outcome, item.Commit, item.Reason = protocol.LandAlready, tip, into+" already holds "+view.ShortSHA(head)
	if dry {
		return
	}
	rec := protocol.Landing{Into: into, Commit: tip, From: tip, Head: head, At: l.Now(),
		Verified: "not checked by hub: " + into + " already held it when hub land looked"}
	raw, _ := json.Marshal(rec)
	_, _ = l.Store.SetLanded(ctx, j.ID, raw, fmt.Sprintf("found on %s already (%s)", into, view.ShortSHA(tip)), l.Now())
}

// integrate makes the commit that lands head on tip: a merge, one squashed
// commit, or (rebase) head's commits replayed in a scratch worktree at dir.
// files lists the conflicts, when there are some.
func integrate(ctx context.Context, repo *gitx.Repo, dir string, j *store.Job, tip, head, mode string) (string, []string, error) {
	if mode == protocol.LandRebase {
		return gitx.Replay(ctx, repo, dir, tip, head, gitx.HubIdentity)
	}
	verb := "Land"
	if mode == protocol.LandMerge {
		verb = "Merge"
	}
	msg := fmt.Sprintf("%s hub job %s: %s\n\nHub-Job: %s\n", verb, j.ID, view.FirstLine(j.Task, 72), j.ID)
	return gitx.Integrate(ctx, repo, tip, head, mode == protocol.LandSquash, msg, gitx.HubIdentity)
}

// check runs the job's verify and the batch's on the integrated commit.
// It returns how the commit was checked, or red when a check failed (the
// item then says why).
func (l *Lander) check(ctx context.Context, j *store.Job, commit string, p protocol.LandParams, item *protocol.LandItem) (how string, red bool) {
	params, _ := store.DecodeSpec(j.Spec)
	timeout := time.Duration(p.VerifyTimeoutS) * time.Second
	if timeout == 0 && params.VerifyTimeoutS > 0 {
		timeout = time.Duration(params.VerifyTimeoutS) * time.Second
	}
	if timeout == 0 {
		timeout = DefaultCheckTimeout
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
		v, err := l.Check(ctx, j.ID, commit, c.command, timeout)
		*c.into = v
		if err != nil {
			item.Outcome = protocol.LandRed
			item.Reason = fmt.Sprintf("%s on the integrated commit %s: %s", c.what, view.ShortSHA(commit), err)
			if v != nil && v.OutputTail != "" {
				item.Reason += ": " + view.FirstLine(errline.Telling(v.OutputTail), 160)
			}
			return "", true
		}
		verified = append(verified, fmt.Sprintf("`%s` exit 0", view.FirstLine(c.command, 60)))
	}
	if len(verified) == 0 {
		return "not checked: the job has no verify and the batch none", false
	}
	return strings.Join(verified, ", ") + " on " + view.ShortSHA(commit), false
}

// move moves the target to commit, only from the tip it was made on: by a
// fast-forward in each checkout of it (so its files follow), or by
// compare-and-swap of the branch when it is checked out nowhere.
func move(ctx context.Context, repo *gitx.Repo, j *store.Job, into, commit, tip string, checkouts []string) error {
	if now, err := repo.Resolve("refs/heads/" + into); err != nil || now != tip {
		return fmt.Errorf("%s moved under hub (to %s) while it checked %s; land the rest again", into, view.ShortSHA(now), j.ID)
	}
	if len(checkouts) == 0 {
		if err := gitx.MoveBranch(ctx, repo, into, commit, tip, "hub land "+j.ID); err != nil {
			return fmt.Errorf("move %s: %w", into, err)
		}
		return nil
	}
	for _, dir := range checkouts {
		if dirty, err := gitx.TrackedChanges(ctx, dir); err != nil || dirty {
			return fmt.Errorf("%s's checkout %s changed while hub checked %s; nothing moved: commit or stash, then land the rest again", into, dir, j.ID)
		}
		if err := gitx.FastForward(ctx, dir, commit); err != nil {
			return err
		}
	}
	return nil
}

// startResolve starts a job on j's engine to merge head into the target
// and resolve the conflicts; it returns its id ("" when it could not start).
func (l *Lander) startResolve(ctx context.Context, j *store.Job, into, head string, files []string) string {
	params, err := store.DecodeSpec(j.Spec)
	if err != nil {
		return ""
	}
	task := fmt.Sprintf("Merge commit %s (the work of hub job %s: %s) into this branch, which is %s, and resolve the conflicts in %s, keeping what both sides meant. Commit the merge.",
		head, j.ID, view.FirstLine(j.Task, 120), into, strings.Join(files, ", "))
	np := protocol.StartParams{Task: task, Repo: j.Repo, Base: into, Engine: j.Engine, Exec: params.Exec, Profile: params.Profile, Model: params.Model,
		Effort: params.Effort, Isolation: params.Isolation, Verify: params.Verify, VerifyTimeoutS: params.VerifyTimeoutS,
		Setup: params.Setup, Deps: params.Deps, Files: files, MaxUSD: params.MaxUSD, TimeoutS: params.TimeoutS}
	r, err := l.Start(ctx, np)
	if err != nil {
		l.Log.Warn().Err(err).Str("job", j.ID).Msg("land: could not start the follow-up")
		return ""
	}
	_, _ = l.Store.AppendEvent(ctx, j.ID, protocol.EventNote, fmt.Sprintf("land: conflicts with %s; job %s started to resolve them", into, r.ID), nil, l.Now())
	return r.ID
}

// order sorts jobs fewest predicted conflicts first (with the target's
// tip and with the others of the batch), oldest first among equals.
func order(ctx context.Context, repo *gitx.Repo, tip string, jobs []*store.Job) []*store.Job {
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

// Line says what a landing did in one line.
func Line(r *protocol.LandResult, dry bool) string {
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
