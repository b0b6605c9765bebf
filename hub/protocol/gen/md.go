package gen

import (
	"bytes"
	_ "embed"
	"fmt"
	"go/constant"
	"strings"

	"github.com/hub-agents/hub/hub/protocol"
)

// guide is the hand-written half of docs/protocol.md: how to connect, frame,
// follow jobs and reconnect. The reference below it is generated.
//
//go:embed guide.md
var guide string

func (m *model) markdown() ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("<!-- %s -->\n\n", header)
	b.WriteString(strings.ReplaceAll(guide, "{{VERSION}}", protocol.Version))

	p("\n## Reference\n\nEverything below is generated from `hub/protocol`. Types link to their definitions; " +
		"a field marked optional may be absent from the JSON.\n")
	sections := []struct {
		title string
		keep  func(protocol.Spec) bool
	}{
		{"Requests (client → daemon)", func(s protocol.Spec) bool { return s.From == protocol.PartyClient }},
		{"Notifications (daemon → client)", func(s protocol.Spec) bool {
			return s.From == protocol.PartyDaemon && s.To == protocol.PartyClient
		}},
		{"Inside a job (worker, shim and daemon; a client never sends these)", func(s protocol.Spec) bool {
			return s.From != protocol.PartyClient && s.To != protocol.PartyClient
		}},
	}
	for _, sec := range sections {
		p("\n### %s\n", sec.title)
		for _, s := range protocol.Specs {
			if !sec.keep(s) {
				continue
			}
			kind := "request"
			if s.Notification {
				kind = "notification"
			}
			p("\n#### `%s`\n\n%s %s → %s. %s\n\n", s.Method, capital(kind), s.From, s.To, s.Doc)
			p("- params: %s\n", m.link(s.Params))
			if !s.Notification {
				p("- result: %s\n", m.link(s.Result))
				p("- effect: %s\n", effect(s))
			}
		}
	}

	p("\n### Constants\n")
	for _, g := range constGroups {
		p("\n#### %s\n\n%s\n\n| name | value | meaning |\n|---|---|---|\n", g.TS, g.Doc)
		for _, c := range m.src.constsWithPrefix(g.Prefix) {
			doc := c.doc
			if g.Prefix == "Method" || g.Prefix == "Notify" {
				doc = "see [`" + constant.StringVal(c.value) + "`](#" + anchor(constant.StringVal(c.value)) + ")"
			}
			p("| %s | `%s` | %s |\n", strings.TrimPrefix(c.name, g.Prefix), literal(c.value), cell(doc))
		}
	}

	p("\n### Types\n")
	for _, w := range m.types {
		p("\n#### %s\n\n", w.Name)
		if w.Doc != "" {
			p("%s\n\n", w.Doc)
		}
		if w.Union != nil {
			p("One of: %s.\n", strings.Join(tick(w.Union), ", "))
			continue
		}
		if len(w.Extends) > 0 {
			var ext []string
			for _, e := range w.Extends {
				ext = append(ext, m.linkTS(e))
			}
			p("Has the members of %s as well (absent when empty).\n\n", strings.Join(ext, ", "))
		}
		if len(w.Fields) == 0 {
			p("An empty object: `{}`.\n")
			continue
		}
		p("| field | type | | meaning |\n|---|---|---|---|\n")
		for _, f := range w.Fields {
			opt := ""
			if f.Optional {
				opt = "optional"
			}
			p("| `%s` | %s | %s | %s |\n", f.Name, m.linkTS(f.Type), opt, cell(f.Doc))
		}
	}
	return b.Bytes(), nil
}

// link names a spec's params or result, linked to its definition.
func (m *model) link(v any) string {
	if v == nil {
		return "none"
	}
	return m.linkTS(m.nameOf(v))
}

// linkTS links every hub type named in a TypeScript type expression.
func (m *model) linkTS(ts string) string {
	var out strings.Builder
	word := func(w string) {
		if _, ok := m.names[w]; ok {
			fmt.Fprintf(&out, "[%s](#%s)", w, strings.ToLower(w))
			return
		}
		out.WriteString("`" + w + "`")
	}
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			word(cur.String())
			cur.Reset()
		}
	}
	for _, r := range ts {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			cur.WriteRune(r)
			continue
		}
		flush()
		switch r {
		case '|':
			out.WriteString(" \\| ")
		case ' ':
		default:
			out.WriteRune(r)
		}
	}
	flush()
	return out.String()
}

func capital(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// cell keeps text inside one Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func tick(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "`" + s + "`"
	}
	return out
}

// anchor is the id GitHub gives a heading made of `text`.
func anchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		if r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// effect says what a request may change, from its Spec's flags.
func effect(s protocol.Spec) string {
	var parts []string
	switch {
	case s.ReadOnly:
		parts = append(parts, "read-only (sent again after a cut connection)")
	case s.Destructive:
		parts = append(parts, "destructive")
	default:
		parts = append(parts, "changes state")
	}
	if s.Idempotent {
		parts = append(parts, "idempotent")
	}
	return strings.Join(parts, ", ")
}
