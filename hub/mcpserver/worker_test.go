package mcpserver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/agent"
	"github.com/hub-agents/hub/hub/protocol"
)

// fakeShim answers the worker MCP server's calls as a job's shim would:
// questions from answers (or timed out), steering handed out once.
type fakeShim struct {
	mu      sync.Mutex
	answers []string
	steers  []string
	asked   []protocol.AskParams
	notes   []string
	down    bool
}

func (f *fakeShim) Call(ctx context.Context, method string, params, result any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("dial: connection refused")
	}
	switch method {
	case protocol.MethodWorkerAsk:
		p := params.(protocol.AskParams)
		f.asked = append(f.asked, p)
		r := result.(*protocol.AskResult)
		if len(f.answers) == 0 {
			*r = protocol.AskResult{QuestionID: "q", TimedOut: true, Instruction: "go on with the most conservative choice"}
			return nil
		}
		*r = protocol.AskResult{QuestionID: "q", Answer: f.answers[0]}
		f.answers = f.answers[1:]
	case protocol.MethodWorkerProgress:
		p := params.(protocol.ProgressParams)
		if p.Note != "" {
			f.notes = append(f.notes, p.Note)
		}
		*result.(*protocol.ProgressResult) = protocol.ProgressResult{Steer: f.steers}
		f.steers = nil
	default:
		return errors.New("unexpected method " + method)
	}
	return nil
}

func workerSession(t *testing.T, sh *fakeShim) *mcp.ClientSession {
	t.Helper()
	s := NewWorker(sh, "abcdefgh", Options{})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "worker", Version: "v0"}, nil).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callWorker(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return contentText(res), res.IsError
}

func TestWorkerServer(t *testing.T) {
	sh := &fakeShim{answers: []string{"use UTC"}, steers: []string{"prefer the v2 API"}}
	cs := workerSession(t, sh)

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name+": "+tl.Annotations.Title)
	}
	if strings.Join(names, ", ") != "ask_supervisor: Ask supervisor, report_blocker: Report blocker, report_progress: Report progress" {
		t.Errorf("tools and titles %v", names)
	}

	got, isErr := callWorker(t, cs, "ask_supervisor", map[string]any{"question": "UTC or local?", "context": "the task says nothing"})
	if isErr || !strings.HasPrefix(got, "Supervisor's answer: use UTC") || !strings.Contains(got, agent.SteerHeader+"\nprefer the v2 API") {
		t.Errorf("ask: %q", got)
	}
	if len(sh.asked) != 1 || sh.asked[0] != (protocol.AskParams{Job: "abcdefgh", Question: "UTC or local?", Context: "the task says nothing", Kind: "question"}) {
		t.Errorf("asked %+v", sh.asked)
	}

	got, _ = callWorker(t, cs, "report_progress", map[string]any{"note": "tests written"})
	if got != "noted" || len(sh.notes) != 1 || sh.notes[0] != "tests written" {
		t.Errorf("progress: %q, notes %q (the steer was delivered once already)", got, sh.notes)
	}

	got, _ = callWorker(t, cs, "report_blocker", map[string]any{"blocker": "no database access"})
	if !strings.Contains(got, "No answer came in time: stop working") || sh.asked[1].Kind != "blocker" {
		t.Errorf("blocker without an answer: %q", got)
	}

	if got, isErr := callWorker(t, cs, "ask_supervisor", map[string]any{"question": "  "}); !isErr || !strings.Contains(got, "question is empty") {
		t.Errorf("empty question: %q, error %v", got, isErr)
	}
	sh.mu.Lock()
	sh.down = true
	sh.mu.Unlock()
	if got, isErr := callWorker(t, cs, "report_progress", map[string]any{"note": "x"}); !isErr || !strings.Contains(got, "conservative choice") {
		t.Errorf("shim down: %q, error %v", got, isErr)
	}
}
