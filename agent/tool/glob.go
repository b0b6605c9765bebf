package tool

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// maxBraceAlts bounds the patterns one brace expansion may produce.
const maxBraceAlts = 64

// globPattern is a slash-separated glob with doublestar semantics: "**" as a
// whole element matches zero or more path elements; "*", "?" and "[...]"
// match within one element (as in path.Match), and "{a,b}" gives
// alternatives.
type globPattern struct {
	alts [][]string // brace-expanded alternatives, split into elements
}

// compileGlob parses pattern, which must be relative and must not climb out
// with "..".
func compileGlob(pattern string) (*globPattern, error) {
	if pattern == "" {
		return nil, errors.New("empty pattern")
	}
	expanded, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &globPattern{}
	for _, p := range expanded {
		var elems []string
		for _, e := range strings.Split(p, "/") {
			switch e {
			case "", ".":
				continue
			case "..":
				return nil, fmt.Errorf("pattern %q climbs out with \"..\"; patterns are relative to the worktree root", pattern)
			}
			if _, err := path.Match(e, ""); err != nil {
				return nil, fmt.Errorf("malformed pattern %q near %q (check [ ] and \\ escapes)", pattern, e)
			}
			elems = append(elems, e)
		}
		if len(elems) == 0 {
			return nil, fmt.Errorf("pattern %q matches no file; try \"**/*.go\" or \"src/*\"", pattern)
		}
		g.alts = append(g.alts, elems)
	}
	return g, nil
}

// expandBraces expands the first top-level {a,b,...} group of p, then the
// rest, recursively. A group without a comma stays as it is.
func expandBraces(p string) ([]string, error) {
	depth, start := 0, -1
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				start = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			if depth--; depth > 0 {
				continue
			}
			parts := splitTopLevel(p[start+1 : i])
			if len(parts) < 2 {
				continue
			}
			var out []string
			for _, part := range parts {
				sub, err := expandBraces(p[:start] + part + p[i+1:])
				if err != nil {
					return nil, err
				}
				out = append(out, sub...)
				if len(out) > maxBraceAlts {
					return nil, fmt.Errorf("pattern %q expands to more than %d alternatives; use fewer {a,b} groups", p, maxBraceAlts)
				}
			}
			return out, nil
		}
	}
	return []string{p}, nil
}

// splitTopLevel splits s at the commas outside nested braces.
func splitTopLevel(s string) []string {
	var parts []string
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[last:i])
				last = i + 1
			}
		}
	}
	return append(parts, s[last:])
}

// match reports whether the slash-separated path p matches.
func (g *globPattern) match(p string) bool {
	elems := strings.Split(p, "/")
	for _, alt := range g.alts {
		if matchElems(alt, elems) {
			return true
		}
	}
	return false
}

// matchBase reports whether the last element of p matches; it is for
// patterns of one element, such as grep's include "*.go".
func (g *globPattern) matchBase(p string) bool {
	return g.match(path.Base(p))
}

// oneElement reports whether every alternative is a single element.
func (g *globPattern) oneElement() bool {
	for _, alt := range g.alts {
		if len(alt) != 1 {
			return false
		}
	}
	return true
}

// mayMatchUnder reports whether some path under directory dir could match,
// so that a walk can skip directories that cannot.
func (g *globPattern) mayMatchUnder(dir string) bool {
	elems := strings.Split(dir, "/")
	for _, alt := range g.alts {
		if prefixMatch(alt, elems) {
			return true
		}
	}
	return false
}

// base returns the leading elements that all alternatives share and that
// hold no wildcard, leaving out each alternative's last element: the walk
// can start there.
func (g *globPattern) base() string {
	var common []string
	for i, alt := range g.alts {
		var lit []string
		for _, e := range alt[:len(alt)-1] {
			if strings.ContainsAny(e, `*?[\`) {
				break
			}
			lit = append(lit, e)
		}
		if i == 0 {
			common = lit
			continue
		}
		n := 0
		for n < len(common) && n < len(lit) && common[n] == lit[n] {
			n++
		}
		common = common[:n]
	}
	if len(common) == 0 {
		return "."
	}
	return strings.Join(common, "/")
}

func matchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range len(name) + 1 {
				if matchElems(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// prefixMatch reports whether dir could be the leading elements of a path
// that matches pat.
func prefixMatch(pat, dir []string) bool {
	for len(dir) > 0 {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[0], dir[0]); !ok {
			return false
		}
		pat, dir = pat[1:], dir[1:]
	}
	return len(pat) > 0
}
