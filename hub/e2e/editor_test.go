//go:build unix

package e2e

import (
	"encoding/base64"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestEditorReads: what an editor reads of a job — the question
// notifications, the changed files and commits, each file at base and head
// (text, binary, added, deleted), the summary — and merging the branch.
func TestEditorReads(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "edit files", Repo: repo, Engine: "exec",
		Exec: `printf 'fixed\n' > bug.txt; rm README.md; printf '\000\001\002' > blob.bin; ans=$(hub ask "Which word?"); printf '%s\n' "$ans" > added.txt`})
	st := w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State == protocol.StateNeedsInput })

	sum := hubtest.Daemon(t, c).Summary(ctx, protocol.Empty{})
	if sum.NeedsInput != 1 || sum.Running != 0 || sum.Month == "" {
		t.Errorf("summary while the job asks: %+v", sum)
	}
	hubtest.Daemon(t, c).JobReply(ctx, protocol.ReplyParams{ID: r.ID, Text: "hello"})
	w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State == protocol.StateSucceeded })

	// The question came as question/asked, then question/answered, with the question's id.
	w.mu.Lock()
	notices := slices.Clone(w.notices)
	w.mu.Unlock()
	if len(notices) != 2 || notices[0].method != protocol.NotifyQuestionAsked || notices[1].method != protocol.NotifyQuestionAnswered {
		t.Fatalf("question notifications: %+v", notices)
	}
	if q := notices[0].asked; q.JobID != r.ID || q.Question.ID != st.Question.ID || q.Question.Text != "Which word?" {
		t.Errorf("question/asked: %+v, want the question of %+v", q, st.Question)
	}
	if a := notices[1].answer; a.JobID != r.ID || a.QuestionID != st.Question.ID || a.Expired {
		t.Errorf("question/answered: %+v", a)
	}

	fs := hubtest.Daemon(t, c).JobFiles(ctx, protocol.FilesParams{ID: r.ID})
	tip := hubtest.Git(t, repo, "rev-parse", "hub/"+r.ID)
	if fs.Tip != tip || fs.Base != r.Base || len(fs.Commits) == 0 {
		t.Fatalf("files: head %s base %s commits %d; want head %s base %s", fs.Tip, fs.Base, len(fs.Commits), tip, r.Base)
	}
	changes := map[string]protocol.FileChange{}
	for _, f := range fs.Files {
		changes[f.Path] = f
	}
	for path, want := range map[string]string{"bug.txt": "modified", "README.md": "deleted", "added.txt": "added", "blob.bin": "added"} {
		if changes[path].Change != want {
			t.Errorf("%s: change %q, want %q (files %+v)", path, changes[path].Change, want, fs.Files)
		}
	}
	if changes["blob.bin"].Added != -1 {
		t.Errorf("blob.bin counts %d added lines; a binary file counts -1", changes["blob.bin"].Added)
	}

	read := func(rev, path string) protocol.FileResult {
		return hubtest.Daemon(t, c).JobFile(ctx, protocol.FileParams{ID: r.ID, Rev: rev, Path: path})
	}
	if f := read("base", "bug.txt"); !f.Exists || f.Content != "broken\n" || f.Commit != r.Base || f.Encoding != "utf8" {
		t.Errorf("base bug.txt: %+v", f)
	}
	if f := read("tip", "bug.txt"); f.Content != "fixed\n" || f.Commit != tip || f.Size != 6 {
		t.Errorf("head bug.txt: %+v", f)
	}
	if f := read("tip", "added.txt"); f.Content != "hello\n" {
		t.Errorf("head added.txt holds %q; the answer should be in it", f.Content)
	}
	if f := read("base", "added.txt"); f.Exists || f.Content != "" {
		t.Errorf("base added.txt should not exist: %+v", f)
	}
	if f := read("tip", "README.md"); f.Exists {
		t.Errorf("head README.md should not exist: %+v", f)
	}
	if f := read("head", "./sub/../blob.bin"); !f.Binary || f.Encoding != "base64" || f.Path != "blob.bin" {
		t.Errorf("head blob.bin: %+v", f)
	} else if b, _ := base64.StdEncoding.DecodeString(f.Content); string(b) != "\x00\x01\x02" {
		t.Errorf("blob.bin decodes to %q", b)
	}

	// Bad reads say what to pass.
	for _, bad := range []struct {
		p     protocol.FileParams
		code  int64
		field string
	}{
		{protocol.FileParams{ID: r.ID, Rev: "head", Path: "../outside"}, protocol.CodeInvalidParams, "path"},
		{protocol.FileParams{ID: r.ID, Rev: "head", Path: "/etc/passwd"}, protocol.CodeInvalidParams, "path"},
		{protocol.FileParams{ID: r.ID, Rev: "head", Path: ""}, protocol.CodeInvalidParams, "path"},
		{protocol.FileParams{ID: r.ID, Rev: "HEAD", Path: "bug.txt"}, protocol.CodeInvalidParams, "rev"},
		{protocol.FileParams{ID: "nope", Rev: "head", Path: "bug.txt"}, protocol.CodeNotFound, ""},
	} {
		_, err := c.Daemon().JobFile(ctx, bad.p)
		if code := client.Code(err); code != bad.code || errData(err).Field != bad.field || errData(err).Hint == "" {
			t.Errorf("job/file %+v: got %v (code %d, data %+v), want code %d field %q with a hint", bad.p, err, code, errData(err), bad.code, bad.field)
		}
	}

	// Merge into the user's checkout, then again: already merged.
	m := hubtest.Daemon(t, c).JobMerge(ctx, protocol.MergeParams{ID: r.ID})
	if m.Into != "main" || m.Branch != "hub/"+r.ID || m.AlreadyMerged || m.Commit != hubtest.Git(t, repo, "rev-parse", "HEAD") {
		t.Errorf("merge: %+v", m)
	}
	if got := readFile(t, repo+"/added.txt"); got != "hello" {
		t.Errorf("after the merge added.txt holds %q", got)
	}
	if parents := hubtest.Git(t, repo, "rev-list", "--parents", "-n1", "HEAD"); len(parents) < 3*40 {
		t.Errorf("the merge should be a merge commit: %s", parents)
	}
	if m2 := hubtest.Daemon(t, c).JobMerge(ctx, protocol.MergeParams{ID: r.ID}); !m2.AlreadyMerged || m2.Commit != m.Commit {
		t.Errorf("second merge: %+v", m2)
	}
}

// TestMergeRefusals: a merge that would conflict, into a dirty or detached
// checkout, of a job still running or of a read job is refused with what to
// do, and leaves the checkout exactly as it was.
func TestMergeRefusals(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 60*time.Second)
	c := w.connect(ctx)
	repo := sampleRepo(t, "repo")
	merge := func(id string) error {
		_, err := c.Daemon().JobMerge(ctx, protocol.MergeParams{ID: id})
		return err
	}

	r := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "change bug", Repo: repo, Engine: "exec",
		Exec: `printf 'from the job\n' > bug.txt; printf 'job\n' > other.txt`})
	w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() })
	// Meanwhile the user changed the same line on main.
	writeFile(t, repo+"/bug.txt", "from the user\n")
	hubtest.Git(t, repo, "commit", "-qam", "user edit")
	before := hubtest.Git(t, repo, "rev-parse", "HEAD")

	err := merge(r.ID)
	assertErr(t, err, protocol.CodeConflict, "conflict")
	if d := errData(err); !slices.Equal(d.Files, []string{"bug.txt"}) || d.Hint == "" {
		t.Errorf("conflict data: %+v, want files [bug.txt] and a hint", d)
	}
	if after := hubtest.Git(t, repo, "rev-parse", "HEAD"); after != before {
		t.Errorf("a refused merge moved HEAD from %s to %s", before, after)
	}
	if s := hubtest.Git(t, repo, "status", "--porcelain"); s != "" {
		t.Errorf("a refused merge left changes: %s", s)
	}

	// A dirty checkout: refused before anything is tried.
	clean := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "new file", Repo: repo, Engine: "exec",
		Exec: `printf 'x\n' > fresh.txt`})
	w.until(ctx, clean.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() })
	writeFile(t, repo+"/README.md", "# edited, not committed\n")
	assertErr(t, merge(clean.ID), protocol.CodeWrongState, "uncommitted")
	hubtest.Git(t, repo, "checkout", "--", "README.md")

	// A detached HEAD has no branch to merge into.
	hubtest.Git(t, repo, "checkout", "-q", "--detach")
	assertErr(t, merge(clean.ID), protocol.CodeWrongState, "detached")
	hubtest.Git(t, repo, "checkout", "-q", "main")

	// A job still running (asking) cannot be merged.
	asking := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "ask", Repo: repo, Engine: "exec",
		Exec: `hub ask "go on?" > answer.txt`})
	w.until(ctx, asking.ID, func(s protocol.JobStatus) bool { return s.State == protocol.StateNeedsInput })
	assertErr(t, merge(asking.ID), protocol.CodeWrongState, "needs_input")
	hubtest.Daemon(t, c).JobReply(ctx, protocol.ReplyParams{ID: asking.ID, Text: "yes"})

	// A read job has no branch, and an unknown job is not found.
	read := hubtest.Daemon(t, c).JobStart(ctx, protocol.StartParams{Task: "look", Repo: repo, Kind: protocol.KindRead,
		Engine: "exec", Exec: "cat bug.txt"})
	w.until(ctx, read.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() })
	assertErr(t, merge(read.ID), protocol.CodeWrongState, "read job")
	_, err = c.Daemon().JobFiles(ctx, protocol.FilesParams{ID: read.ID})
	assertErr(t, err, protocol.CodeWrongState, "read job")
	assertErr(t, merge("nope"), protocol.CodeNotFound, "unknown job")

	// After all that, the clean job still merges.
	m := hubtest.Daemon(t, c).JobMerge(ctx, protocol.MergeParams{ID: clean.ID})
	if m.AlreadyMerged || readFile(t, repo+"/fresh.txt") != "x" {
		t.Errorf("clean merge: %+v", m)
	}
	w.until(ctx, asking.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() })
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
