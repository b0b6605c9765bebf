package rubric

import (
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// part is one recognised piece of a sentence.
type part struct {
	kind      Kind // KindVerify here means "covered by the verify criterion"
	text      string
	paths     []string // for unchanged and only
	noChanges bool     // says no changes are expected
	// expects: a judgement that only says no change is expected ("No
	// changes are needed."): nothing changed settles it.
	expects bool
}

// Building blocks of the patterns. Every pattern is matched, case-
// insensitively, against a whole cleaned sentence or clause.
const (
	lead = `(?i)^(?:(?:please|also|and|but|so|then|finally|additionally|important(?:ly)?|note(?:\s+that)?|remember(?:\s+to)?|make\s+sure(?:\s+that)?(?:\s+you)?(?:\s+to)?|ensure(?:\s+that)?(?:\s+you)?|be\s+sure\s+to)[\s,:]+)*`
	subj = `(?:(?:you|we|it|the\s+(?:worker|agent|change|changes|job|patch|commit|diff|branch|pr))\s+)?`
	neg  = `(?:do\s+not|don't|dont|does\s+not|doesn't|never|must\s+not|mustn't|must\s+never|should\s+not|shouldn't|should\s+never|shall\s+not|may\s+not|cannot|can't|can\s+not|will\s+not|won't|(?:are|is)\s+not\s+(?:allowed|permitted)\s+to|not\s+allowed\s+to)`
	verb = `(?:change|modify|touch|edit|alter|update|rewrite|make\s+(?:any\s+)?changes\s+to|commit\s+(?:any\s+)?changes\s+to)`
	// negAfter is a negation after the subject X: "X must not", "X won't".
	negAfter = `(?:(?:must|should|shall|may|can|will|does|do)\s+(?:not|never)|mustn't|shouldn't|can't|cannot|won't|doesn't|don't|never)`
	beDone   = `(?:changed|modified|touched|edited|altered|updated)`
	outside  = `outside\s+(?:of\s+)?`
	// what the changes are called
	changes = `(?:(?:all|the|any|your)\s+)?(?:changes?|edits?|modifications?|diffs?)`
	// the whole repository, for "do not change the repository"
	repo = `(?:anything|any\s+files?|(?:the|this)\s+(?:repo|repository|codebase|working\s+tree|work\s+tree|tree|checkout))`
)

// The sentence patterns, compiled on first use (by compilePatterns):
// compiling them takes some 4 ms, which every hub process (each job's shim,
// `hub mcp`) would otherwise pay at start, grading or not.
var (
	unchangedRes, onlyRes, nothingRes, noChangesRes, coverCmdRes, coverTestsRes []*regexp.Regexp
	withoutRe, guardRe, trailRe, spaceRe                                        *regexp.Regexp
	compiled                                                                    sync.Once
)

func compilePatterns() { compiled.Do(compileAll) }

func compileAll() {
	// Patterns whose group 1 is the paths.
	unchangedRes = compile(
		lead+subj+neg+`\s+`+verb+`\s+(.+)$`,
		lead+`(?:leave|keep)\s+(.+?)\s+(?:unchanged|untouched|unmodified|alone|intact|as\s+(?:it\s+is|they\s+are|is))$`,
		lead+`(.+?)\s+`+negAfter+`\s+(?:change|be\s+`+beDone+`|get\s+`+beDone+`)$`,
		lead+`(.+?)\s+(?:(?:is|are|stays?|remains?|(?:must|should|shall|will)\s+(?:be|stay|remain)|(?:is|are|must\s+be|should\s+be)\s+(?:left|kept)|left|kept)\s+)?(?:unchanged|untouched|unmodified|intact)$`,
		lead+`(.+?)\s+(?:is|are)\s+(?:off[-\s]limits|read[-\s]only|frozen)$`,
		lead+`treat\s+(.+?)\s+as\s+read[-\s]only$`,
	)
	onlyRes = compile(
		lead+`(?:(?:you\s+)?(?:may|must|should|can|are\s+to)\s+)?only\s+`+verb+`\s+(.+)$`,
		lead+verb+`\s+only\s+(.+)$`,
		lead+changes+`\s+(?:(?:are|is|must\s+be|should\s+be|shall\s+be|will\s+be|stays?|must\s+stay|should\s+stay|remains?|must\s+remain|should\s+remain)\s+)?(?:limited|restricted|confined|scoped)\s+to\s+(.+)$`,
		lead+changes+`\s+(?:(?:must|should)\s+)?(?:stays?|be|are|remains?)\s+(?:with)?in\s+(.+)$`,
		lead+`(?:touch|change|modify|edit)\s+nothing\s+`+outside+`(.+)$`,
		lead+subj+neg+`\s+`+verb+`\s+(?:(?:anything|any\s+files?|files?|any\s+code|code)\s+)?`+outside+`(.+)$`,
		lead+`(?:no|zero)\s+(?:changes?|edits?|modifications?)\s+`+outside+`(.+)$`,
		lead+`(?:nothing|no\s+files?)\s+`+outside+`(.+?)\s+(?:(?:may|must|should|shall|can|will)\s+)?(?:change|be\s+`+beDone+`)$`,
		lead+`only\s+(.+?)\s+(?:may|can|should|must|is\s+allowed\s+to|are\s+allowed\s+to)\s+(?:change|be\s+`+beDone+`)$`,
	)
	// nothingRes forbid any change.
	nothingRes = compile(
		lead+subj+neg+`\s+`+verb+`\s+`+repo+`$`,
		lead+`(?:make|commit)\s+no\s+changes$`,
		lead+`(?:change|touch|modify|edit)\s+nothing$`,
		lead+`no\s+files?\s+(?:(?:may|must|should|shall|will|are|is)\s+)?(?:be\s+)?(?:change|changed|modified|touched|edited)$`,
		lead+`nothing\s+(?:may|must|should|shall|will)\s+(?:change|be\s+changed)$`,
		lead+`(?:leave|keep)\s+(?:everything|all\s+files|(?:the|this)\s+(?:repo|repository|codebase|working\s+tree|work\s+tree|tree|checkout))\s+(?:unchanged|untouched|as\s+is|intact)$`,
		lead+`(?:this\s+is\s+)?(?:an?\s+)?read[-\s]only(?:\s+(?:task|job|investigation))?$`,
	)
	// noChangesRes say no change is expected, without forbidding one.
	noChangesRes = compile(
		lead+`no\s+(?:file\s+|code\s+)?changes?\s+(?:(?:are|is)\s+)?(?:expected|needed|required|necessary|anticipated)$`,
		lead+`nothing\s+(?:needs|has)\s+to\s+(?:change|be\s+changed)$`,
	)
	// coverCmdRes: group 1 is a command that must pass.
	coverCmdRes = compile(
		lead+`(?:running\s+)?`+"`([^`]+)`"+`\s+(?:(?:still|also)\s+)?(?:(?:must|should|shall|will|has\s+to|needs\s+to|is\s+to)\s+(?:still\s+)?)?(?:pass(?:es)?|succeeds?|exits?\s+(?:with\s+)?(?:status\s+|code\s+)?(?:0|zero)|returns?\s+(?:0|zero)|(?:is|are)\s+(?:green|passing|clean)|runs?\s+clean(?:ly)?|works)(?:\s+(?:cleanly|again|on\s+the\s+(?:head\s+)?commit|without\s+(?:errors|failures)))?$`,
		lead+`(?:make|get)\s+`+"`([^`]+)`"+`\s+pass$`,
	)
	// coverTestsRes: the tests (or the verify command) pass.
	coverTestsRes = compile(
		lead+`(?:(?:all|the)\s+)*(?:(?:existing|unit|current|other)\s+)?tests?(?:\s+suite)?\s+(?:(?:still|also)\s+)?(?:(?:must|should|shall|will)\s+(?:still\s+)?)?(?:pass(?:es)?|succeeds?|(?:are|is)\s+(?:passing|green)|keeps?\s+passing|continues?\s+to\s+pass)$`,
		lead+`(?:make|keep)\s+(?:(?:all|the)\s+)*tests\s+pass(?:ing)?$`,
		lead+`(?:the\s+)?verify(?:\s+(?:command|step|check))?\s+(?:(?:must|should)\s+)?(?:pass(?:es)?|succeeds?|exits?\s+0)$`,
	)
	withoutRe = regexp.MustCompile(`(?i)^(.*?)[\s,;]*\bwithout\s+(?:changing|modifying|touching|editing|altering|updating)\s+(.+)$`)

	// guardRe finds words that make a sentence conditional or soft; such a
	// sentence is a judgement whatever else it says.
	guardRe = regexp.MustCompile(`(?i)\b(?:if|unless|except|excepting|when|whenever|until|once|other\s+than|apart\s+from|besides|where\s+possible|as\s+needed|ideally|preferably|prefer|try|avoid|unnecessarily|needlessly)\b`)
	trailRe = regexp.MustCompile(`(?i)\s+(?:at\s+all|in\s+any\s+way|whatsoever)$`)
	spaceRe = regexp.MustCompile(`\s+`)
}

func compile(exprs ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(exprs))
	for i, e := range exprs {
		out[i] = regexp.MustCompile(e)
	}
	return out
}

// recognise turns one sentence into parts: a single judgement unless the
// sentence, or a clause of it, is mechanically checkable.
func recognise(sentence, verify string) []part {
	compilePatterns()
	sentence = strings.TrimSpace(sentence)
	t := clean(sentence)
	if t == "" {
		return nil
	}
	if guardRe.MatchString(maskPaths(t)) {
		return []part{{kind: KindJudgement, text: sentence}}
	}
	if p, ok := whole(t, verify); ok {
		p.text = sentence
		return []part{p}
	}
	if len(t) <= maxClauseSplit {
		if parts, ok := clauses(t, verify); ok {
			return parts
		}
	}
	return []part{{kind: KindJudgement, text: sentence}}
}

// maxClauseSplit bounds the sentences split into clauses (bytes): a rule is
// short, and splitting costs a match per cut.
const maxClauseSplit = 600

// clauses splits t around a recognised clause: "… without changing X", or
// "…; <clause>", "…, but <clause>", "… and <clause>" and the like (the
// longest trailing clause that matches), else "<clause>, and …" (the
// longest leading one). The rest is recognised in turn.
func clauses(t, verify string) ([]part, bool) {
	compilePatterns()
	if m := withoutRe.FindStringSubmatch(t); m != nil {
		if paths, ok := parsePaths(m[2]); ok {
			last := part{kind: KindUnchanged, text: strings.TrimLeft(t[len(m[1]):], " ,;"), paths: paths}
			if strings.TrimSpace(m[1]) == "" {
				return []part{last}, true
			}
			return append(rest(m[1], verify), last), true
		}
	}
	cuts := clauseCuts(t)
	for _, cut := range cuts {
		right := t[cut.end:]
		if p, ok := whole(right, verify); ok {
			p.text = right
			return append(rest(t[:cut.start], verify), p), true
		}
	}
	// Else a leading clause, the longest that matches: "do not change
	// go.mod and go.sum, and add a test".
	for i := len(cuts) - 1; i >= 0; i-- {
		left := clean(t[:cuts[i].start])
		if p, ok := whole(left, verify); ok {
			p.text = left
			return append([]part{p}, rest(t[cuts[i].end:], verify)...), true
		}
	}
	return nil, false
}

// rest recognises the part of a sentence around a recognised clause.
func rest(s, verify string) []part {
	s = clean(strings.TrimRight(s, " ,;—-"))
	if s == "" {
		return nil
	}
	if p, ok := whole(s, verify); ok {
		p.text = s
		return []part{p}
	}
	if parts, ok := clauses(s, verify); ok {
		return parts
	}
	return []part{{kind: KindJudgement, text: s}}
}

type cut struct{ start, end int }

var clauseSeps = []string{"; ", ", but ", " but ", ", and ", " and ", ", ", " — ", " - "}

// clauseCuts lists where t may be split into clauses, left to right,
// outside backquotes.
func clauseCuts(t string) []cut {
	var cuts []cut
	inTick := false
	for i := 0; i < len(t); i++ {
		if t[i] == '`' {
			inTick = !inTick
			continue
		}
		if inTick || i == 0 {
			continue
		}
		for _, sep := range clauseSeps {
			if len(t)-i >= len(sep) && strings.EqualFold(t[i:i+len(sep)], sep) {
				cuts = append(cuts, cut{i, i + len(sep)})
			}
		}
	}
	return cuts
}

// whole recognises t as a whole: the part and true, or false when t is
// not mechanically checkable (nor a "no changes expected" statement).
func whole(t, verify string) (part, bool) {
	compilePatterns()
	t = clean(t)
	if matchAny(nothingRes, t) {
		return part{kind: KindUnchanged, paths: []string{everything}, noChanges: true}, true
	}
	if matchAny(noChangesRes, t) {
		return part{kind: KindJudgement, noChanges: true, expects: true}, true
	}
	if verify != "" {
		if matchAny(coverTestsRes, t) {
			return part{kind: KindVerify}, true
		}
		for _, re := range coverCmdRes {
			if m := re.FindStringSubmatch(t); m != nil && coveredBy(m[1], verify) {
				return part{kind: KindVerify}, true
			}
		}
	}
	for _, rs := range []struct {
		kind Kind
		res  []*regexp.Regexp
	}{{KindOnly, onlyRes}, {KindUnchanged, unchangedRes}} {
		for _, re := range rs.res {
			m := re.FindStringSubmatch(t)
			if m == nil {
				continue
			}
			if paths, ok := parsePaths(m[1]); ok {
				return part{kind: rs.kind, paths: paths}, true
			}
		}
	}
	return part{}, false
}

func matchAny(res []*regexp.Regexp, t string) bool {
	for _, re := range res {
		if re.MatchString(t) {
			return true
		}
	}
	return false
}

// clean normalises a sentence for matching: plain quotes, no bold markers,
// single spaces, no trailing punctuation or "at all".
func clean(s string) string {
	compilePatterns()
	s = strings.NewReplacer("’", "'", "‘", "'", "“", `"`, "”", `"`).Replace(s)
	s = stripBold(s)
	s = strings.TrimSpace(spaceRe.ReplaceAllString(s, " "))
	s = strings.TrimRight(s, ".!;:, ")
	return trailRe.ReplaceAllString(s, "")
}

// stripBold removes "**" emphasis outside backquotes, but not a "**" glob
// segment (one next to a "/").
func stripBold(s string) string {
	if !strings.Contains(s, "**") {
		return s
	}
	var b strings.Builder
	inTick := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '`' {
			inTick = !inTick
		}
		if !inTick && c == '*' && i+1 < len(s) && s[i+1] == '*' {
			before := i > 0 && s[i-1] == '/'
			after := i+2 < len(s) && s[i+2] == '/'
			if !before && !after {
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// maskPaths blanks backquoted spans and path-like words, so that a file
// named if.go does not read as the word "if".
func maskPaths(t string) string {
	var b strings.Builder
	inTick := false
	for _, w := range strings.Fields(t) {
		masked := inTick || strings.Contains(w, "`") || strings.ContainsAny(strings.Trim(w, `,;:()"'`), "/.*")
		if strings.Count(w, "`")%2 == 1 {
			inTick = !inTick
		}
		if masked {
			w = "_"
		}
		b.WriteString(w)
		b.WriteByte(' ')
	}
	return b.String()
}

// coveredBy reports whether cmd passing is implied by verify exiting 0:
// cmd is verify, or one step of a plain "a && b && c" chain.
func coveredBy(cmd, verify string) bool {
	c, v := strings.Join(strings.Fields(cmd), " "), strings.Join(strings.Fields(verify), " ")
	if c == "" || v == "" {
		return false
	}
	if c == v {
		return true
	}
	if strings.ContainsAny(strings.ReplaceAll(v, "&&", ""), "|;&()`$\n") {
		return false
	}
	for _, step := range strings.Split(v, "&&") {
		if strings.Join(strings.Fields(step), " ") == c {
			return true
		}
	}
	return false
}

// fillers may appear among the paths of a rule without changing its sense.
var fillers = map[string]bool{
	"the": true, "a": true, "an": true, "any": true, "anything": true, "all": true,
	"file": true, "files": true, "directory": true, "directories": true, "dir": true,
	"dirs": true, "folder": true, "folders": true, "path": true, "paths": true,
	"tree": true, "subtree": true, "contents": true, "content": true, "package": true,
	"packages": true, "of": true, "in": true, "under": true, "within": true,
	"inside": true, "below": true, "these": true, "those": true, "this": true,
	"following": true, "existing": true, "either": true, "both": true,
	"and": true, "or": true, "nor": true, "&": true, "plus": true,
}

// parsePaths reads a list of paths or globs ("`a.go`, b/ and c/*.md"),
// allowing filler words; anything else makes it fail.
func parsePaths(s string) ([]string, bool) {
	var paths []string
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r) || r == ',':
			i++
		case r == '`' || r == '"' || r == '\'':
			j := i + 1
			for j < len(rs) && rs[j] != r {
				j++
			}
			if j == len(rs) {
				return nil, false
			}
			p, ok := pathToken(string(rs[i+1:j]), true)
			if !ok {
				return nil, false
			}
			paths = append(paths, p)
			i = j + 1
		default:
			j := i
			for j < len(rs) && !unicode.IsSpace(rs[j]) && rs[j] != ',' {
				j++
			}
			w := strings.TrimRight(string(rs[i:j]), ":;")
			i = j
			if fillers[strings.ToLower(w)] {
				continue
			}
			p, ok := pathToken(w, false)
			if !ok {
				return nil, false
			}
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil, false
	}
	return dedupe(paths), true
}

var versionRe = regexp.MustCompile(`^[vV]?\d+(?:\.\d+)+$`)

// pathToken checks that w is a repository-relative path or glob and returns
// it without a leading "./". A plain (unquoted) word must look like a path:
// contain "/", "." or "*", and not end in ".".
func pathToken(w string, quoted bool) (string, bool) {
	for strings.HasPrefix(w, "./") {
		w = w[2:]
	}
	if w == "" || w == "." || strings.HasPrefix(w, "/") || strings.HasPrefix(w, "-") ||
		strings.HasPrefix(w, "~") || strings.Contains(w, "//") {
		return "", false
	}
	alnum := false
	for _, r := range w {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			alnum = true
		case r == '*':
			alnum = true
		case strings.ContainsRune("_-./?[]@+=", r):
		default:
			return "", false
		}
	}
	if !alnum {
		return "", false
	}
	if !quoted && (!strings.ContainsAny(w, "/.*") || strings.HasSuffix(w, ".") || versionRe.MatchString(w)) {
		return "", false
	}
	for _, seg := range strings.Split(strings.TrimSuffix(w, "/"), "/") {
		if seg == ".." || seg == "." {
			return "", false
		}
		if _, err := path.Match(seg, ""); err != nil {
			return "", false
		}
	}
	return w, true
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	out := ss[:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
