package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestMCPLand: a supervisor on the real MCP SDK client, through `hub mcp`:
// three jobs at once, two of them changing the same line; status says so
// while they still run; one wait; the batch's packet from result with ids;
// land with order auto lands the two that fit, each checked on the commit
// main gets, and reports the third with its file; the user's clean
// checkout of main moves with it.
func TestMCPLand(t *testing.T) {
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 2*time.Minute)
	repo := sampleRepo(t, "land")
	cs, _ := w.mcpSession(ctx, "2025-11-25")
	verify := `test -s bug.txt`
	// The two fixes run until the test has seen their conflict forecast
	// (a loaded machine may take a few rounds), a minute at most.
	gate := filepath.Join(t.TempDir(), "seen")
	hold := fmt.Sprintf(`; for i in $(seq 600); do [ -f %s ] && break; sleep 0.1; done`, gate)
	startRes := callTool(t, ctx, cs, "start_many", map[string]any{"jobs": []map[string]any{
		{"task": "fix bug.txt", "repo": repo, "engine": "exec", "exec": `printf 'fixed\n' > bug.txt` + hold, "verify": verify},
		{"task": "fix bug.txt another way", "repo": repo, "engine": "exec", "exec": `printf 'mended\n' > bug.txt` + hold, "verify": verify},
		{"task": "add notes", "repo": repo, "engine": "exec", "exec": `printf 'notes\n' > NOTES.md`, "verify": "test -s NOTES.md"},
	}})
	var started protocol.StartManyResult
	decodeStructured(t, startRes, &started)
	var ids []string
	for _, r := range started.Results {
		if r.Error != nil {
			t.Fatalf("refused: %+v", r.Error)
		}
		ids = append(ids, r.ID)
	}
	// Before either ends, status says the two conflict.
	for {
		st := callTool(t, ctx, cs, "status", map[string]any{"id": ids[0]})
		var js protocol.JobStatus
		decodeStructured(t, st, &js)
		if strings.Contains(contentText(st), "conflicts with hub/"+ids[1]+" in bug.txt") {
			if js.State.Terminal() {
				t.Fatalf("the conflict was seen only after the job ended: %s", contentText(st))
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			break
		}
		if js.State.Terminal() {
			t.Fatalf("job %s ended with no conflict forecast: %s", ids[0], contentText(st))
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitRes := callTool(t, ctx, cs, "wait", map[string]any{"ids": ids, "timeout_s": 60})
	var wr protocol.WaitResult
	decodeStructured(t, waitRes, &wr)
	if !wr.Done {
		t.Fatalf("wait: %+v", wr)
	}
	packet := contentText(callTool(t, ctx, cs, "result", map[string]any{"ids": ids}))
	if !strings.HasPrefix(packet, "3 jobs: 1 ready to land, 2 with conflicts") || len(packet) > 600 {
		t.Errorf("packet (%d bytes):\n%s", len(packet), packet)
	}
	from := hubtest.Git(t, repo, "rev-parse", "main")
	landRes := callTool(t, ctx, cs, "land", map[string]any{"ids": ids, "order": "auto"})
	var lr protocol.LandResult
	decodeStructured(t, landRes, &lr)
	out := map[string]protocol.LandItem{}
	for _, it := range lr.Jobs {
		out[it.ID] = it
	}
	// Fewest conflicts first: the notes land first, then one of the two fixes.
	if lr.Jobs[0].ID != ids[2] || out[ids[2]].Outcome != protocol.LandLanded {
		t.Errorf("order or outcome: %+v", lr.Jobs)
	}
	landed, conflicted := 0, 0
	for _, id := range ids[:2] {
		switch it := out[id]; it.Outcome {
		case protocol.LandLanded:
			landed++
			if it.Verify == nil || it.Verify.Commit != it.Commit || it.Verify.ExitCode != 0 {
				t.Errorf("job %s was not checked on the commit main got: %+v", id, it.Verify)
			}
		case protocol.LandConflict:
			conflicted++
			if len(it.Files) != 1 || it.Files[0] != "bug.txt" {
				t.Errorf("the conflict's files: %+v", it)
			}
		}
	}
	if landed != 1 || conflicted != 1 {
		t.Errorf("of the two fixes %d landed and %d conflicted:\n%s", landed, conflicted, contentText(landRes))
	}
	if !strings.HasPrefix(contentText(landRes), "2 landed, 1 conflict; main ") {
		t.Errorf("land's text:\n%s", contentText(landRes))
	}
	if tip := hubtest.Git(t, repo, "rev-parse", "main"); tip != lr.Tip || tip == from {
		t.Errorf("main at %s, land says %s (from %s)", tip, lr.Tip, from)
	}
	if st := hubtest.Git(t, repo, "status", "--porcelain"); st != "" || readFile(t, repo+"/NOTES.md") != "notes" {
		t.Errorf("the user's checkout did not follow main: %q", st)
	}
}
