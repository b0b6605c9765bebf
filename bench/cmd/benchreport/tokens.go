package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The peers' tool lists, written down as facts (names, parameters, their
// types and defaults, and how long each description is) rather than
// copied: render turns them into what their SDK sends.
//
//go:embed peers/*.json
var peerFiles embed.FS

// peer is one fixture.
type peer struct {
	Peer   string `json:"peer"`
	Source string `json:"source"`
	// OutputSchema: the SDK publishes one per tool (FastMCP does for an
	// annotated return, `-> str` included).
	OutputSchema bool              `json:"output_schema"`
	Tools        []peerTool        `json:"tools"`
	Covers       map[string]string `json:"covers"` // capability → tool or tool.param
}

type peerTool struct {
	Name             string      `json:"name"`
	DescriptionBytes int         `json:"description_bytes"`
	Params           []peerParam `json:"params"`
}

type peerParam struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // str, int, float, bool, list[str], list[dict]
	Optional bool   `json:"optional,omitempty"`
	Default  any    `json:"default,omitempty"`
}

// capabilities is what a supervisor can do through a tool list, in the
// order the report lists them. A list covers one when the tool or the
// parameter its fixture (or, for hub, hubCovers) names is in it.
var capabilities = []struct{ key, what string }{
	{"start", "start a job"},
	{"start_many", "start several in one call"},
	{"wait", "block until jobs end, in one call"},
	{"status", "one job's state, cheaply"},
	{"progress", "what a running job is doing now"},
	{"result", "the outcome's summary"},
	{"evidence", "what the tool observed, apart from what the worker said"},
	{"verify", "the caller's check command"},
	{"definition_of_done", "a definition of done to grade against"},
	{"budget", "a spending cap per job"},
	{"timeout", "a time limit per job"},
	{"base", "the revision to start from"},
	{"engine_choice", "which engine or model runs it"},
	{"isolation", "an isolation level, refused if not available"},
	{"read_jobs", "read-only jobs, without a branch"},
	{"answer", "answer a worker's question"},
	{"follow_up", "continue a job with a new message"},
	{"steer", "redirect a running worker"},
	{"stop", "stop a job, keeping its work"},
	{"cleanup", "remove a job's worktree"},
	{"engines", "engines' capacity and spend"},
	{"profiles", "manage worker model profiles"},
	{"key_by_elicitation", "store an API key asked from the user"},
	{"oauth_device_flow", "log a provider in by OAuth device flow"},
	{"narrate", "a second model narrates a step"},
	{"conflict_forecast", "conflicts between parallel jobs foreseen while they run"},
	{"review_batch", "a batch's review packet in one call"},
	{"land", "land work on a branch, checked on the integrated commit"},
}

// hubCovers maps capabilities to hub's tools and parameters; each is
// checked against the live tools/list, so dropping a parameter drops the
// capability from the count.
var hubCovers = map[string]string{
	"start": "start", "start_many": "start_many", "wait": "wait", "status": "status",
	"progress": "status", // its line ends with the worker's latest note while it runs
	"result":   "result", "evidence": "result.evidence", "verify": "start.verify",
	"definition_of_done": "start.definition_of_done", "budget": "start.max_usd", "timeout": "start.timeout_s",
	"base": "start.base", "engine_choice": "start.engine", "isolation": "start.isolation", "read_jobs": "start.kind",
	"answer": "reply", "steer": "steer", "stop": "stop", "cleanup": "cleanup", "engines": "engines", "profiles": "profiles",
	"conflict_forecast": "wait", // its lines say "conflicts with hub/x in a.go" while jobs run
	"review_batch":      "result.ids", "land": "land",
	"narrate": "step", // a cheap model's account of the supervisor's own step, checked against the repository
}

func loadPeers() ([]*peer, error) {
	names, err := peerFiles.ReadDir("peers")
	if err != nil {
		return nil, err
	}
	var ps []*peer
	for _, n := range names {
		b, err := peerFiles.ReadFile("peers/" + n.Name())
		if err != nil {
			return nil, err
		}
		p := new(peer)
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(p); err != nil {
			return nil, fmt.Errorf("peers/%s: %w", n.Name(), err)
		}
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Peer < ps[j].Peer })
	return ps, nil
}

// render is the peer's tools/list result as FastMCP (pydantic) writes it:
// each parameter titled, optional ones as anyOf with null, the arguments
// object titled <tool>Arguments, a `-> str` output wrapped as
// <tool>Output.result, and each description as many bytes as theirs.
func (p *peer) render() (map[string]any, error) {
	var tools []any
	for _, t := range p.Tools {
		props := map[string]any{}
		var required []string
		for _, pr := range t.Params {
			base, err := pyType(pr.Type)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", t.Name, pr.Name, err)
			}
			title := pyTitle(pr.Name)
			switch {
			case pr.Optional:
				props[pr.Name] = map[string]any{"anyOf": []any{base, map[string]any{"type": "null"}}, "default": nil, "title": title}
			case pr.Default != nil:
				base["default"], base["title"] = pr.Default, title
				props[pr.Name] = base
			default:
				base["title"] = title
				props[pr.Name] = base
				required = append(required, pr.Name)
			}
		}
		in := map[string]any{"properties": props, "title": t.Name + "Arguments", "type": "object"}
		if len(required) > 0 {
			in["required"] = required
		}
		tool := map[string]any{"name": t.Name, "description": filler(t.DescriptionBytes), "inputSchema": in}
		if p.OutputSchema {
			tool["outputSchema"] = map[string]any{"properties": map[string]any{"result": map[string]any{"title": "Result", "type": "string"}},
				"required": []string{"result"}, "title": t.Name + "Output", "type": "object"}
		}
		tools = append(tools, tool)
	}
	return map[string]any{"tools": tools}, nil
}

func pyType(t string) (map[string]any, error) {
	switch t {
	case "str":
		return map[string]any{"type": "string"}, nil
	case "int":
		return map[string]any{"type": "integer"}, nil
	case "float":
		return map[string]any{"type": "number"}, nil
	case "bool":
		return map[string]any{"type": "boolean"}, nil
	case "list[str]":
		return map[string]any{"items": map[string]any{"type": "string"}, "type": "array"}, nil
	case "list[dict]":
		return map[string]any{"items": map[string]any{"additionalProperties": true, "type": "object"}, "type": "array"}, nil
	}
	return nil, fmt.Errorf("type %q is not one the fixture format knows", t)
}

// pyTitle is pydantic's default title: "repo_path" → "Repo Path".
func pyTitle(name string) string {
	w := strings.Split(name, "_")
	for i, s := range w {
		if s != "" {
			w[i] = strings.ToUpper(s[:1]) + s[1:]
		}
	}
	return strings.Join(w, " ")
}

// filler is n bytes of plain text, standing in for a description of that length.
func filler(n int) string {
	s := strings.Repeat("lorem ipsum ", n/12+1)
	return s[:n]
}

// covered lists which capabilities a tools/list covers, by the names in m.
func covered(list map[string]any, m map[string]string) ([]string, error) {
	params := map[string]bool{}
	tools, _ := list["tools"].([]any)
	for _, t := range tools {
		tm := t.(map[string]any)
		name := tm["name"].(string)
		params[name] = true
		in, _ := tm["inputSchema"].(map[string]any)
		props, _ := in["properties"].(map[string]any)
		for p := range props {
			params[name+"."+p] = true
		}
	}
	var got []string
	for _, c := range capabilities {
		ref, ok := m[c.key]
		if !ok {
			continue
		}
		if !params[ref] {
			return nil, fmt.Errorf("capability %s names %s, which the tool list does not have", c.key, ref)
		}
		got = append(got, c.key)
	}
	for k := range m {
		if !knownCapability(k) {
			return nil, fmt.Errorf("capability %q is not in the list", k)
		}
	}
	return got, nil
}

func knownCapability(k string) bool {
	for _, c := range capabilities {
		if c.key == k {
			return true
		}
	}
	return false
}

// modelFacing is what a client passes its model of each tool: name,
// description and input schema; annotations and output schemas stay with
// the client.
func modelFacing(list map[string]any) []any {
	var out []any
	tools, _ := list["tools"].([]any)
	for _, t := range tools {
		tm := t.(map[string]any)
		out = append(out, map[string]any{"name": tm["name"], "description": tm["description"], "inputSchema": tm["inputSchema"]})
	}
	return out
}

func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return len(b)
}

func toks(n int) int { return (n + 3) / 4 }

// listSizes is one tool list's measures.
type listSizes struct {
	name          string
	tools         int
	wire, model   int
	covers        []string
	instructions  int
	source        string
	outputSchemas bool
}

func tokensSection(ctx context.Context, e *env) (*section, error) {
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(e.bin, "mcp")}, nil)
	if err != nil {
		return nil, fmt.Errorf("hub mcp: %w", err)
	}
	defer cs.Close()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var hubList map[string]any
	b, _ := json.Marshal(lt)
	if err := json.Unmarshal(b, &hubList); err != nil {
		return nil, err
	}
	hubCov, err := covered(hubList, hubCovers)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	hub := listSizes{name: "hub", tools: len(lt.Tools), wire: len(b), model: jsonSize(modelFacing(hubList)), covers: hubCov,
		instructions: len(cs.InitializeResult().Instructions), source: "live: `hub mcp`, through the Go MCP SDK's client"}
	all := []listSizes{hub}
	peers, err := loadPeers()
	if err != nil {
		return nil, err
	}
	for _, p := range peers {
		l, err := p.render()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Peer, err)
		}
		cov, err := covered(l, p.Covers)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Peer, err)
		}
		all = append(all, listSizes{name: p.Peer, tools: len(p.Tools), wire: jsonSize(l), model: jsonSize(modelFacing(l)), covers: cov,
			source: p.Source, outputSchemas: p.OutputSchema})
	}
	var cc listSizes
	for _, l := range all {
		if l.name == "cc-delegate" {
			cc = l
		}
	}
	if cc.name == "" {
		return nil, fmt.Errorf("no cc-delegate fixture")
	}

	// A standard delegation: start, wait, result, through the same session.
	cycle, err := delegationCycle(ctx, cs, e.repos[100])
	if err != nil {
		return nil, err
	}

	sec := &section{title: "1. Supervisor tokens per delegation"}
	var t strings.Builder
	t.WriteString("| tool list | tools | capabilities covered | `tools/list` bytes (≈ tokens) | what the model reads: name, description, input schema (≈ tokens) |\n|---|---|---|---|---|\n")
	for _, l := range all {
		fmt.Fprintf(&t, "| %s | %d | %d of %d | %d (%d) | %d (%d) |\n", l.name, l.tools, len(l.covers), len(capabilities), l.wire, toks(l.wire), l.model, toks(l.model))
	}
	fmt.Fprintf(&t, "\nhub's `initialize` also carries %d bytes (≈ %d tokens) of server instructions, which clients add to the supervisor's context once per session; cc-delegate sends none and ships a skill file instead.\n", hub.instructions, toks(hub.instructions))
	t.WriteString("\n| one delegation, through `hub mcp` | bytes on the wire | of which text content (≈ tokens) |\n|---|---|---|\n")
	total, totalText := 0, 0
	for _, c := range cycle {
		fmt.Fprintf(&t, "| `%s` | %d | %d (%d) |\n", c.call, c.wire, c.text, toks(c.text))
		if !c.optional {
			total += c.wire
			totalText += c.text
		}
	}
	fmt.Fprintf(&t, "| **start → wait → result** | **%d** | **%d (%d)** |\n", total, totalText, toks(totalText))
	t.WriteString("\n| capability | hub | cc-delegate | subtask |\n|---|---|---|---|\n")
	has := func(l listSizes, k string) string {
		for _, c := range l.covers {
			if c == k {
				return "yes"
			}
		}
		return "—"
	}
	byName := map[string]listSizes{}
	for _, l := range all {
		byName[l.name] = l
	}
	for _, c := range capabilities {
		fmt.Fprintf(&t, "| %s | %s | %s | %s |\n", c.what, has(hub, c.key), has(byName["cc-delegate"], c.key), has(byName["subtask"], c.key))
	}
	sec.extra = t.String()

	wireRatio := float64(hub.wire) / float64(cc.wire)
	modelRatio := float64(hub.model) / float64(cc.model)
	more := len(hub.covers) > len(cc.covers)
	ok := wireRatio <= 0.5 && modelRatio <= 0.5 && more
	sec.figs = []*figure{{name: "`tools/list`, hub against cc-delegate", unit: "×", samples: []float64{wireRatio},
		target: "≤ 0.5× while covering more", pass: boolp(ok),
		note: fmt.Sprintf("%.2f× on the wire, %.2f× of what the model reads; hub covers %d capabilities, cc-delegate %d", wireRatio, modelRatio, len(hub.covers), len(cc.covers))}}
	for _, l := range all[1:] {
		sec.notes = append(sec.notes, fmt.Sprintf("%s's fixture: %s", l.name, l.source))
	}
	var bars []group
	for _, g := range []struct {
		label string
		v     func(listSizes) int
	}{{"tools/list on the wire", func(l listSizes) int { return l.wire }}, {"what the model reads", func(l listSizes) int { return l.model }}} {
		gr := group{Label: g.label}
		for _, l := range all {
			v := float64(g.v(l))
			gr.Bars = append(gr.Bars, bar{Series: l.name, P50: v, Lo: v, Hi: v})
		}
		bars = append(bars, gr)
	}
	sec.plots = []plot{{file: "tools-list.svg", alt: "tools/list size: hub against cc-delegate and subtask",
		c: chart{Title: "Tool list size (bytes; tokens ≈ bytes / 4)", Unit: "bytes", Groups: bars}}}
	sec.how = fmt.Sprintf(`Sizes are bytes of compact JSON, and tokens are estimated as bytes / 4 (no tokenizer: the
estimate is the same for every list, so the ratios hold). hub's list is read live from `+"`hub mcp`"+` with the Go
MCP SDK's client. The peers' lists are rendered from fixtures in bench/cmd/benchreport/peers/, written from the
facts of their sources (tool names, parameters, types, defaults, and each description's length in bytes; the text
itself is a filler of that length), in the shape their SDK sends: FastMCP titles every parameter, writes an
optional one as `+"`anyOf`"+` with null, titles the arguments object, and%s publishes an output schema for a `+"`-> str`"+`
tool. "What the model reads" keeps only each tool's name, description and input schema, which is what clients
put in the model's context; annotations and output schemas stay with the client. The target is checked on both.
Capabilities are counted from the list itself: each maps to a tool or a parameter, which must be present.
The delegation is an exec job (`+"`echo done > out.txt`"+`, verify `+"`test -f out.txt`"+`) on the 100-file repo:
the bytes of each tool result as the server sent it (text content plus structured content), and of its
text content alone; `+"`result`"+` with evidence is shown for when the supervisor asks for it, and not counted.`,
		map[bool]string{true: "", false: " (when the fixture says so)"}[cc.outputSchemas])
	return sec, nil
}

type cycleCall struct {
	call       string
	wire, text int
	optional   bool
}

// delegationCycle runs start → wait → result (and result with evidence)
// through an MCP session and measures each answer.
func delegationCycle(ctx context.Context, cs *mcp.ClientSession, repo string) ([]cycleCall, error) {
	call := func(name string, args map[string]any) (*mcp.CallToolResult, cycleCall, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return nil, cycleCall{}, fmt.Errorf("%s: %w", name, err)
		}
		if res.IsError {
			return nil, cycleCall{}, fmt.Errorf("%s: %s", name, textOf(res))
		}
		return res, cycleCall{call: name, wire: jsonSize(res), text: len(textOf(res))}, nil
	}
	res, c1, err := call("start", map[string]any{"task": "write out.txt", "repo": repo, "engine": "exec",
		"exec": "echo done > out.txt", "verify": "test -f out.txt"})
	if err != nil {
		return nil, err
	}
	id := strings.Fields(textOf(res))[0]
	_, c2, err := call("wait", map[string]any{"ids": []string{id}, "timeout_s": 120})
	if err != nil {
		return nil, err
	}
	c2.call = "wait"
	_, c3, err := call("result", map[string]any{"id": id})
	if err != nil {
		return nil, err
	}
	_, c4, err := call("result", map[string]any{"id": id, "evidence": true})
	if err != nil {
		return nil, err
	}
	c4.call, c4.optional = "result` with `evidence: true", true
	st, _, err := call("status", map[string]any{"id": id})
	if err != nil {
		return nil, err
	}
	if !strings.Contains(textOf(st), "succeeded") {
		return nil, fmt.Errorf("bench delegation did not succeed: %s", textOf(st))
	}
	return []cycleCall{c1, c2, c3, c4}, nil
}

func textOf(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
