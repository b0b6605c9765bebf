package tool

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzGlobMatch compiles arbitrary patterns and matches them against
// arbitrary relative paths. Nothing may panic, and when a path matches, the
// walk must reach it: no directory above it may be pruned by mayMatchUnder,
// it must lie under base (where the walk starts), and a pattern of one
// element (grep's include by name) matches only single elements, unless it
// may spell "**".
//
// Then doublestar must agree with what the tool did before it: spell out
// the {a,b} groups, then apply path.Match element by element. That check
// leaves out the differences the tool accepts (see the returns below).
func FuzzGlobMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"**/*.go", "a/b/c.go"}, {"a/**/b", "a/x/y/b"}, {"a/**", "a/x/y"}, {"*", "a/b"},
		{"*.{go,md}", "x.md"}, {"{a,b{c,d}}/x", "bd/x"}, {"\\*.go", "*.go"}, {"{single}", "{single}"},
		{"./*.go", "main.go"}, {"p?g/**/*.txt", "pkg/deep/y.txt"}, {"**/[mx].go", "pkg/deep/x.go"},
		{"{other,pkg/deep}/*.go", "pkg/deep/x.go"}, {"a{b,c", "a{b,c"}, {"x}/y", "x}/y"}, {"[a/b]", "a"},
		{"a\\/b", "a/b"}, {"**/{a,}b/**", "a/b/c"}, {"[^a]/*", "b/c"}, {"*{a,b/c}*/d", "xb/cy/d"},
		{"foo*{,x}", "foo"}, {"x***", "x"}, {"*[!0]0", "0/0"}, {"{{*,}*,}", "0/0"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) && strings.ContainsRune(pattern, utf8.RuneError) {
			// Patterns come from JSON, in valid UTF-8. doublestar reads an
			// invalid byte of a name as U+FFFD, so a pattern holding U+FFFD
			// matches it where path.Match, comparing bytes, did not.
			return
		}
		g, err := compileGlob(pattern)
		if err != nil {
			return
		}
		base := g.base()
		elems := strings.Split(name, "/")
		for _, e := range elems {
			if e == "" || e == "." || e == ".." {
				return // the walk never shows such a path
			}
		}
		matched := g.match(name)
		if matched {
			for i := 1; i < len(elems); i++ {
				if dir := strings.Join(elems[:i], "/"); !g.mayMatchUnder(dir) {
					t.Fatalf("%q matches %q, but mayMatchUnder(%q) prunes it", pattern, name, dir)
				}
			}
			// base itself matches "base/**", as before, but it is the
			// directory walked, never a file listed.
			if base != "." && name != base && !strings.HasPrefix(name, base+"/") {
				t.Fatalf("%q matches %q, which is not under base %q", pattern, name, base)
			}
			if g.oneElement() && len(elems) != 1 && g.elems[0] != "**" {
				t.Fatalf("%q is one element but matches %q", pattern, name)
			}
			if g.oneElement() && len(elems) == 1 && !g.matchBase("dir/"+name) {
				t.Fatalf("%q matches %q but not as the base of dir/%[2]s", pattern, name)
			}
		}

		if strings.Contains(pattern, "[!") {
			return // path.Match reads "[!a]" as '!' or 'a', doublestar as not 'a'
		}
		if strings.Contains(pattern, "[") && strings.Contains(pattern, "-") {
			return // doublestar matches the low end of an inverted range ("[z-a]" matches "z")
		}
		if strings.ContainsAny(pattern, "?[") && !isASCII(name) {
			return // path.Match's '*' may stop inside a rune, so "*??" matched "‣"; doublestar's does not
		}
		var pelems []string
		for _, e := range strings.Split(pattern, "/") {
			if e != "" && e != "." {
				pelems = append(pelems, e)
			}
		}
		alts := []string{strings.Join(pelems, "/")}
		if strings.ContainsAny(pattern, "{}") {
			if strings.ContainsAny(pattern, `\[`) {
				return // keeps spellOut simple
			}
			var ok bool
			if alts, ok = spellOut(alts[0]); !ok {
				return
			}
		}
		want := false
		for _, alt := range alts {
			aelems := strings.Split(alt, "/")
			for _, e := range aelems {
				if e == "**" {
					return // path.Match knows no "**"
				}
				if e == "" || e == "." {
					// Before, "a/{b,}/c" spelled "a//c", which matched
					// "a/c"; doublestar matches "a/b/c" only.
					return
				}
				if _, err := path.Match(e, ""); err != nil {
					return // path.Match refuses it; doublestar may read it (e.g. "[a-]")
				}
			}
			if len(aelems) != len(elems) {
				continue
			}
			all := true
			for i, e := range aelems {
				if ok, _ := path.Match(e, elems[i]); !ok {
					all = false
				}
			}
			want = want || all
		}
		if matched != want {
			t.Fatalf("%q matches %q = %v; spelt out and matched by path.Match element by element: %v (%q)", pattern, name, matched, want, alts)
		}
	})
}

// spellOut expands the {a,b} groups of p (which holds no '\' or '['). ok is
// false for what doublestar is left to read alone: a brace group without a
// comma, an unmatched brace, more than maxBraceAlts alternatives.
func spellOut(p string) (alts []string, ok bool) {
	open := strings.IndexByte(p, '{')
	if strings.IndexByte(p[:max(open, 0)], '}') >= 0 || open < 0 && strings.IndexByte(p, '}') >= 0 {
		return nil, false
	}
	if open < 0 {
		return []string{p}, true
	}
	depth, last := 0, open+1
	var parts []string
	for i := open; i < len(p); i++ {
		switch p[i] {
		case '{':
			depth++
		case ',':
			if depth == 1 {
				parts = append(parts, p[last:i])
				last = i + 1
			}
		case '}':
			if depth--; depth > 0 {
				continue
			}
			if parts = append(parts, p[last:i]); len(parts) < 2 {
				return nil, false
			}
			for _, part := range parts {
				sub, ok := spellOut(p[:open] + part + p[i+1:])
				if !ok || len(alts)+len(sub) > maxBraceAlts {
					return nil, false
				}
				alts = append(alts, sub...)
			}
			return alts, true
		}
	}
	return nil, false
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
