package daemon

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
)

// What an editor reads and does beyond the job tools: changed files, file
// contents at base and head, merging, and the status-bar summary.

// jobRepo loads a write job and opens its repository.
func (s *Server) jobRepo(ctx context.Context, id string) (*store.Job, *gitx.Repo, error) {
	j, err := s.st.Job(ctx, id)
	if err != nil {
		return nil, nil, notFound(id, err)
	}
	if j.Kind != protocol.KindWrite || j.Repo == "" {
		return nil, nil, wrongState("read jobs change no files; read their answer with job/result", "job %s is a %s job: it has no branch", j.ID, j.Kind)
	}
	repo, err := gitx.Open(j.Repo)
	if err != nil {
		return nil, nil, rpc.Errorf(protocol.CodeUnavailable, "if the repository moved, its jobs' branches moved with it; open them there with git", "repo %s of job %s: %v", j.Repo, j.ID, err)
	}
	return j, repo, nil
}

// head is the tip of the job's branch now, or the head it recorded when the
// branch is gone, or "" before the job has a branch.
func (s *Server) head(j *store.Job, repo *gitx.Repo) string {
	if j.Branch != "" {
		if sha, err := repo.Resolve("refs/heads/" + j.Branch); err == nil {
			return sha
		}
	}
	return j.HeadSHA
}

func (s *Server) JobFiles(ctx context.Context, p protocol.FilesParams) (*protocol.FilesResult, error) {
	j, repo, err := s.jobRepo(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	res := &protocol.FilesResult{ID: j.ID, Base: j.BaseSHA, Files: []protocol.FileChange{}, Commits: []protocol.Commit{}}
	res.Tip = s.head(j, repo)
	res.OldHead = res.Tip
	if res.Tip == "" || res.Base == "" || res.Tip == res.Base {
		return res, nil
	}
	if res.Files, res.Commits, err = job.Changes(ctx, repo.Top, j.ID, res.Base, res.Tip); err != nil {
		return nil, internal(err)
	}
	red := s.secrets()
	for i := range res.Commits {
		res.Commits[i].Subject = red.String(res.Commits[i].Subject)
	}
	return res, nil
}

func (s *Server) JobFile(ctx context.Context, p protocol.FileParams) (*protocol.FileResult, error) {
	clean, err := repoPath(p.Path)
	if err != nil {
		return nil, err
	}
	rev := p.Rev
	switch rev {
	case protocol.RevBase, protocol.RevTip:
	case protocol.RevHead:
		rev = protocol.RevTip // its name before 0.2
	default:
		return nil, invalid("rev", `pass "base" or "tip"`, "unknown rev %q", p.Rev)
	}
	j, repo, err := s.jobRepo(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	res := &protocol.FileResult{ID: j.ID, Rev: p.Rev, Path: clean, Encoding: protocol.EncodingUTF8}
	res.Commit = j.BaseSHA
	if rev == protocol.RevTip {
		if res.Commit = s.head(j, repo); res.Commit == "" {
			res.Commit = j.BaseSHA // no branch yet: head is where it starts
		}
	}
	if res.Commit == "" {
		return res, nil
	}
	data, size, exists, err := gitx.ReadFile(repo, res.Commit, clean, protocol.MaxFileBytes)
	switch {
	case errors.Is(err, gitx.ErrTooBig):
		return nil, rpc.Errorf(protocol.CodeRefused, "open it from the branch "+j.Branch+" with git", "%v", err)
	case err != nil:
		return nil, internal(err)
	}
	res.Exists, res.Size = exists, size
	// The content is redacted like everything else hub shows: a key the
	// worker wrote into a file (or one already in the repository) is not
	// handed to an editor or a supervisor. Size stays the blob's own.
	red := s.secrets()
	if utf8.Valid(data) && !strings.ContainsRune(string(data), 0) {
		res.Content = red.String(string(data))
	} else {
		res.Binary, res.Encoding = true, protocol.EncodingBase64
		res.Content = base64.StdEncoding.EncodeToString([]byte(red.String(string(data))))
	}
	return res, nil
}

// repoPath checks a path relative to a repository's top.
func repoPath(p string) (string, error) {
	const hint = "pass a path relative to the repository's top, with forward slashes, as job/files lists it"
	switch c := path.Clean(p); {
	case p == "":
		return "", invalid("path", hint, "path is empty")
	case strings.ContainsRune(p, 0), strings.Contains(p, "\\"):
		return "", invalid("path", hint, "path %q has a NUL or a backslash", p)
	case path.IsAbs(p), c == "..", strings.HasPrefix(c, "../"), c == ".":
		return "", invalid("path", hint, "path %q is not inside the repository", p)
	default:
		return c, nil
	}
}

func (s *Server) JobMerge(ctx context.Context, p protocol.MergeParams) (*protocol.MergeResult, error) {
	j, repo, err := s.jobRepo(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	if !j.State.Terminal() {
		return nil, wrongState("wait for it to end (or stop it), then merge", "job %s is %s; only an ended job's branch can be merged", j.ID, j.State)
	}
	if j.Branch == "" {
		return nil, wrongState("the job ended before it had a branch: there is nothing to merge", "job %s has no branch", j.ID)
	}
	if ok, err := gitx.BranchExists(ctx, repo, j.Branch); err != nil {
		return nil, internal(err)
	} else if !ok {
		return nil, wrongState("it was deleted (cleanup --delete-branch); nothing is left to merge", "branch %s of job %s does not exist", j.Branch, j.ID)
	}
	// The user's own checkout: its top is the repository's main work tree.
	top := j.Repo
	unlock, err := gitx.LockRepo(ctx, s.o.Paths.LocksDir(), repo)
	if err != nil {
		return nil, internal(err)
	}
	defer unlock()
	into, err := gitx.CurrentBranch(ctx, top)
	if errors.Is(err, gitx.ErrDetached) {
		return nil, wrongState("check out the branch to merge into, then merge again", "%s is on a detached HEAD", top)
	} else if err != nil {
		return nil, internal(err)
	}
	if dirty, err := gitx.TrackedChanges(ctx, top); err != nil {
		return nil, internal(err)
	} else if dirty {
		return nil, wrongState("commit or stash your changes in "+top+", then merge again",
			"%s has uncommitted changes; hub merges only into a clean checkout", top)
	}
	msg := fmt.Sprintf("Merge hub job %s: %s\n\nHub-Job: %s", j.ID, view.FirstLine(j.Task, 72), j.ID)
	head, already, err := gitx.Merge(ctx, top, j.Branch, msg, gitx.HubIdentity)
	var conflict *gitx.ConflictError
	switch {
	case errors.As(err, &conflict):
		e := rpc.Errorf(protocol.CodeConflict, "resolve it by hand: git merge "+j.Branch+" in "+top, "%v; nothing was changed", err)
		e.SetError(protocol.ErrorData{Hint: "resolve it by hand: git merge " + j.Branch + " in " + top, Files: conflict.Files})
		return nil, e
	case err != nil:
		return nil, rpc.Errorf(protocol.CodeRefused, "see git's message; the merge was aborted and your checkout left as it was", "merge %s into %s: %v", j.Branch, into, err)
	}
	if !already {
		_, _ = s.st.AppendEvent(ctx, j.ID, protocol.EventNote, fmt.Sprintf("merged into %s as %s", into, view.ShortSHA(head)), nil, s.now())
		s.poke()
	}
	return &protocol.MergeResult{ID: j.ID, Branch: j.Branch, Into: into, Commit: head, AlreadyMerged: already}, nil
}

func (s *Server) Summary(ctx context.Context, _ protocol.Empty) (*protocol.SummaryResult, error) {
	set, err := s.settings()
	if err != nil {
		return nil, err
	}
	n, err := s.st.CountStates(ctx)
	if err != nil {
		return nil, internal(err)
	}
	month := s.now().Format("2006-01")
	tot, err := s.st.MonthTotals(ctx, month)
	if err != nil {
		return nil, internal(err)
	}
	return &protocol.SummaryResult{
		Running:    n[protocol.StatePreparing] + n[protocol.StateRunning] + n[protocol.StateVerifying],
		NeedsInput: n[protocol.StateNeedsInput], Queued: n[protocol.StateQueued],
		Month: month, SpentUSD: tot.ChargedMicros.USD(), ReservedUSD: tot.ReservedMicros.USD(),
		MonthlyCapUSD: set.MonthlyCapUSD,
	}, nil
}
