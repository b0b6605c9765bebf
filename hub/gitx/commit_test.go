package gitx

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCommitAllRunsNoHooks(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, t.TempDir(), nil)
	marks := t.TempDir()
	hooks := []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-index-change"}
	for _, h := range hooks {
		writeFile(t, filepath.Join(repo, ".git", "hooks", h), "#!/bin/sh\ntouch '"+filepath.Join(marks, h)+"'\nexit 1\n", 0o755)
	}
	// A hooksPath in the repo's own config is overridden too.
	custom := filepath.Join(t.TempDir(), "hooks")
	writeFile(t, filepath.Join(custom, "pre-commit"), "#!/bin/sh\ntouch '"+filepath.Join(marks, "custom")+"'\nexit 1\n", 0o755)
	gitT(t, repo, "config", "core.hooksPath", custom)

	writeFile(t, filepath.Join(repo, "x.txt"), "x\n", 0o644)
	sha, committed, err := CommitAll(ctx, repo, "x", hubIdentity)
	if err != nil || !committed {
		t.Fatalf("CommitAll = %q, %v, %v", sha, committed, err)
	}
	if ents, _ := os.ReadDir(marks); len(ents) != 0 {
		var ran []string
		for _, e := range ents {
			ran = append(ran, e.Name())
		}
		t.Errorf("hooks ran during CommitAll: %v", ran)
	}
}

func TestCommitAllFirstCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	if sha, committed, err := CommitAll(ctx, dir, "nothing yet", hubIdentity); err != nil || committed || sha != "" {
		t.Errorf("CommitAll in an empty repo = %q, %v, %v; want \"\", false, nil", sha, committed, err)
	}
	writeFile(t, filepath.Join(dir, "greet.sh"), "echo Helo\n", 0o755)
	sha, committed, err := CommitAll(ctx, dir, "A greeting with a typo", Identity{Name: "demo", Email: "demo@localhost"})
	if err != nil || !committed || len(sha) != 40 {
		t.Fatalf("first CommitAll = %q, %v, %v", sha, committed, err)
	}
	if got := gitT(t, dir, "log", "--format=%an <%ae> %cn <%ce> %s"); got != "demo <demo@localhost> demo <demo@localhost> A greeting with a typo" {
		t.Errorf("log = %q", got)
	}
	if _, err := Open(dir); err != nil {
		t.Errorf("Open after the first commit: %v", err)
	}
}

// TestHostileConfig runs the read and commit paths under a global git config
// that changes every output hub parses and turns on everything hub must not
// run; the results must be the same as with no config.
func TestHostileConfig(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, filepath.Join(t.TempDir(), "repo"), map[string]string{
		"sub/a.txt": "a\n", "old.txt": strings.Repeat("unchanging line\n", 10), "bin": "\x00x",
	})
	base := gitT(t, repo, "rev-parse", "HEAD")
	marker := filepath.Join(t.TempDir(), "ran")
	hooks := filepath.Join(t.TempDir(), "hooks")
	for _, h := range []string{"pre-commit", "post-commit", "commit-msg"} {
		writeFile(t, filepath.Join(hooks, h), "#!/bin/sh\ntouch '"+marker+"'\nexit 1\n", 0o755)
	}
	fsmon := filepath.Join(t.TempDir(), "fsmonitor")
	writeFile(t, fsmon, "#!/bin/sh\ntouch '"+marker+"'\nexit 1\n", 0o755)

	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	writeFile(t, filepath.Join(home, ".gitconfig"), `[user]
	useConfigOnly = true
[core]
	hooksPath = `+hooks+`
	fsmonitor = `+fsmon+`
	quotePath = true
[commit]
	gpgSign = true
	cleanup = strip
	verbose = true
[gpg]
	program = /bin/false
[color]
	ui = always
[diff]
	external = /bin/false
	noprefix = true
	relative = true
	renames = false
	mnemonicPrefix = true
[log]
	showSignature = true
	decorate = full
[status]
	showUntrackedFiles = no
	branch = true
	short = true
[format]
	pretty = oneline
`, 0o644)

	if err := os.Rename(filepath.Join(repo, "old.txt"), filepath.Join(repo, "new.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "sub", "a.txt"), "a\nb\n", 0o644)
	writeFile(t, filepath.Join(repo, "sub", "untracked ü.txt"), "u\n", 0o644)

	st, err := Status(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus := []StatusEntry{
		{Path: "old.txt", X: ' ', Y: 'D'},
		{Path: "sub/a.txt", X: ' ', Y: 'M'},
		{Path: "new.txt", X: '?', Y: '?'},
		{Path: "sub/untracked ü.txt", X: '?', Y: '?'},
	}
	if diff := cmp.Diff(wantStatus, st); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}

	msg := "change\n\n# kept, not a comment\n\nHub-Job: j1\n"
	head, committed, err := CommitAll(ctx, repo, msg, hubIdentity)
	if err != nil || !committed {
		t.Fatalf("CommitAll = %q, %v, %v", head, committed, err)
	}
	if exists(marker) {
		t.Error("a hook or the fsmonitor ran")
	}
	if got := gitT(t, repo, "-c", "log.showSignature=false", "log", "-1", "--format=%B"); got != strings.TrimSpace(msg) {
		t.Errorf("message %q, want %q", got, msg)
	}
	if sig := gitT(t, repo, "cat-file", "commit", head); strings.Contains(sig, "gpgsig") {
		t.Error("the commit is signed")
	}

	sub := filepath.Join(repo, "sub") // diff.relative would cut paths to this dir
	files, err := DiffFiles(ctx, sub, base, head)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []FileChange{
		{Path: "new.txt", OldPath: "old.txt", Change: "renamed"},
		{Path: "sub/a.txt", Change: "modified", Added: 1},
		{Path: "sub/untracked ü.txt", Change: "added", Added: 1},
	}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("DiffFiles (-want +got):\n%s", diff)
	}
	commits, err := Log(ctx, sub, base, head)
	if err != nil {
		t.Fatal(err)
	}
	wantCommits := []Commit{{SHA: head, Subject: "change", Author: "hub bot <hub@localhost>", Trailers: map[string]string{"Hub-Job": "j1"}}}
	if diff := cmp.Diff(wantCommits, commits); diff != "" {
		t.Errorf("Log (-want +got):\n%s", diff)
	}
	patch, err := Patch(ctx, sub, base, head)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"diff --git a/old.txt b/new.txt", "rename from old.txt", "+++ b/sub/a.txt"} {
		if !strings.Contains(string(patch), want) {
			t.Errorf("patch lacks %q:\n%s", want, patch)
		}
	}
	if strings.Contains(string(patch), "\x1b[") {
		t.Error("patch is coloured")
	}
}

func TestParseLog(t *testing.T) {
	in := "aaa\x00first\x00A <a@x>\x00\x00" +
		"bbb\x00second\x00B <b@x>\x00Hub-Job\x1fj1\x1eSigned-off-by\x1fB <b@x>\x1eHub-Job\x1fj2\x00"
	got, err := parseLog([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Commit{
		{SHA: "aaa", Subject: "first", Author: "A <a@x>"},
		{SHA: "bbb", Subject: "second", Author: "B <b@x>", Trailers: map[string]string{"Hub-Job": "j2", "Signed-off-by": "B <b@x>"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseLog (-want +got):\n%s", diff)
	}
	if _, err := parseLog([]byte("aaa\x00only two\x00")); err == nil {
		t.Error("parseLog accepted a short record")
	}
}

func TestMergeDiff(t *testing.T) {
	ns := "M\x00a\x00R087\x00old\x00new\x00C100\x00src\x00copy\x00T\x00t\x00"
	num := "1\t2\ta\x00" + "3\t0\t\x00old\x00new\x00" + "0\t0\t\x00src\x00copy\x00" + "-\t-\tt\x00"
	got, err := mergeDiff([]byte(ns), []byte(num))
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{
		{Path: "a", Change: "modified", Added: 1, Deleted: 2},
		{Path: "copy", OldPath: "src", Change: "copied"},
		{Path: "new", OldPath: "old", Change: "renamed", Added: 3},
		{Path: "t", Change: "type_changed", Added: -1, Deleted: -1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mergeDiff (-want +got):\n%s", diff)
	}
}
