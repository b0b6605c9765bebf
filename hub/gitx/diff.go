package gitx

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Options for every diff and log gitx reads, so the user's configuration
// (colour, external diff drivers, textconv, relative paths, odd prefixes,
// signature checks) cannot change what gitx parses.
var diffSafe = []string{"--no-color", "--no-ext-diff", "--no-textconv", "--no-relative"}

// FileChange is one file changed between two commits. Change is one of
// added, modified, deleted, renamed, copied, type_changed. Added and Deleted
// count lines, -1 for a binary file.
type FileChange struct {
	Path, OldPath, Change string
	Added, Deleted        int
}

// DiffFiles lists the files that differ between the commits base and head
// (renames detected), sorted by Path.
func DiffFiles(ctx context.Context, dir, base, head string) ([]FileChange, error) {
	if err := checkRevs(base, head); err != nil {
		return nil, err
	}
	args := append([]string{"diff"}, diffSafe...)
	args = append(args, "-z", "-M")
	ns, err := runGit(ctx, dir, readOnly, append(slices.Clone(args), "--name-status", base, head, "--")...)
	if err != nil {
		return nil, err
	}
	num, err := runGit(ctx, dir, readOnly, append(slices.Clone(args), "--numstat", base, head, "--")...)
	if err != nil {
		return nil, err
	}
	return mergeDiff(ns, num)
}

type lineCounts struct{ added, deleted int }

// mergeDiff joins `diff --name-status -z` ("S\0path\0", renames and copies
// "R100\0old\0new\0") with `diff --numstat -z` ("a\td\tpath\0", renames
// "a\td\t\0old\0new\0", binary files "-\t-\t...").
func mergeDiff(nameStatus, numstat []byte) ([]FileChange, error) {
	counts := map[[2]string]lineCounts{} // by {Path, OldPath}
	nf := splitNUL(numstat)
	for i := 0; i < len(nf); i++ {
		a, rest, ok1 := strings.Cut(string(nf[i]), "\t")
		d, path, ok2 := strings.Cut(rest, "\t")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("git diff --numstat: cannot parse %q", nf[i])
		}
		key := [2]string{path, ""}
		if path == "" {
			if i+2 >= len(nf) {
				return nil, fmt.Errorf("git diff --numstat: rename %q has no paths", nf[i])
			}
			key = [2]string{string(nf[i+2]), string(nf[i+1])}
			i += 2
		}
		var c lineCounts
		var err error
		if c.added, err = count(a); err == nil {
			c.deleted, err = count(d)
		}
		if err != nil {
			return nil, fmt.Errorf("git diff --numstat: cannot parse %q: %v", nf[i], err)
		}
		counts[key] = c
	}

	var files []FileChange
	sf := splitNUL(nameStatus)
	for i := 0; i < len(sf); i++ {
		status := string(sf[i])
		if status == "" || i+1 >= len(sf) {
			return nil, fmt.Errorf("git diff --name-status: cannot parse %q", sf[i])
		}
		f := FileChange{Change: changeName(status[0]), Path: string(sf[i+1])}
		i++
		if isRenameOrCopy(status[0]) {
			if i+1 >= len(sf) {
				return nil, fmt.Errorf("git diff --name-status: %s of %q has no new path", f.Change, f.Path)
			}
			f.OldPath, f.Path = f.Path, string(sf[i+1])
			i++
		}
		c := counts[[2]string{f.Path, f.OldPath}]
		f.Added, f.Deleted = c.added, c.deleted
		files = append(files, f)
	}
	slices.SortStableFunc(files, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

func count(s string) (int, error) {
	if s == "-" {
		return -1, nil
	}
	return strconv.Atoi(s)
}

func changeName(status byte) string {
	switch status {
	case 'A':
		return "added"
	case 'M':
		return "modified"
	case 'D':
		return "deleted"
	case 'R':
		return "renamed"
	case 'C':
		return "copied"
	case 'T':
		return "type_changed"
	case 'U':
		return "unmerged"
	}
	return "unknown"
}

// Commit is one commit with the trailers of its message ("Hub-Job: abc").
// Author is "Name <email>". When a trailer key repeats, the last value wins.
type Commit struct {
	SHA, Subject, Author string
	Trailers             map[string]string
}

// logFormat prints four NUL-separated fields per commit; git's own trailer
// parser finds the trailers, keys and values split by \x1f, trailers by \x1e.
const logFormat = "%H%x00%s%x00%an <%ae>%x00%(trailers:only=true,unfold=true,separator=%x1e,key_value_separator=%x1f)"

// Log lists the commits in base..head, oldest first.
func Log(ctx context.Context, dir, base, head string) ([]Commit, error) {
	if err := checkRevs(base, head); err != nil {
		return nil, err
	}
	out, err := runGit(ctx, dir, readOnly, "log", "--reverse", "-z", "--no-color", "--no-show-signature",
		"--format="+logFormat, base+".."+head, "--")
	if err != nil {
		return nil, err
	}
	return parseLog(out)
}

func parseLog(out []byte) ([]Commit, error) {
	// With -z every record ends in NUL, so the four fields of each commit are
	// simply the next four NUL-terminated fields.
	if len(out) == 0 {
		return nil, nil
	}
	if !bytes.HasSuffix(out, []byte{0}) {
		return nil, fmt.Errorf("git log: output does not end in NUL")
	}
	fields := bytes.Split(out[:len(out)-1], []byte{0})
	if len(fields)%4 != 0 {
		return nil, fmt.Errorf("git log: %d fields is not four per commit", len(fields))
	}
	commits := make([]Commit, 0, len(fields)/4)
	for i := 0; i < len(fields); i += 4 {
		c := Commit{SHA: string(fields[i]), Subject: string(fields[i+1]), Author: string(fields[i+2])}
		for _, t := range strings.Split(string(fields[i+3]), "\x1e") {
			k, v, ok := strings.Cut(t, "\x1f")
			if k = strings.TrimSpace(k); !ok || k == "" {
				continue
			}
			if c.Trailers == nil {
				c.Trailers = map[string]string{}
			}
			c.Trailers[k] = strings.TrimSpace(v)
		}
		commits = append(commits, c)
	}
	return commits, nil
}

// Patch returns the full patch from base to head (`git diff --binary -M`),
// fit for `git apply`, whatever the user's diff configuration.
func Patch(ctx context.Context, dir, base, head string) ([]byte, error) {
	if err := checkRevs(base, head); err != nil {
		return nil, err
	}
	args := append([]string{"diff"}, diffSafe...)
	args = append(args, "--binary", "-M", "--src-prefix=a/", "--dst-prefix=b/", "--submodule=short", base, head, "--")
	return runGit(ctx, dir, readOnly, args...)
}

func checkRevs(base, head string) error {
	if err := checkRev("base", base); err != nil {
		return err
	}
	return checkRev("head", head)
}
