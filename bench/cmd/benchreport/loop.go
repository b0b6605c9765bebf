package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/hub-agents/hub/agent"
	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/agent/tool"
)

// loopTurns is how many tool turns one measured run has.
const loopTurns = 40

// timedModel is the model client with the time spent inside it summed up.
type timedModel struct {
	*model.Client
	mu sync.Mutex
	in time.Duration
	n  int
}

func (m *timedModel) Generate(ctx context.Context, c model.Call) (*model.Reply, error) {
	t0 := time.Now()
	r, err := m.Client.Generate(ctx, c)
	m.mu.Lock()
	m.in += time.Since(t0)
	m.n++
	m.mu.Unlock()
	return r, err
}

// nopMailbox hears nothing and queues no steering, as a quiet job's would.
type nopMailbox struct{}

func (nopMailbox) Ask(context.Context, string, string, string) (agent.Answer, error) {
	return agent.Answer{TimedOut: true}, nil
}
func (nopMailbox) Progress(context.Context, string) ([]string, error) { return nil, nil }
func (nopMailbox) Spent(context.Context, agent.Spend)                 {}
func (nopMailbox) Step(context.Context, agent.Step)                   {}

func loopFigures(runs int) ([]*figure, error) {
	over := &figure{name: "built-in loop: overhead per turn (all but the model call)", unit: "ms"}
	bare := &figure{name: "reference: one bare model call (scripted, loopback)", unit: "ms"}
	size := &figure{name: "built-in loop: prompt fixed size (first request)", unit: "KiB"}
	var ratio []float64
	for i := 0; i < runs; i++ {
		o, b, firstBytes, err := loopRun()
		if err != nil {
			return nil, err
		}
		over.samples = append(over.samples, ms(o))
		bare.samples = append(bare.samples, ms(b))
		size.samples = append(size.samples, float64(firstBytes)/1024)
		ratio = append(ratio, float64(o)/float64(b))
	}
	o50, _, _, _, _ := over.stats()
	b50, _, _, _, _ := bare.stats()
	over.note = fmt.Sprintf("%.2f× a bare model call (median %.2f ms against %.2f ms)", o50/b50, o50, b50)
	s50, _, _, _, _ := size.stats()
	size.note = fmt.Sprintf("about %d tokens at 4 bytes a token, paid on every call", int(s50*1024/4))
	return []*figure{over, bare, size}, nil
}

// loopRun measures one run: the loop's own time per turn, a bare call, and
// the size of the first request.
func loopRun() (overhead, bareCall time.Duration, firstBytes int, err error) {
	dir, err := os.MkdirTemp("", "hub-bench-loop-")
	if err != nil {
		return 0, 0, 0, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one line\n"), 0o644); err != nil {
		return 0, 0, 0, err
	}
	var turns []scripted.Turn
	for i := 0; i < loopTurns; i++ {
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}}})
	}
	turns = append(turns, scripted.Turn{Text: "done"})
	var bareTurns []scripted.Turn
	for i := 0; i <= loopTurns; i++ {
		bareTurns = append(bareTurns, scripted.Turn{Text: "ok"})
	}
	srv := scripted.New(nil)
	if err := srv.SetScript("loop", &scripted.Script{Turns: turns}); err != nil {
		return 0, 0, 0, err
	}
	if err := srv.SetScript("bare", &scripted.Script{Turns: bareTurns}); err != nil {
		return 0, 0, 0, err
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		return 0, 0, 0, err
	}
	defer srv.Close()
	client := func(m string) (*model.Client, error) {
		return model.New(model.Options{Provider: model.OpenAI, BaseURL: srv.URL() + "/v1", Key: "bench", Models: []string{m}, Free: true})
	}
	lc, err := client("loop")
	if err != nil {
		return 0, 0, 0, err
	}
	ws, err := tool.New(dir, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer ws.Close()
	tm := &timedModel{Client: lc}
	ctx := context.Background()
	t0 := time.Now()
	res := agent.Run(ctx, agent.Config{Model: tm, Workspace: ws, Mailbox: nopMailbox{}, Log: zerolog.Nop(),
		Task: "read a.txt", Write: true, Roles: true, MaxTurns: loopTurns + 5, BudgetMicros: 1})
	total := time.Since(t0)
	if res.Stop != agent.StopDone || tm.n != loopTurns+1 {
		return 0, 0, 0, fmt.Errorf("bench loop ended %s after %d calls: %v", res.Stop, tm.n, res.Err)
	}
	overhead = (total - tm.in) / time.Duration(tm.n)

	bc, err := client("bare")
	if err != nil {
		return 0, 0, 0, err
	}
	call := model.Call{Messages: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hello")}}
	t1 := time.Now()
	for i := 0; i <= loopTurns; i++ {
		if _, err := bc.Generate(ctx, call); err != nil {
			return 0, 0, 0, err
		}
	}
	bareCall = time.Since(t1) / time.Duration(loopTurns+1)
	return overhead, bareCall, len(srv.Requests()[0].Body), nil
}
