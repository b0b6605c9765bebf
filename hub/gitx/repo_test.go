package gitx

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOpen(t *testing.T) {
	base := realDir(t, t.TempDir())
	repo := newRepo(t, filepath.Join(base, "my repo ü 日本"), map[string]string{"README": "hi\n", "sub/dir/f.txt": "f\n"})
	gitDir := filepath.Join(repo, ".git")

	linked := filepath.Join(base, "linked wt")
	gitT(t, repo, "worktree", "add", "-q", "-b", "side", linked)

	plain := filepath.Join(base, "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file.txt")
	writeFile(t, file, "x", 0o644)

	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, empty, "init", "-q")

	bare := filepath.Join(base, "bare.git")
	gitT(t, base, "clone", "-q", "--bare", repo, bare)
	bareLinked := filepath.Join(base, "bare-linked")
	gitT(t, bare, "worktree", "add", "-q", "-b", "from-bare", bareLinked)

	viaLink := filepath.Join(base, "link-to-repo")
	if err := os.Symlink(repo, viaLink); err != nil {
		t.Fatal(err)
	}

	mainRepo := &Repo{Top: repo, GitDir: gitDir, CommonDir: gitDir}
	for _, tc := range []struct {
		name    string
		path    string
		want    *Repo
		wantErr error
		wantMsg string
	}{
		{name: "top with spaces and unicode", path: repo, want: mainRepo},
		{name: "subdirectory", path: filepath.Join(repo, "sub", "dir"), want: mainRepo},
		{name: "through a symlink", path: viaLink, want: mainRepo},
		{name: "linked worktree", path: linked, want: &Repo{Top: linked,
			GitDir: filepath.Join(gitDir, "worktrees", "linked-wt"), CommonDir: gitDir}},
		{name: "linked worktree of a bare repo", path: bareLinked, want: &Repo{Top: bareLinked,
			GitDir: filepath.Join(bare, "worktrees", "bare-linked"), CommonDir: bare}},
		{name: "not a repo", path: plain, wantErr: ErrNotRepo,
			wantMsg: plain + " is not a git repository; pass the top of a git checkout"},
		{name: "missing", path: filepath.Join(plain, "nope"), wantErr: ErrNotRepo,
			wantMsg: filepath.Join(plain, "nope") + " is not a git repository (it does not exist); pass the top of a git checkout"},
		{name: "a file", path: file, wantErr: ErrNotRepo,
			wantMsg: file + " is not a git repository (it is not a directory); pass the top of a git checkout"},
		{name: "no commits", path: empty, wantErr: ErrNoCommits,
			wantMsg: empty + " has no commits yet; commit something first, hub starts jobs from a commit"},
		{name: "bare", path: bare, wantErr: ErrBare,
			wantMsg: bare + " is a bare repository; pass a checkout with a work tree"},
		{name: "inside a bare repo", path: filepath.Join(bare, "refs"), wantErr: ErrBare,
			wantMsg: filepath.Join(bare, "refs") + " is a bare repository; pass a checkout with a work tree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Open(tc.path)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Open(%q) = %+v, %v; want %v", tc.path, got, err, tc.wantErr)
				}
				if err.Error() != tc.wantMsg {
					t.Errorf("Open(%q) error:\n got %q\nwant %q", tc.path, err, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.path, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Open(%q) (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	repo := newRepo(t, t.TempDir(), map[string]string{"a.txt": "a\n"})
	first := gitT(t, repo, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(repo, "b.txt"), "b\n", 0o644)
	second := commitFixture(t, repo, "second")
	gitT(t, repo, "tag", "light", first)
	gitT(t, repo, "tag", "-a", "-m", "annotated", "heavy", first)
	gitT(t, repo, "tag", "-a", "-m", "tag of a tag", "heavier", "heavy")
	gitT(t, repo, "branch", "feature/x", first)
	blob := gitT(t, repo, "rev-parse", "HEAD:a.txt")
	tree := gitT(t, repo, "rev-parse", "HEAD^{tree}")
	gitT(t, repo, "tag", "tree-tag", tree)
	gitT(t, repo, "tag", "-a", "-m", "points at a blob", "blob-tag", blob)
	gitT(t, repo, "pack-refs", "--all") // refs read from packed-refs too
	r := mustOpen(t, repo)

	for _, tc := range []struct {
		rev, want string
	}{
		{"", second},
		{"HEAD", second},
		{"main", second},
		{"refs/heads/main", second},
		{"feature/x", first},
		{"light", first},
		{"heavy", first},
		{"heavier", first},
		{first, first},
		{first[:7], first},
		{"HEAD~1", first},
		{"HEAD^", first},
		{"main~1", first},
	} {
		got, err := r.Resolve(tc.rev)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.rev, got, err, tc.want)
		}
	}

	for _, rev := range []string{"no-such-branch", "HEAD~5", "deadbeef", "main..HEAD"} {
		_, err := r.Resolve(rev)
		if !errors.Is(err, ErrUnknownRevision) {
			t.Errorf("Resolve(%q) error = %v; want ErrUnknownRevision", rev, err)
			continue
		}
		want := `unknown revision "` + rev + `" in ` + repo + "; pass a branch, tag or commit that exists"
		if err.Error() != want {
			t.Errorf("Resolve(%q) error:\n got %q\nwant %q", rev, err, want)
		}
	}

	for _, rev := range []string{blob, tree, "tree-tag", "blob-tag"} {
		got, err := r.Resolve(rev)
		if err == nil {
			t.Errorf("Resolve(%q) = %q for a non-commit; want an error", rev, got)
		} else if errors.Is(err, ErrUnknownRevision) {
			t.Errorf("Resolve(%q) = %v; want a not-a-commit error", rev, err)
		}
	}

	// In a linked worktree HEAD is that worktree's HEAD.
	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, repo, "worktree", "add", "-q", "--detach", wt, first)
	if got, err := mustOpen(t, wt).Resolve("HEAD"); err != nil || got != first {
		t.Errorf("Resolve(HEAD) in a linked worktree = %q, %v; want %q", got, err, first)
	}
}

// TestResolveAmbiguousShortSHA: a short SHA that names several commits is
// refused, as git refuses it, instead of silently picking one.
func TestResolveAmbiguousShortSHA(t *testing.T) {
	dir := t.TempDir()
	// A chain of commits made in one shell: enough for two to share a
	// 4-digit prefix (the birthday bound is a few hundred).
	script := `git init -q -b main . && tree=$(git write-tree) && parent=$(git commit-tree -m 0 "$tree") &&
for i in $(seq 1 1200); do parent=$(git commit-tree -p "$parent" -m "$i" "$tree"); echo "$parent"; done &&
git update-ref refs/heads/main "$parent"`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@localhost", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@localhost")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make commits: %v", err)
	}
	seen := map[string]string{}
	var prefix string
	for _, sha := range strings.Fields(string(out)) {
		if other, ok := seen[sha[:4]]; ok && other != sha {
			prefix = sha[:4]
			break
		}
		seen[sha[:4]] = sha
	}
	if prefix == "" {
		t.Fatal("no two of 1200 commits share a 4-digit prefix")
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Resolve(prefix); !errors.Is(err, ErrUnknownRevision) {
		t.Errorf("Resolve(%q) = %s, %v; want an ambiguity error", prefix, got, err)
	}
	full := seen[prefix]
	if got, err := r.Resolve(full[:12]); err != nil || got != full {
		t.Errorf("Resolve(12 digits) = %s, %v; want %s", got, err, full)
	}
}
