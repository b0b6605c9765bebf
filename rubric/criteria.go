package rubric

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Texts of the criteria the hub adds itself.
const (
	textChanged   = "the branch changes at least one file"
	textNoChanges = "no files changed"
)

// everything is the Paths of an unchanged criterion that forbids any change.
const everything = "**"

// Criteria turns a definition of done and a verify command into criteria,
// in a stable order with IDs c1, c2, … (see the package documentation).
func Criteria(spec Spec) []Criterion {
	verify := strings.TrimSpace(spec.Verify)
	var (
		items         []Criterion
		covers        []string
		sentences     []string
		noChanges     bool // the definition says nothing needs to change
		nothingChange bool // it already forbids any change
	)
	for _, p := range parseDefinition(spec.DefinitionOfDone, verify) {
		if p.noChanges {
			noChanges = true
		}
		switch p.kind {
		case KindVerify:
			covers = append(covers, strconv.Quote(p.text))
			sentences = append(sentences, p.text)
			continue
		case KindUnchanged:
			if len(p.paths) == 1 && p.paths[0] == everything {
				nothingChange = true
			}
		}
		items = append(items, Criterion{Text: p.text, Kind: p.kind, Paths: p.paths, NoChanges: p.expects})
	}

	var out []Criterion
	if verify != "" {
		text := fmt.Sprintf("`%s` exits 0 on the head commit", verify)
		if len(covers) > 0 {
			text += " (covers " + strings.Join(covers, "; ") + ")"
		}
		out = append(out, Criterion{Text: text, Kind: KindVerify, Command: verify, Covers: sentences})
	}
	switch {
	case spec.Claim:
	case spec.Write && !noChanges:
		out = append(out, Criterion{Text: textChanged, Kind: KindChanged})
	case !spec.Write && !nothingChange:
		out = append(out, Criterion{Text: textNoChanges, Kind: KindUnchanged, Paths: []string{everything}})
	}
	out = append(out, items...)
	for i := range out {
		out[i].ID = "c" + strconv.Itoa(i+1)
	}
	return out
}

// parseDefinition splits a definition of done into items and recognises
// each. In a one-paragraph definition every sentence is an item; in an item
// of a list (or of several lines) the mechanical sentences are taken out and
// the judgement sentences around them stay together.
func parseDefinition(dod, verify string) []part {
	items, paragraph := splitItems(dod)
	var out []part
	for _, it := range items {
		if it.literal {
			out = append(out, part{kind: KindJudgement, text: it.text})
			continue
		}
		var parts []part
		for _, s := range splitSentences(it.text) {
			parts = append(parts, recognise(s, verify)...)
		}
		if paragraph {
			out = append(out, parts...)
			continue
		}
		out = append(out, mergeJudgements(parts)...)
	}
	return out
}

// mergeJudgements joins consecutive judgement parts into one.
func mergeJudgements(parts []part) []part {
	var out []part
	for _, p := range parts {
		if n := len(out); n > 0 && p.kind == KindJudgement && out[n-1].kind == KindJudgement {
			out[n-1].text += " " + p.text
			out[n-1].noChanges = out[n-1].noChanges || p.noChanges
			out[n-1].expects = out[n-1].expects && p.expects
			continue
		}
		out = append(out, p)
	}
	return out
}

// item is one item of a definition of done.
type item struct {
	text    string
	bullet  bool
	indent  int
	parent  *item // a bullet ending in ":" that this sub-bullet belongs to
	kids    []string
	literal bool // holds a fenced code block: kept whole, as a judgement
}

var (
	bulletRe   = regexp.MustCompile(`^(?:[-*+]|\d{1,3}[.)])(?:\s+(.*))?$`)
	checkboxRe = regexp.MustCompile(`^\[[ xX]\]\s*`)
	headingRe  = regexp.MustCompile(`^#{1,6}(?:\s|$)`)
	ruleRe     = regexp.MustCompile(`^(?:(?:-\s*){3,}|(?:=\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$`)
)

// splitItems splits a definition of done into items: bullets (with their
// wrapped lines), else lines, joining the lines of a hard-wrapped sentence.
// paragraph reports a definition that is a single plain paragraph.
func splitItems(dod string) (items []*item, paragraph bool) {
	var (
		cur     *item // takes continuation lines
		lastTop *item // last bullet that is not a sub-bullet
		blank   bool  // a blank line (or heading) since cur
		fence   []string
		fenceBy string // the marker that opened the fence, "" outside one
	)
	flushFence := func() {
		text := strings.Join(fence, "\n")
		fence = nil
		if strings.TrimSpace(text) == "" {
			return
		}
		if cur == nil {
			cur = &item{}
			items = append(items, cur)
		}
		cur.text = strings.TrimSpace(cur.text + "\n" + text)
		cur.literal = true
	}
	for _, line := range strings.Split(strings.ReplaceAll(dod, "\r\n", "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		if fenceBy != "" {
			if strings.HasPrefix(trimmed, fenceBy) {
				fenceBy = ""
				flushFence()
				continue
			}
			fence = append(fence, strings.TrimRight(line, " \t"))
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenceBy = trimmed[:3]
			continue
		}
		if trimmed == "" {
			blank = true
			continue
		}
		if headingRe.MatchString(trimmed) || ruleRe.MatchString(trimmed) {
			// "Title\n=====" (or "-----") is a setext heading: drop the title.
			setext := trimmed[0] == '=' || trimmed[0] == '-'
			if n := len(items); setext && !blank && n > 0 && cur == items[n-1] && !cur.bullet && !cur.literal {
				items = items[:n-1]
			}
			cur, lastTop, blank = nil, nil, true
			continue
		}
		indent := indentOf(line)
		if m := bulletRe.FindStringSubmatch(trimmed); m != nil {
			text := strings.TrimSpace(checkboxRe.ReplaceAllString(m[1], ""))
			if text == "" {
				continue
			}
			it := &item{text: text, bullet: true, indent: indent}
			if lastTop != nil && indent > lastTop.indent && strings.HasSuffix(lastTop.text, ":") {
				it.parent = lastTop
			} else {
				lastTop = it
			}
			items = append(items, it)
			cur, blank = it, false
			continue
		}
		switch {
		case cur != nil && cur.bullet && (!blank || indent >= 2):
			cur.text += " " + trimmed
		case cur != nil && !cur.bullet && !cur.literal && !blank && wrapped(cur.text, trimmed):
			cur.text += " " + trimmed
		default:
			cur = &item{text: trimmed}
			items = append(items, cur)
			lastTop = nil
		}
		blank = false
	}
	if fenceBy != "" {
		flushFence()
	}

	var out []*item
	for i, it := range items {
		if it.parent != nil {
			it.parent.kids = append(it.parent.kids, it.text)
			continue
		}
		// A plain line ending in ":" only introduces the list after it.
		if !it.bullet && !it.literal && strings.HasSuffix(it.text, ":") && i+1 < len(items) && items[i+1].bullet {
			continue
		}
		out = append(out, it)
	}
	for _, it := range out {
		if len(it.kids) > 0 {
			it.text += " " + strings.Join(it.kids, ", ")
		}
	}
	paragraph = len(out) == 1 && !out[0].bullet && !out[0].literal
	return out, paragraph
}

func indentOf(line string) int {
	n := 0
	for _, r := range line {
		switch r {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

// joinWords are last words after which a line clearly goes on.
var joinWords = map[string]bool{
	"a": true, "an": true, "and": true, "or": true, "the": true, "to": true, "of": true,
	"with": true, "that": true, "in": true, "for": true, "on": true, "by": true, "from": true,
}

// wrapped reports whether next continues the sentence of a hard-wrapped
// line prev rather than starting a new item.
func wrapped(prev, next string) bool {
	prev = strings.TrimSpace(prev)
	if prev == "" {
		return false
	}
	if strings.HasSuffix(prev, ",") {
		return true
	}
	words := strings.Fields(prev)
	if joinWords[strings.ToLower(words[len(words)-1])] {
		return true
	}
	if strings.ContainsAny(prev[len(prev)-1:], ".!?;:") {
		return false
	}
	first := []rune(next)[0]
	return unicode.IsLower(first)
}

// abbreviations do not end a sentence.
var abbreviations = map[string]bool{"e.g": true, "i.e": true, "vs": true, "cf": true}

// splitSentences splits text after ".", "!" or "?" followed by space and
// something that starts a sentence; it never splits inside backquotes.
func splitSentences(text string) []string {
	rs := []rune(text)
	var out []string
	start, inTick := 0, false
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r == '`' {
			inTick = !inTick
			continue
		}
		if inTick || (r != '.' && r != '!' && r != '?') {
			continue
		}
		end := i + 1
		for end < len(rs) && strings.ContainsRune(".!?\"')”’", rs[end]) {
			end++
		}
		next := end
		for next < len(rs) && unicode.IsSpace(rs[next]) {
			next++
		}
		if next == end || next >= len(rs) || !startsSentence(rs[next]) {
			continue
		}
		if r == '.' && end == i+1 && abbreviations[strings.ToLower(lastWord(rs[start:i]))] {
			continue
		}
		if s := strings.TrimSpace(string(rs[start:end])); s != "" {
			out = append(out, s)
		}
		start, i = next, next-1
	}
	if s := strings.TrimSpace(string(rs[start:])); s != "" {
		out = append(out, s)
	}
	return out
}

func startsSentence(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsDigit(r) || strings.ContainsRune("`\"'(*_“‘", r)
}

func lastWord(rs []rune) string {
	i := len(rs)
	for i > 0 && !unicode.IsSpace(rs[i-1]) && rs[i-1] != '(' {
		i--
	}
	return string(rs[i:])
}
