package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPeerFixtures: every fixture loads strictly, renders, and names only
// tools and parameters it has for the capabilities it claims.
func TestPeerFixtures(t *testing.T) {
	ps, err := loadPeers()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Peer != "cc-delegate" || ps[1].Peer != "subtask" {
		t.Fatalf("peers: %v", ps)
	}
	for _, p := range ps {
		l, err := p.render()
		if err != nil {
			t.Fatalf("%s: %v", p.Peer, err)
		}
		if _, err := covered(l, p.Covers); err != nil {
			t.Errorf("%s: %v", p.Peer, err)
		}
		if got := len(l["tools"].([]any)); got != len(p.Tools) {
			t.Errorf("%s: rendered %d tools of %d", p.Peer, got, len(p.Tools))
		}
	}
	if n := len(ps[0].Tools); n != 16 {
		t.Errorf("cc-delegate has 16 tools (8 delegation, 8 configuration); the fixture has %d", n)
	}
}

// TestRenderFastMCP pins the shape FastMCP gives a tool: titled
// parameters, anyOf with null for an optional one, a default kept, the
// arguments object titled, and the wrapped `-> str` output.
func TestRenderFastMCP(t *testing.T) {
	p := &peer{Peer: "x", OutputSchema: true, Tools: []peerTool{{Name: "get_task_progress", DescriptionBytes: 5, Params: []peerParam{
		{Name: "task_id", Type: "str"}, {Name: "activity_limit", Type: "int", Default: 12.0}, {Name: "base_branch", Type: "str", Optional: true}}}}}
	l, err := p.render()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(l)
	want := `{"tools":[{"description":"lorem","inputSchema":{"properties":{"activity_limit":{"default":12,"title":"Activity Limit","type":"integer"},` +
		`"base_branch":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"Base Branch"},"task_id":{"title":"Task Id","type":"string"}},` +
		`"required":["task_id"],"title":"get_task_progressArguments","type":"object"},"name":"get_task_progress",` +
		`"outputSchema":{"properties":{"result":{"title":"Result","type":"string"}},"required":["result"],"title":"get_task_progressOutput","type":"object"}}]}`
	if string(b) != want {
		t.Errorf("rendered\n%s\nwant\n%s", b, want)
	}
	if _, err := (&peer{Tools: []peerTool{{Name: "t", Params: []peerParam{{Name: "a", Type: "tuple"}}}}}).render(); err == nil {
		t.Error("an unknown type rendered")
	}
}

func TestCoveredRefusesMissingNames(t *testing.T) {
	l := map[string]any{"tools": []any{map[string]any{"name": "start", "inputSchema": map[string]any{"properties": map[string]any{"task": map[string]any{}}}}}}
	got, err := covered(l, map[string]string{"start": "start"})
	if err != nil || strings.Join(got, ",") != "start" {
		t.Errorf("covered = %v, %v", got, err)
	}
	if _, err := covered(l, map[string]string{"budget": "start.max_usd"}); err == nil {
		t.Error("a parameter the list lacks counted")
	}
	if _, err := covered(l, map[string]string{"teleport": "start"}); err == nil {
		t.Error("an unknown capability counted")
	}
	if filler(30) != "lorem ipsum lorem ipsum lorem " || len(filler(708)) != 708 {
		t.Errorf("filler: %q", filler(30))
	}
}
