package shim

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
	"github.com/hub-agents/hub/hub/store"
)

// prepareLine says in short what preparing made.
func (s *shim) prepareLine() string {
	if s.checkout == nil {
		return "no checkout: " + s.dir
	}
	line := "checkout " + s.checkout.Dir
	if s.setupTook > 0 {
		line += fmt.Sprintf("; setup %s", s.setupTook.Round(time.Millisecond))
	}
	return line
}

// prepare makes the job's checkout. A write job gets branch hub/<id>; a read
// job with a repo gets a detached checkout that is removed at the end. At
// the isolated levels the checkout is private (a git dir of its own that
// borrows the user's objects read-only); else a linked worktree.
func (s *shim) prepare(ctx context.Context) error {
	j := s.job
	if j.Repo == "" {
		s.dir = s.params.Cwd
		return nil
	}
	repo, err := gitx.Open(j.Repo)
	if err != nil {
		return err
	}
	s.repo = repo
	dirty := make(chan bool, 1)
	go func() {
		d, err := gitx.Dirty(ctx, repo.Top)
		dirty <- err == nil && d
	}()
	// What .worktreeinclude asks for, chosen (and a bad one refused)
	// before anything is made.
	plan, err := gitx.PlanInclude(ctx, repo, j.BaseSHA)
	if err != nil {
		return err
	}
	want := job.Checkout(s.o.Paths, j, repo)
	o := gitx.CheckoutOptions{Dir: want.Dir, Index: want.Index, Branch: j.Branch, Base: j.BaseSHA}
	if job.PrivateGit(j.Isolation) {
		// A private checkout writes nothing of the repository's but the
		// new branch (one atomic ref update): no lock to wait for.
		o.PrivateGitDir = s.o.Paths.JobGitDir(j.ID)
		s.checkout, err = gitx.MakeCheckout(ctx, repo, o)
	} else {
		var unlock func()
		if unlock, err = gitx.LockRepo(ctx, s.o.Paths.LocksDir(), repo); err != nil {
			return err
		}
		s.checkout, err = gitx.MakeCheckout(ctx, repo, o)
		unlock()
	}
	if err != nil {
		return err
	}
	wt := s.checkout.Dir
	s.dir = wt
	// From before the job's first command: what it changes in the
	// repository's shared config and hooks is put back (restoreShared).
	s.watchShared(ctx)
	// Into the checkout's folder, private or linked, before any worker
	// or sandbox starts; then its environment. Either failing leaves
	// nothing made: no worktree, no branch (no work was done on it).
	err = s.include(ctx, s.checkout, plan, true)
	if err == nil {
		err = s.setUp(ctx, s.checkout, j.BaseSHA, false)
	}
	if err != nil {
		removeCheckout(context.WithoutCancel(ctx), s.o.Paths, s.checkout)
		if j.Branch != "" {
			_ = gitx.DeleteBranch(context.WithoutCancel(ctx), repo, j.Branch)
		}
		s.checkout = nil
		return err
	}
	isDirty := <-dirty
	if err := s.st.Update(ctx, j.ID, func(r *store.Job) error {
		r.Worktree = wt
		if isDirty {
			r.Notes = append(r.Notes, job.NoteDirty)
		}
		return nil
	}); err != nil {
		return err
	}
	s.job.Worktree = wt
	if isDirty {
		s.job.Notes = append(s.job.Notes, job.NoteDirty)
	}
	return nil
}

// include copies the gitignored files .worktreeinclude selected (plan)
// into checkout c, and makes every value of an env file among them a key
// the job's redactor removes, before anything of the worker's is read.
// journal records what was copied and skipped, and why.
func (s *core) include(ctx context.Context, c *gitx.Checkout, plan *gitx.IncludePlan, journal bool) error {
	if plan == nil || (len(plan.Paths) == 0 && len(plan.Skipped) == 0) {
		return nil
	}
	for _, rel := range plan.Paths {
		if redact.EnvFileName(rel) {
			s.red.Add(envFileValues(filepath.Join(plan.Top, filepath.FromSlash(rel)))...)
		}
	}
	t0 := time.Now()
	res, err := c.CopyIncluded(plan)
	if err != nil {
		return err
	}
	if journal {
		skipped := append(slices.Clone(plan.Skipped), res.Skipped...)
		s.record(ctx, protocol.EventNote, s.red.String(includeLine(res.Copied, skipped)), map[string]any{
			"copied": bounded(res.Copied, 200), "copied_count": len(res.Copied),
			"skipped": bounded(skipped, 200), "skipped_count": len(skipped), "copy_ms": time.Since(t0).Milliseconds()})
	}
	return nil
}

// includeLine is the journal's line for what .worktreeinclude copied.
func includeLine(copied []string, skipped []gitx.IncludeSkip) string {
	var b strings.Builder
	switch len(copied) {
	case 0:
		b.WriteString("copied no gitignored files listed in .worktreeinclude")
	case 1:
		b.WriteString("copied 1 gitignored file listed in .worktreeinclude: ")
	default:
		fmt.Fprintf(&b, "copied %d gitignored files listed in .worktreeinclude: ", len(copied))
	}
	b.WriteString(strings.Join(bounded(copied, 10), ", "))
	if len(copied) > 10 {
		fmt.Fprintf(&b, ", … (%d more)", len(copied)-10)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "; skipped %d: ", len(skipped))
		for i, sk := range bounded(skipped, 5) {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s (%s)", sk.Path, sk.Why)
		}
		if len(skipped) > 5 {
			fmt.Fprintf(&b, "; … (%d more)", len(skipped)-5)
		}
	}
	return b.String()
}

func bounded[T any](s []T, n int) []T { return s[:min(n, len(s))] }

// envFileValues returns the values of an env file of the user's checkout:
// a regular file (through symlinks), read whole; none otherwise.
func envFileValues(p string) []string {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil
	}
	return redact.ReadEnvFile(real)
}
