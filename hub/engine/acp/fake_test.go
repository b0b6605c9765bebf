package acp

// A scripted ACP agent for the engine's tests: the test binary itself,
// started with HUB_ACP_FAKE naming how it behaves. It speaks the protocol
// by hand, line by line, so a test can make it misbehave in ways a library
// would not let it: never answer, crash mid-turn, flood, ask for what it
// must not get. It writes what it received into $FAKE_OUT.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type fakeMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

type fakeAgent struct {
	mode   string
	out    string
	in     *bufio.Scanner
	w      *bufio.Writer
	nextID int
	queue  []fakeMsg // messages read while waiting for something else
}

func runFake(mode string) {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	f := &fakeAgent{mode: mode, out: os.Getenv("FAKE_OUT"), in: sc, w: bufio.NewWriter(os.Stdout)}
	f.serve()
	os.Exit(0)
}

func (f *fakeAgent) send(v any) {
	b, _ := json.Marshal(v)
	f.w.Write(b)
	f.w.WriteByte('\n')
	f.w.Flush()
}

func (f *fakeAgent) reply(id json.RawMessage, result any) {
	f.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (f *fakeAgent) update(session string, u map[string]any) {
	f.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": session, "update": u}})
}

// record appends a line to $FAKE_OUT/name.
func (f *fakeAgent) record(name, line string) {
	fh, err := os.OpenFile(filepath.Join(f.out, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintln(fh, line)
	fh.Close()
}

// read returns the next message from hub (queued ones first); false at EOF.
func (f *fakeAgent) read() (fakeMsg, bool) {
	if len(f.queue) > 0 {
		m := f.queue[0]
		f.queue = f.queue[1:]
		return m, true
	}
	if !f.in.Scan() {
		return fakeMsg{}, false
	}
	var m fakeMsg
	_ = json.Unmarshal(f.in.Bytes(), &m)
	return m, true
}

// ask sends hub a request and waits for its answer, queueing what else comes.
func (f *fakeAgent) ask(method string, params any) json.RawMessage {
	f.nextID++
	id := fmt.Sprint(f.nextID)
	f.send(map[string]any{"jsonrpc": "2.0", "id": f.nextID, "method": method, "params": params})
	for f.in.Scan() {
		var m fakeMsg
		_ = json.Unmarshal(f.in.Bytes(), &m)
		if m.Method == "" && string(m.ID) == id {
			return m.Result
		}
		f.queue = append(f.queue, m)
	}
	return nil
}

func (f *fakeAgent) serve() {
	turn := 0
	for {
		m, ok := f.read()
		if !ok {
			return
		}
		switch m.Method {
		case "initialize":
			if f.mode == "silent" {
				continue // never answers
			}
			f.reply(m.ID, map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{}, "authMethods": []any{}})
		case "session/new":
			f.record("session-new", string(m.Params))
			f.reply(m.ID, map[string]any{"sessionId": "s1"})
		case "session/cancel":
			f.record("cancel", string(m.Params))
		case "session/prompt":
			turn++
			var p struct {
				Prompt []struct {
					Text string `json:"text"`
				} `json:"prompt"`
			}
			_ = json.Unmarshal(m.Params, &p)
			text := ""
			for _, b := range p.Prompt {
				text += b.Text
			}
			f.record("prompts", strings.ReplaceAll(text, "\n", " "))
			f.prompt(m.ID, turn)
		default:
			if len(m.ID) > 0 && m.Method != "" {
				f.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "no " + m.Method}})
			}
		}
	}
}

func (f *fakeAgent) endTurn(id json.RawMessage, reason string) {
	f.reply(id, map[string]any{"stopReason": reason})
}

func (f *fakeAgent) prompt(id json.RawMessage, turn int) {
	cwd, _ := os.Getwd()
	switch f.mode {
	case "edit":
		f.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "Looking at bug.txt"}})
		f.update("s1", map[string]any{"sessionUpdate": "plan", "entries": []any{map[string]any{"content": "fix bug.txt", "priority": "high", "status": "in_progress"}}})
		f.update("s1", map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit bug.txt", "kind": "edit", "status": "pending",
			"locations": []any{map[string]any{"path": filepath.Join(cwd, "bug.txt")}}})
		res := f.ask("session/request_permission", map[string]any{"sessionId": "s1",
			"toolCall": map[string]any{"toolCallId": "t1", "title": "Edit bug.txt", "kind": "edit", "locations": []any{map[string]any{"path": "bug.txt"}}},
			"options":  fakeOptions()})
		f.record("permissions", string(res))
		if strings.Contains(string(res), `"allow"`) {
			os.WriteFile("bug.txt", []byte("fixed\n"), 0o644)
		}
		f.update("s1", map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
		f.update("s1", map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Shell", "kind": "execute", "status": "in_progress",
			"rawInput": map[string]any{"command": "grep -qx fixed bug.txt"}})
		f.update("s1", map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "completed",
			"rawOutput": map[string]any{"exitCode": 0}})
		f.update("s1", map[string]any{"sessionUpdate": "some_future_update", "x": 1})
		f.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "Fixed bug.txt; "},
			"_meta": map[string]any{"usage": map[string]any{"inputTokens": 1000, "outputTokens": 50}}})
		f.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "checked with grep."}})
		f.endTurn(id, "end_turn")
	case "outside":
		// Asks to write outside the worktree three ways, then to read outside.
		link := filepath.Join(cwd, "link")
		os.Symlink(os.TempDir(), link)
		for i, p := range []string{filepath.Join(os.TempDir(), "escape.txt"), "../escape.txt", "link/escape.txt"} {
			res := f.ask("session/request_permission", map[string]any{"sessionId": "s1",
				"toolCall": map[string]any{"toolCallId": fmt.Sprint("w", i), "title": "Write " + p, "kind": "edit",
					"rawInput": map[string]any{"file_path": p}}, "options": fakeOptions()})
			f.record("permissions", string(res))
		}
		res := f.ask("session/request_permission", map[string]any{"sessionId": "s1",
			"toolCall": map[string]any{"toolCallId": "r1", "title": "Read /etc/hostname", "kind": "read",
				"locations": []any{map[string]any{"path": "/etc/hostname"}}}, "options": fakeOptions()})
		f.record("permissions", string(res))
		res = f.ask("session/request_permission", map[string]any{"sessionId": "s1",
			"toolCall": map[string]any{"toolCallId": "f1", "title": "Fetch", "kind": "fetch"}, "options": fakeOptions()})
		f.record("permissions", string(res))
		f.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "Done asking."}})
		f.endTurn(id, "end_turn")
	case "crash":
		os.WriteFile("half.txt", []byte("half done\n"), 0o644)
		f.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "working"}})
		os.Exit(3)
	case "flood":
		os.WriteFile("half.txt", []byte("half done\n"), 0o644)
		for i := 0; ; i++ {
			f.update("s1", map[string]any{"sessionUpdate": "agent_thought_chunk", "content": map[string]any{"type": "text", "text": "hmm"}})
		}
	case "longline":
		f.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": strings.Repeat("x", 9<<20)}})
		time.Sleep(time.Hour)
	case "steer":
		if turn == 1 {
			// Works until cancelled, then says so.
			for {
				m, ok := f.read()
				if !ok {
					return
				}
				if m.Method == "session/cancel" {
					f.record("cancel", string(m.Params))
					f.endTurn(id, "cancelled")
					return
				}
			}
		}
		os.WriteFile("steered.txt", []byte("steered\n"), 0o644)
		f.update("s1", map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "Took the steering."}})
		f.endTurn(id, "end_turn")
	case "stubborn":
		// Ignores cancel, and SIGTERM too.
		ignoreTerm()
		os.WriteFile("half.txt", []byte("half done\n"), 0o644)
		for {
			m, ok := f.read()
			if !ok {
				time.Sleep(time.Hour)
			}
			if m.Method == "session/cancel" {
				f.record("cancel", string(m.Params))
			}
		}
	case "refuse":
		f.endTurn(id, "refusal")
	}
}

func fakeOptions() []any {
	return []any{
		map[string]any{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
		map[string]any{"optionId": "always", "name": "Always", "kind": "allow_always"},
		map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
	}
}
