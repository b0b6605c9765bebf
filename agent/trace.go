package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/internal/micros"
)

// Step is one model call or tool call of a run, for the job's trace.
type Step struct {
	ID     string // unique within the run: m1, t2, … (one counter for both)
	Parent string // the role's tool call whose sub-loop it ran in ("" for the lead loop)
	Kind   string // StepModel, StepTool or StepCheck
	Name   string // the model that answered, or the tool
	Loop   string // the conversation it belongs to: lead, implementer, tester, reviewer, grader
	Start  time.Time
	Took   time.Duration
	// A model call's tokens and cost.
	TokensIn, TokensOut int
	Micros              micros.Micros
	CostKnown           bool
	// Args and Result are shortened to stepTextMax bytes, whitespace
	// folded; they are not redacted here (the hub does that).
	Args, Result string
	ExitCode     *int // a check's exit code
	Failed       bool
}

// Step kinds.
const (
	StepModel = "model"
	StepTool  = "tool"
	StepCheck = "check" // the run's self-check before it accepts done: the files changed, the verify command
)

// stepTextMax bounds what a step carries of its arguments and result: far
// more than a trace shows, so the hub redacts whole keys before it cuts.
const stepTextMax = 4 << 10

// stepKey is the context key of the step a role's sub-loop runs inside.
type stepKey struct{}

// withParent marks ctx as running inside step id.
func withParent(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, stepKey{}, id)
}

func parentOf(ctx context.Context) string {
	id, _ := ctx.Value(stepKey{}).(string)
	return id
}

// nextStep returns a fresh step id with prefix.
func (r *runner) nextStep(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, r.steps.Add(1))
}

// step reports a finished step to the mailbox.
func (r *runner) step(ctx context.Context, s Step) {
	if r.cfg.Mailbox == nil {
		return
	}
	s.Args, s.Result = stepText(s.Args), stepText(s.Result)
	r.cfg.Mailbox.Step(context.WithoutCancel(ctx), s)
}

// stepText folds whitespace and keeps the head of s, within stepTextMax bytes.
func stepText(s string) string {
	if len(s) > 2*stepTextMax {
		s = s[:2*stepTextMax]
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > stepTextMax {
		s = strings.ToValidUTF8(s[:stepTextMax], "") + "…"
	}
	return s
}

// modelStep is the step of one model call: what was sent, in short, and
// what came back.
func modelStep(id, loop string, c model.Call, start time.Time, rep *model.Reply, err error) Step {
	s := Step{ID: id, Kind: StepModel, Loop: loop, Start: start, Took: time.Since(start),
		Args: fmt.Sprintf("%s: %d messages, %d tools", loop, len(c.Messages), len(c.Tools))}
	if err != nil {
		s.Name, s.Failed, s.Result = "(no answer)", true, "error: "+err.Error()
		return s
	}
	s.Name = rep.Model
	s.TokensIn, s.TokensOut = rep.Usage.Input, rep.Usage.Output
	s.Micros, s.CostKnown = rep.CostMicros, rep.CostKnown
	var calls []string
	for _, tc := range rep.ToolCalls {
		calls = append(calls, tc.FunctionCall.Name)
	}
	switch {
	case len(calls) > 0 && strings.TrimSpace(rep.Text) != "":
		s.Result = "→ " + strings.Join(calls, ", ") + " · " + rep.Text
	case len(calls) > 0:
		s.Result = "→ " + strings.Join(calls, ", ")
	default:
		s.Result = rep.Text
	}
	return s
}
