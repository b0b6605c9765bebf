package install

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/mcpserver"
)

var update = flag.Bool("update", false, "rewrite the generated copies checked into the repository")

// repoRoot is the repository's top folder, the Claude Code plugin's root.
const repoRoot = "../.."

// The plugin's skill is the skill install writes; go test ./hub/install
// -update rewrites the copy after the skill changed.
func TestPluginSkillIsCurrent(t *testing.T) {
	path := filepath.Join(repoRoot, "skills", SkillName, "SKILL.md")
	if *update {
		if err := os.WriteFile(path, []byte(Skill()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Skill(), string(got)); diff != "" {
		t.Errorf("%s is stale; run go test ./hub/install -run TestPluginSkillIsCurrent -update (-want +got):\n%s", path, diff)
	}
}

// The plugin starts hub from the PATH, the way install's entry does from
// an absolute path.
func TestPluginManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, ".claude-plugin", "plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name        string                     `json:"name"`
		Description string                     `json:"description"`
		Version     string                     `json:"version"`
		MCPServers  map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Name != "hub" || m.Description == "" || m.Version == "" {
		t.Errorf("name %q, description %q, version %q: want hub and both set", m.Name, m.Description, m.Version)
	}
	if !sameJSON(m.MCPServers[ServerName], present(Claude.jsonEntry(Entry{Command: "hub", Args: []string{"mcp"}}))) {
		t.Errorf("mcpServers.hub = %s, want Claude Code's entry for hub mcp", m.MCPServers[ServerName])
	}
}

type noDaemon struct{}

func (noDaemon) Call(context.Context, string, any, any) error { return nil }

// Doctor checks for the tools hub's MCP server offers.
func TestSupervisorTools(t *testing.T) {
	ctx := t.Context()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(noDaemon{}, mcpserver.Options{}).MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var got []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tool.Name)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(SupervisorTools()))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SupervisorTools is out of step with hub's MCP server (-want +got):\n%s", diff)
	}
}
