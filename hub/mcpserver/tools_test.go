package mcpserver

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxToolsListBytes is the budget for the whole tools/list answer. `make
// bench` measures it against the peers' lists, whose target is at most half
// of cc-delegate's 10,930 bytes; this keeps a change from growing it
// unnoticed. It was 5,000 for eleven tools; land and result's ids (the
// review packet) took it to 5,439 after every description that said no
// more than its name was cut; result's trace (an integer: the step to read
// from) fit in by shortening result's own descriptions.
const maxToolsListBytes = 5450

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
			t.Logf("tools/list: %d tools, %d bytes", len(res.Tools), len(b))
			if len(b) > maxToolsListBytes {
				t.Errorf("tools/list is %d bytes; the budget is %d", len(b), maxToolsListBytes)
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
