package tool

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// maxBraceAlts bounds the alternatives the {a,b} groups of one pattern may
// spell out: matching tries them one by one.
const maxBraceAlts = 64

// globPattern is a slash-separated glob matched by doublestar: "**" as a
// whole element matches zero or more path elements; "*", "?" and "[...]"
// match within one element, and "{a,b}" gives alternatives.
type globPattern struct {
	pattern string // cleaned and checked, in doublestar's syntax
	whole   string // pattern + globEnd, for match
	// elems are the pattern's elements, each rewritten alone, for
	// mayMatchUnder, with "**" for one that may become "**"; nil when a
	// slash lies inside a {a,b} group, where elements cannot be told apart.
	elems []string
	one   bool // a single element: the pattern has no slash
}

// compileGlob parses pattern, which must be relative and must not climb out
// with "..". Empty and "." elements are dropped, as is a trailing slash.
// Unlike in doublestar alone, a brace group without a comma ("{x}") and an
// unmatched brace are literal text, a negated class does not match "/", and
// a slash inside "[...]" or after a backslash is malformed: "/" always
// separates elements.
func compileGlob(pattern string) (*globPattern, error) {
	if pattern == "" {
		return nil, errors.New("empty pattern")
	}
	var elems []string
	for _, e := range strings.Split(pattern, "/") {
		switch e {
		case "", ".":
			continue
		case "..":
			return nil, fmt.Errorf("pattern %q climbs out with \"..\"; patterns are relative to the worktree root", pattern)
		}
		elems = append(elems, e)
	}
	if len(elems) == 0 {
		return nil, fmt.Errorf("pattern %q matches no file; try \"**/*.go\" or \"src/*\"", pattern)
	}
	p, slashInGroup, err := rewrite(strings.Join(elems, "/"))
	if err == errSlash || err == nil && !doublestar.ValidatePattern(p) {
		return nil, fmt.Errorf("malformed pattern %q (check [ ] and \\ escapes; \"/\" only separates elements)", pattern)
	}
	if err != nil {
		return nil, fmt.Errorf("pattern %q %v", pattern, err)
	}
	g := &globPattern{pattern: p, whole: p + globEnd, one: len(elems) == 1}
	if !slashInGroup {
		// Split before rewriting: a negated class gains a "/".
		g.elems = make([]string, len(elems))
		for i, e := range elems {
			e, _, _ = rewrite(e) // the whole passed, so each part does
			// An alternative may spell "**" ("{*,}*"): no pruning there.
			if strings.Count(e, "*") >= 2 && strings.ContainsRune(e, '{') {
				e = "**"
			}
			g.elems[i] = e
		}
	}
	return g, nil
}

// errSlash reports a "/" that rewrite refuses.
var errSlash = errors.New(`"/" only separates elements`)

// rewrite turns p into doublestar's syntax where the two part ways: it
// escapes the braces doublestar would read as a group but that are text
// here (a group without a comma, an unmatched brace), and adds "/" to a
// negated class (doublestar lets "[!x]" match "/"). It
// bounds the alternatives the groups spell out, refuses a slash in "[...]"
// or after a backslash (errSlash), and reports whether a group holds a
// slash.
func rewrite(p string) (string, bool, error) {
	type group struct {
		open           int // index of '{'
		commas         int
		sum, prod, cur int // alternatives: of the parts before, their product, of the part so far
	}
	var stack []group
	before := map[int]string{} // text to insert before an index: "\\" for a brace that is text
	total, slashInGroup := 1, false
	// fold multiplies n alternatives into the enclosing part.
	fold := func(n int) error {
		if len(stack) == 0 {
			total *= n
		} else {
			stack[len(stack)-1].cur *= n
			n = stack[len(stack)-1].cur
		}
		if n > maxBraceAlts || total > maxBraceAlts {
			return fmt.Errorf("expands to more than %d alternatives; use fewer {a,b} groups", maxBraceAlts)
		}
		return nil
	}
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i++; i < len(p) && p[i] == '/' {
				return "", false, errSlash
			}
		case '[':
			// Skip the class as doublestar does, to the first unescaped
			// ']' (it refuses an empty class, so none comes first).
			j := i + 1
			negated := j < len(p) && (p[j] == '!' || p[j] == '^')
			for ; j < len(p) && p[j] != ']'; j++ {
				switch p[j] {
				case '\\':
					j++
				case '/':
					return "", false, errSlash
				}
			}
			if negated && j < len(p) {
				before[j] = "/" // or doublestar's "[!x]" would match "/"
			}
			i = j // past the end if unclosed: ValidatePattern refuses that
		case '/':
			if len(stack) > 0 {
				slashInGroup = true
			}
		case '{':
			stack = append(stack, group{open: i, prod: 1, cur: 1})
		case ',':
			if len(stack) > 0 {
				g := &stack[len(stack)-1]
				g.commas++
				g.sum += g.cur
				g.prod *= g.cur
				g.cur = 1
			}
		case '}':
			if len(stack) == 0 {
				before[i] = `\`
				continue
			}
			g := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n := g.sum + g.cur
			if g.commas == 0 {
				before[g.open], before[i] = `\`, `\`
				n = g.cur
			}
			if err := fold(n); err != nil {
				return "", false, err
			}
		}
	}
	for len(stack) > 0 { // unmatched: its commas are text too
		g := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		before[g.open] = `\`
		if err := fold(g.prod * g.cur); err != nil {
			return "", false, err
		}
	}
	if len(before) == 0 {
		return p, slashInGroup, nil
	}
	var b strings.Builder
	for i := range len(p) {
		b.WriteString(before[i])
		b.WriteByte(p[i])
	}
	return b.String(), slashInGroup, nil
}

// globEnd follows both pattern and name in every match: doublestar decides
// some matches when the name runs out before the pattern, and then misses
// that "x*{,y}" or "x***" match "x". With globEnd after both, the name never
// runs out first unless the match fails anyway. "/" keeps a final "**"
// matching zero or more elements; no path holds NUL.
const globEnd = "/\x00"

// match reports whether the slash-separated path p matches.
func (g *globPattern) match(p string) bool {
	return doublestar.MatchUnvalidated(g.whole, p+globEnd)
}

// matchBase reports whether the last element of p matches; it is for
// patterns of one element, such as grep's include "*.go".
func (g *globPattern) matchBase(p string) bool {
	return g.match(path.Base(p))
}

// oneElement reports whether the pattern has a single element (no slash; a
// slash in "[...]" or escaped is refused), as "*.go" has.
func (g *globPattern) oneElement() bool {
	return g.one
}

// mayMatchUnder reports whether some path under directory dir could match,
// so that a walk can skip directories that cannot: each element of dir must
// match the pattern's element at its place, up to a "**", and the pattern
// must have elements left for what lies below.
func (g *globPattern) mayMatchUnder(dir string) bool {
	if g.elems == nil {
		return true
	}
	elems := strings.Split(dir, "/")
	for i, d := range elems {
		if i == len(g.elems) {
			return false
		}
		if g.elems[i] == "**" {
			return true
		}
		if !doublestar.MatchUnvalidated(g.elems[i]+globEnd, d+globEnd) {
			return false
		}
	}
	return len(elems) < len(g.elems)
}

// base returns the leading elements of the pattern that hold no wildcard,
// leaving out its last element: the walk can start there.
func (g *globPattern) base() string {
	base, rest := doublestar.SplitPattern(g.pattern)
	if base == "." {
		return base
	}
	// SplitPattern unescapes only meta characters, but to Match "\x" is
	// "x" too: unescape every character.
	raw := g.pattern[:len(g.pattern)-len(rest)-1]
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			i++
		}
		b.WriteByte(raw[i])
	}
	return b.String()
}
