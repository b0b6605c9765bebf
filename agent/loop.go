package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/tool"
	"github.com/hub-agents/hub/internal/text"
)

// maxToolResult bounds what one tool result may add to the conversation.
const maxToolResult = 24 << 10

// loopSpec is one conversation: the main loop, or a role's sub-loop.
type loopSpec struct {
	name     string
	system   string
	user     string
	tools    []tool.Tool
	maxTurns int
	// final is called when the model answers without a tool call. It
	// returns a message to go on with, or "" when the loop is done.
	final func(ctx context.Context, text string) (goOn string, err error)
}

// stopError ends a loop from inside a tool (a blocker with no answer).
type stopError struct {
	stop    Stop
	summary string
}

func (e *stopError) Error() string { return string(e.stop) + ": " + e.summary }

// loopEnd is how one conversation ended.
type loopEnd struct {
	stop  Stop
	text  string
	turns int
	err   error
}

// loop runs one conversation.
func (r *runner) loop(ctx context.Context, spec loopSpec) loopEnd {
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, spec.system),
		llms.TextParts(llms.ChatMessageTypeHuman, spec.user),
	}
	byName := map[string]tool.Tool{}
	var defs []llms.Tool
	for _, t := range spec.tools {
		byName[t.Name] = t
		defs = append(defs, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	log := r.cfg.Log.With().Str("loop", spec.name).Logger()
	var lastText string
	for turn := 0; ; turn++ {
		if turn >= spec.maxTurns {
			return loopEnd{stop: StopMaxTurns, text: lastText, turns: turn,
				err: fmt.Errorf("%s: reached the limit of %d model turns", spec.name, spec.maxTurns)}
		}
		var err error
		if msgs, err = r.fit(ctx, msgs, defs); err != nil {
			return r.endOn(ctx, err, lastText, turn)
		}
		rep, err := r.call(ctx, spec.name, model.Call{Messages: msgs, Tools: defs})
		if err != nil {
			return r.endOn(ctx, err, lastText, turn)
		}
		if strings.TrimSpace(rep.Text) != "" {
			lastText = rep.Text
			r.note(spec.name, "%s", text.OneLine(rep.Text, 2000))
		}
		for _, tc := range rep.ToolCalls {
			r.note(spec.name, "→ %s %s", tc.FunctionCall.Name, text.OneLine(tc.FunctionCall.Arguments, 300))
		}
		ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		if strings.TrimSpace(rep.Text) != "" {
			ai.Parts = append(ai.Parts, llms.TextPart(rep.Text))
		}
		for _, tc := range rep.ToolCalls {
			ai.Parts = append(ai.Parts, tc)
		}
		if len(ai.Parts) == 0 {
			ai.Parts = append(ai.Parts, llms.TextPart("(no answer)"))
		}
		msgs = append(msgs, ai)

		if len(rep.ToolCalls) == 0 {
			goOn, err := spec.final(ctx, rep.Text)
			if err != nil {
				return r.endOn(ctx, err, lastText, turn+1)
			}
			if goOn == "" {
				return loopEnd{stop: StopDone, text: rep.Text, turns: turn + 1}
			}
			msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, goOn))
			continue
		}

		results, err := r.runTools(ctx, spec.name, byName, rep.ToolCalls)
		var se *stopError
		if errors.As(err, &se) {
			return loopEnd{stop: se.stop, text: se.summary, turns: turn + 1, err: err}
		}
		if err != nil {
			return r.endOn(ctx, err, lastText, turn+1)
		}
		// Steering reaches the model with this turn's tool results.
		if r.cfg.Mailbox != nil {
			steers, err := r.cfg.Mailbox.Progress(ctx, "")
			if err != nil && ctx.Err() == nil {
				log.Warn().Err(err).Msg("read steering")
			}
			if len(steers) > 0 {
				results[len(results)-1] += SteerText(steers)
			}
		}
		for i, tc := range rep.ToolCalls {
			r.note(spec.name, "← %s: %s", tc.FunctionCall.Name, text.OneLine(results[i], 200))
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: results[i]}}})
		}
	}
}

// endOn turns an error into the loop's ending.
func (r *runner) endOn(ctx context.Context, err error, text string, turns int) loopEnd {
	switch {
	case ctx.Err() != nil:
		return loopEnd{stop: StopCancelled, text: text, turns: turns, err: ctx.Err()}
	case errors.Is(err, ErrBudget):
		return loopEnd{stop: StopBudget, text: text, turns: turns, err: err}
	}
	var se *stopError
	if errors.As(err, &se) {
		return loopEnd{stop: se.stop, text: se.summary, turns: turns, err: err}
	}
	return loopEnd{stop: StopError, text: text, turns: turns, err: err}
}

// runTools runs one turn's tool calls and returns their results in call
// order. Calls that change nothing run at once, side by side; a turn with
// any other call runs them one after another, in order.
func (r *runner) runTools(ctx context.Context, loop string, byName map[string]tool.Tool, calls []llms.ToolCall) ([]string, error) {
	results := make([]string, len(calls))
	errs := make([]error, len(calls))
	parallel := len(calls) > 1
	for _, c := range calls {
		if t, ok := byName[c.FunctionCall.Name]; !ok || !t.ReadOnly {
			parallel = false
		}
	}
	one := func(i int) {
		results[i], errs[i] = r.runTool(ctx, loop, byName, calls[i])
	}
	if parallel {
		var wg sync.WaitGroup
		for i := range calls {
			wg.Add(1)
			go func() { defer wg.Done(); one(i) }()
		}
		wg.Wait()
	} else {
		for i := range calls {
			one(i)
			if errs[i] != nil {
				break
			}
		}
	}
	for i, err := range errs {
		if err != nil {
			return nil, err
		}
		if results[i] == "" && i < len(calls) {
			results[i] = "(no output)"
		}
	}
	return results, nil
}

// runTool runs one call and reports it as a step. A tool's own failure
// becomes its result, for the model to act on; only a stop or a cancelled
// context is returned as an error.
func (r *runner) runTool(ctx context.Context, loop string, byName map[string]tool.Tool, c llms.ToolCall) (string, error) {
	st := Step{ID: r.nextStep("t"), Parent: parentOf(ctx), Kind: StepTool, Name: c.FunctionCall.Name, Loop: loop,
		Start: time.Now(), Args: c.FunctionCall.Arguments}
	out, failed, err := r.tool(withParent(ctx, st.ID), byName, c)
	st.Took, st.Result, st.Failed = time.Since(st.Start), out, failed || err != nil
	if err != nil {
		st.Result = "error: " + err.Error()
	}
	r.step(ctx, st)
	return out, err
}

// tool runs one call; failed says the tool did not do what was asked.
func (r *runner) tool(ctx context.Context, byName map[string]tool.Tool, c llms.ToolCall) (out string, failed bool, err error) {
	name := c.FunctionCall.Name
	t, ok := byName[name]
	if !ok {
		var names []string
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Sprintf("error: there is no tool named %q; the tools are: %s", name, strings.Join(names, ", ")), true, nil
	}
	args := json.RawMessage(c.FunctionCall.Arguments)
	if !json.Valid(args) {
		return fmt.Sprintf("error: the arguments for %s are not valid JSON; send one JSON object matching the tool's schema", name), true, nil
	}
	out, err = t.Run(ctx, args)
	if ctx.Err() != nil {
		return "", true, ctx.Err()
	}
	var se *stopError
	if errors.As(err, &se) {
		return "", true, err
	}
	r.cfg.Log.Debug().Str("tool", name).Bool("error", err != nil).Int("bytes", len(out)).Msg("tool call")
	if err != nil {
		out = "error: " + err.Error()
	}
	return capText(out, maxToolResult), err != nil, nil
}

// capText keeps the head and the tail of s within max bytes.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head := max * 2 / 3
	tail := max - head - 200
	cut := len(s) - head - tail
	return s[:head] + fmt.Sprintf("\n[... %d bytes cut to save context; read narrower ranges or filter the output ...]\n", cut) + s[len(s)-tail:]
}
