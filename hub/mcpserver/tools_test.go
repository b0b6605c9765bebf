package mcpserver

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxToolsListBytes is the budget for the whole tools/list answer, and
// maxModelBytes for what the model reads of it (each tool's name,
// description and input schema, as `make bench` counts it). Their target
// is at most half of cc-delegate's (10,930 and 8,594 bytes); these keep a
// change from growing either unnoticed. Thirteen tools took 5,297 and 4,273
// bytes once step came: the supervisor tools' annotation titles went (their
// one-word names are what people read) with the descriptions that said no
// more than a name.
const (
	maxToolsListBytes = 5350
	maxModelBytes     = 4297
)

func TestToolsList(t *testing.T) {
	isolate(t)
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			cs := connect(t, New(&fakeDaemon{}, Options{}), v, nil)
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			type ann struct {
				Title                string
				ReadOnly, Idempotent bool
				Destructive          *bool
			}
			got := map[string]ann{}
			for _, tl := range res.Tools {
				a := ann{}
				if tl.Annotations != nil {
					a = ann{tl.Annotations.Title, tl.Annotations.ReadOnlyHint, tl.Annotations.IdempotentHint, tl.Annotations.DestructiveHint}
				}
				got[tl.Name] = a
			}
			yes, no := true, false
			want := map[string]ann{
				"start":      {Destructive: &no},
				"start_many": {Destructive: &no},
				"wait":       {ReadOnly: true, Idempotent: true},
				"status":     {ReadOnly: true, Idempotent: true},
				"result":     {ReadOnly: true, Idempotent: true},
				"reply":      {Destructive: &no},
				"steer":      {Destructive: &no},
				"stop":       {Destructive: &yes, Idempotent: true},
				"land":       {Destructive: &no},
				"cleanup":    {Destructive: &yes, Idempotent: true},
				"engines":    {ReadOnly: true, Idempotent: true},
				"profiles":   {Destructive: &yes, Idempotent: true},
				"step":       {Destructive: &no},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tools and annotations (-want +got):\n%s", diff)
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range res.Tools {
				one, _ := json.Marshal(tl)
				names = append(names, tl.Name)
				t.Logf("%-10s %5d bytes %s", tl.Name, len(one), one)
			}
			sort.Strings(names)
			var model []any
			for _, tl := range res.Tools {
				model = append(model, map[string]any{"name": tl.Name, "description": tl.Description, "inputSchema": tl.InputSchema})
			}
			mb, err := json.Marshal(model)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("tools/list: %d tools, %d bytes, %d of them what the model reads", len(res.Tools), len(b), len(mb))
			if len(b) > maxToolsListBytes {
				t.Errorf("tools/list is %d bytes; the budget is %d", len(b), maxToolsListBytes)
			}
			if len(mb) > maxModelBytes {
				t.Errorf("what the model reads of tools/list is %d bytes; the budget is %d", len(mb), maxModelBytes)
			}
		})
	}
}

func TestInstructions(t *testing.T) {
	isolate(t)
	cs := connect(t, New(&fakeDaemon{}, Options{Version: "v1.2.3"}), versions[1], nil)
	init := cs.InitializeResult()
	if init.ServerInfo.Name != "hub" || init.ServerInfo.Version != "v1.2.3" {
		t.Errorf("server info %+v", init.ServerInfo)
	}
	if n := len(splitWords(init.Instructions)); n < 40 || n > 110 {
		t.Errorf("instructions have %d words:\n%s", n, init.Instructions)
	}
	t.Logf("instructions: %d words, %d bytes", len(splitWords(init.Instructions)), len(init.Instructions))
	_ = mcp.Implementation{}
}
