package job

import (
	"context"
	"strings"

	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
)

// CommitFailed is in the error of a job whose ending hub could not commit
// the worker's changes of: they stay in its worktree, uncommitted, from
// before the job ended.
const CommitFailed = "committing the worker's changes failed"

// CommitFailedIn reports whether a job's error says hub could not commit
// its worker's changes.
func CommitFailedIn(jobError string) bool { return strings.Contains(jobError, CommitFailed) }

// Changes lists the files and commits of base..head in repo, as the
// protocol shows them; a commit hub made for job id is marked ByHub.
func Changes(ctx context.Context, repo, id, base, head string) ([]protocol.FileChange, []protocol.Commit, error) {
	files, err := gitx.DiffFiles(ctx, repo, base, head)
	if err != nil {
		return nil, nil, err
	}
	commits, err := gitx.Log(ctx, repo, base, head)
	if err != nil {
		return nil, nil, err
	}
	fs := make([]protocol.FileChange, 0, len(files))
	for _, f := range files {
		fs = append(fs, protocol.FileChange{Path: f.Path, OldPath: f.OldPath, Change: f.Change, Added: f.Added, Deleted: f.Deleted})
	}
	cs := make([]protocol.Commit, 0, len(commits))
	for _, c := range commits {
		cs = append(cs, protocol.Commit{SHA: c.SHA, Subject: c.Subject, Author: c.Author,
			ByHub: c.Trailers["Hub-Job"] == id, Salvage: strings.EqualFold(c.Trailers["Hub-Salvage"], "true")})
	}
	return fs, cs, nil
}
