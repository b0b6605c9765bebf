package rubric

import (
	"path"
	"strings"
)

// matchPath reports whether the repository-relative file p is covered by
// pattern, with .gitignore-like rules: a pattern is rooted at the top and
// covers everything below a directory it matches; "*", "?" and "[…]" match
// within a segment; a "**" segment matches any number of segments; a glob
// without "/" matches a name at any depth. A malformed pattern matches
// nothing.
func matchPath(pattern, p string) bool {
	for strings.HasPrefix(pattern, "./") {
		pattern = pattern[2:]
	}
	pattern = strings.TrimSuffix(strings.TrimPrefix(pattern, "/"), "/")
	p = strings.Trim(p, "/")
	if pattern == "" || p == "" {
		return false
	}
	segs := strings.Split(p, "/")
	if !strings.Contains(pattern, "/") && strings.ContainsAny(pattern, "*?[") {
		for _, s := range segs {
			if ok, _ := path.Match(pattern, s); ok {
				return true
			}
		}
		return false
	}
	pat := strings.Split(pattern, "/")
	for n := 1; n <= len(segs); n++ {
		if matchSegs(pat, segs[:n]) {
			return true
		}
	}
	return false
}

// matchSegs matches pattern segments against path segments exactly.
func matchSegs(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if matchSegs(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, _ := path.Match(pat[0], segs[0])
	return ok && matchSegs(pat[1:], segs[1:])
}

// matchAnyPath reports whether p is covered by any of patterns.
func matchAnyPath(patterns []string, p string) bool {
	for _, pat := range patterns {
		if matchPath(pat, p) {
			return true
		}
	}
	return false
}

// touched lists the paths a change touches: a rename touches its old path
// too; a copy leaves its source alone.
func touched(f FileChange) []string {
	if f.Change == "renamed" && f.OldPath != "" && f.OldPath != f.Path {
		return []string{f.Path, f.OldPath}
	}
	return []string{f.Path}
}
