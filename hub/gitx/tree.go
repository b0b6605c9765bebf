package gitx

import (
	"bytes"
	"context"
	"sort"
	"strconv"
	"strings"
)

// StatusEntry is one line of porcelain v1 status.
type StatusEntry struct {
	Path, OldPath string
	X, Y          byte
}

// Status lists changes in the work tree at dir, untracked files included.
func Status(ctx context.Context, dir string) ([]StatusEntry, error) {
	out, err := Git(ctx, dir, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var res []StatusEntry
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		e := StatusEntry{X: f[0], Y: f[1], Path: string(f[3:])}
		if (e.X == 'R' || e.X == 'C') && i+1 < len(fields) {
			i++
			e.OldPath = string(fields[i])
		}
		res = append(res, e)
	}
	return res, nil
}

// Dirty reports any tracked change or untracked (not ignored) file.
func Dirty(ctx context.Context, dir string) (bool, error) {
	st, err := Status(ctx, dir)
	return len(st) > 0, err
}

// Identity signs a commit.
type Identity struct{ Name, Email string }

// CommitAll stages everything and commits it when anything is staged, as
// who, without running hooks. It needs no git config.
func CommitAll(ctx context.Context, dir, msg string, who Identity) (string, bool, error) {
	if _, err := Git(ctx, dir, "add", "-A"); err != nil {
		return "", false, err
	}
	_, err := Git(ctx, dir, "diff", "--cached", "--quiet")
	if err == nil {
		head, err := Head(ctx, dir)
		return head, false, err
	}
	if ge, ok := err.(*Error); !ok || ge.ExitCode != 1 {
		return "", false, err
	}
	env := []string{"GIT_AUTHOR_NAME=" + who.Name, "GIT_AUTHOR_EMAIL=" + who.Email,
		"GIT_COMMITTER_NAME=" + who.Name, "GIT_COMMITTER_EMAIL=" + who.Email}
	if _, err := gitEnv(ctx, dir, env, "-c", "user.name="+who.Name, "-c", "user.email="+who.Email,
		"commit", "--no-verify", "-q", "-m", msg); err != nil {
		return "", false, err
	}
	head, err := Head(ctx, dir)
	return head, err == nil, err
}

// Head returns the commit HEAD points at in dir.
func Head(ctx context.Context, dir string) (string, error) {
	out, err := Git(ctx, dir, "rev-parse", "HEAD")
	return strings.TrimSpace(string(out)), err
}

// FileChange is one file of base..head.
type FileChange struct {
	Path, OldPath, Change string
	Added, Deleted        int // -1 for binary
}

var changeNames = map[byte]string{'A': "added", 'M': "modified", 'D': "deleted", 'R': "renamed", 'C': "copied", 'T': "type_changed"}

// DiffFiles lists the files of base..head with their line counts.
func DiffFiles(ctx context.Context, dir, base, head string) ([]FileChange, error) {
	ns, err := Git(ctx, dir, "diff", "--name-status", "-z", "-M", base, head)
	if err != nil {
		return nil, err
	}
	var files []FileChange
	byPath := map[string]int{}
	f := bytes.Split(ns, []byte{0})
	for i := 0; i < len(f); i++ {
		if len(f[i]) == 0 {
			continue
		}
		st := f[i][0]
		c := FileChange{Change: changeNames[st]}
		if c.Change == "" {
			c.Change = "modified"
		}
		if (st == 'R' || st == 'C') && i+2 < len(f) {
			c.OldPath, c.Path = string(f[i+1]), string(f[i+2])
			i += 2
		} else if i+1 < len(f) {
			c.Path = string(f[i+1])
			i++
		}
		byPath[c.Path] = len(files)
		files = append(files, c)
	}
	num, err := Git(ctx, dir, "diff", "--numstat", "-z", "-M", base, head)
	if err != nil {
		return nil, err
	}
	n := bytes.Split(num, []byte{0})
	for i := 0; i < len(n); i++ {
		parts := strings.SplitN(string(n[i]), "\t", 3)
		if len(parts) < 3 {
			continue
		}
		path := parts[2]
		if path == "" && i+2 < len(n) { // rename: empty path, then old and new
			path = string(n[i+2])
			i += 2
		}
		k, ok := byPath[path]
		if !ok {
			continue
		}
		files[k].Added, files[k].Deleted = atoiOr(parts[0]), atoiOr(parts[1])
	}
	sort.Slice(files, func(a, b int) bool { return files[a].Path < files[b].Path })
	return files, nil
}

func atoiOr(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1 // "-" for binary
	}
	return n
}

// Commit is one commit of base..head.
type Commit struct {
	SHA, Subject, Author string
	Trailers             map[string]string
}

// Log lists base..head oldest first, with commit-message trailers parsed.
func Log(ctx context.Context, dir, base, head string) ([]Commit, error) {
	out, err := Git(ctx, dir, "log", "--reverse", "-z", "--format=%H%x1f%s%x1f%an <%ae>%x1f%(trailers:only,unfold)", base+".."+head)
	if err != nil {
		return nil, err
	}
	var res []Commit
	for _, rec := range bytes.Split(out, []byte{0}) {
		p := strings.SplitN(string(rec), "\x1f", 4)
		if len(p) < 3 {
			continue
		}
		c := Commit{SHA: strings.TrimSpace(p[0]), Subject: p[1], Author: p[2], Trailers: map[string]string{}}
		if len(p) == 4 {
			for _, l := range strings.Split(p[3], "\n") {
				if k, v, ok := strings.Cut(l, ":"); ok {
					c.Trailers[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
			}
		}
		res = append(res, c)
	}
	return res, nil
}

// Patch returns the full binary-safe patch of base..head.
func Patch(ctx context.Context, dir, base, head string) ([]byte, error) {
	return Git(ctx, dir, "diff", "--binary", "-M", base, head)
}
