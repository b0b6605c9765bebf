package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/internal/text"
)

// Context management: when a conversation nears the model's window, the
// turns between the task and the recent tail are summarised by the model
// itself, so the run goes on instead of failing.

const (
	// compactAt is the share of the usable window at which older turns are summarised.
	compactAt = 0.75
	// keepTail is the share of the usable window the recent turns may keep.
	keepTail = 0.35
	// summaryTokens caps the summary's own length.
	summaryTokens = 1500
)

// SummaryMarker starts the message that replaces summarised turns.
const SummaryMarker = "[Summary of earlier turns, written to save context]"

// usable is the part of the window left for input once an answer fits.
func (r *runner) usable() int {
	u := r.cfg.Model.ContextWindow() - r.cfg.Model.MaxTokens()
	if u < 2048 {
		u = 2048
	}
	return u
}

// fit returns msgs, compacted when they take more than compactAt of the window.
func (r *runner) fit(ctx context.Context, msgs []llms.MessageContent, tools []llms.Tool) ([]llms.MessageContent, error) {
	limit := r.usable()
	size := model.EstimateTokens(model.Call{Messages: msgs, Tools: tools})
	if float64(size) <= compactAt*float64(limit) || len(msgs) <= 3 {
		return msgs, nil
	}
	// Keep the system prompt and the task; find where the tail starts: at
	// an assistant turn, so no tool result loses the call it answers.
	tailBudget := int(keepTail * float64(limit))
	cut := len(msgs)
	tail := 0
	for i := len(msgs) - 1; i >= 2; i-- {
		tail += model.EstimateTokens(model.Call{Messages: msgs[i : i+1]})
		if tail > tailBudget {
			break
		}
		if msgs[i].Role == llms.ChatMessageTypeAI {
			cut = i
		}
	}
	if cut >= len(msgs) { // the last turn alone is too big: shrink its tool results
		cut = lastAI(msgs)
	}
	if cut <= 2 {
		return shrinkResults(msgs, 2<<10), nil
	}
	middle := msgs[2:cut]
	r.cfg.Log.Info().Int("tokens", size).Int("window", limit).Int("summarised_messages", len(middle)).Msg("context near the window: summarising older turns")
	summary, err := r.summarise(ctx, middle, limit)
	if err != nil {
		return nil, fmt.Errorf("summarise older turns: %w", err)
	}
	out := make([]llms.MessageContent, 0, 3+len(msgs)-cut)
	out = append(out, msgs[0], msgs[1], llms.TextParts(llms.ChatMessageTypeHuman, SummaryMarker+"\n"+summary))
	out = append(out, msgs[cut:]...)
	if model.EstimateTokens(model.Call{Messages: out, Tools: tools}) > limit {
		out = shrinkResults(out, 2<<10)
	}
	return out, nil
}

func lastAI(msgs []llms.MessageContent) int {
	for i := len(msgs) - 1; i >= 2; i-- {
		if msgs[i].Role == llms.ChatMessageTypeAI {
			return i
		}
	}
	return 2
}

// summarise asks the model to compress turns into a note for itself.
func (r *runner) summarise(ctx context.Context, turns []llms.MessageContent, limit int) (string, error) {
	text := render(turns)
	if max := limit * 3; len(text) > max { // about 3/4 of the window, at 4 bytes a token
		text = capText(text, max)
	}
	rep, err := r.call(ctx, "summary", model.Call{MaxTokens: summaryTokens, Messages: []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, summaryPrompt),
		llms.TextParts(llms.ChatMessageTypeHuman, "The session so far:\n\n"+text),
	}})
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(rep.Text) == "" {
		return "", fmt.Errorf("the model returned an empty summary")
	}
	return strings.TrimSpace(rep.Text), nil
}

// render writes turns as plain text for the summariser.
func render(turns []llms.MessageContent) string {
	var b strings.Builder
	for _, m := range turns {
		for _, p := range m.Parts {
			switch v := p.(type) {
			case llms.TextContent:
				fmt.Fprintf(&b, "%s: %s\n", roleName(m.Role), v.Text)
			case llms.ToolCall:
				if v.FunctionCall != nil {
					fmt.Fprintf(&b, "agent called %s %s\n", v.FunctionCall.Name, text.OneLine(v.FunctionCall.Arguments, 300))
				}
			case llms.ToolCallResponse:
				fmt.Fprintf(&b, "%s returned: %s\n", v.Name, capText(v.Content, 1500))
			}
		}
	}
	return b.String()
}

func roleName(r llms.ChatMessageType) string {
	switch r {
	case llms.ChatMessageTypeAI:
		return "agent"
	case llms.ChatMessageTypeHuman:
		return "user"
	}
	return string(r)
}

// shrinkResults caps every tool result in msgs (all but the system prompt and task).
func shrinkResults(msgs []llms.MessageContent, max int) []llms.MessageContent {
	out := make([]llms.MessageContent, len(msgs))
	copy(out, msgs)
	for i := 2; i < len(out); i++ {
		if out[i].Role != llms.ChatMessageTypeTool {
			continue
		}
		parts := make([]llms.ContentPart, len(out[i].Parts))
		for j, p := range out[i].Parts {
			if tr, ok := p.(llms.ToolCallResponse); ok {
				tr.Content = capText(tr.Content, max)
				p = tr
			}
			parts[j] = p
		}
		out[i] = llms.MessageContent{Role: out[i].Role, Parts: parts}
	}
	return out
}
