package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hub-agents/hub/agent/tool"
	"github.com/hub-agents/hub/internal/text"
	"github.com/hub-agents/hub/rubric"
)

// roleTurns bounds a role's sub-loop.
const roleTurns = 25

// main runs the lead loop: the task, the tools, the roles, and the
// grade → revise rounds before it accepts "done".
func (r *runner) main(ctx context.Context) Result {
	cfg := r.cfg
	var tools []tool.Tool
	system := leadPrompt
	if cfg.Write {
		tools = append(tools, cfg.Workspace.Tools()...)
	} else {
		system = readPrompt
		tools = readOnly(cfg.Workspace.Tools())
	}
	tools = append(tools, r.mailboxTools(true)...)
	if cfg.Write && cfg.Roles {
		tools = append(tools, r.roleTools()...)
	}
	revisions := 0
	var graded *rubric.Result
	spec := loopSpec{name: "lead", system: system, user: taskMessage(cfg), tools: tools, maxTurns: cfg.MaxTurns,
		final: func(ctx context.Context, text string) (string, error) {
			if cfg.Mailbox != nil { // steering that came with no tool call to carry it
				if steers, _ := cfg.Mailbox.Progress(ctx, ""); len(steers) > 0 {
					return strings.TrimSpace(SteerText(steers)), nil
				}
			}
			if !cfg.Write || cfg.Observe == nil {
				return "", nil
			}
			res, err := r.grade(ctx)
			if err != nil {
				cfg.Log.Warn().Err(err).Msg("self-grade failed; accepting the answer as it is")
				return "", nil
			}
			graded = &res
			if len(res.Failed()) == 0 || revisions >= cfg.Revisions || cfg.Revisions < 0 {
				return "", nil
			}
			revisions++
			if cfg.Mailbox != nil {
				_, _ = cfg.Mailbox.Progress(ctx, fmt.Sprintf("self-check: %s; revising (%d of %d)", res.Line(), revisions, cfg.Revisions))
			}
			return "Your result does not meet the definition of done yet. Fix this, check it, and answer again when done:\n\n" + res.Feedback(), nil
		}}
	end := r.loop(ctx, spec)
	return Result{Stop: end.stop, Summary: strings.TrimSpace(end.text), Err: end.err, Turns: end.turns, Rubric: graded}
}

// grade observes the worktree and grades it against the definition of done.
func (r *runner) grade(ctx context.Context) (rubric.Result, error) {
	st := Step{ID: r.nextStep("c"), Parent: parentOf(ctx), Kind: StepCheck, Name: "self-check", Loop: "lead", Start: time.Now()}
	facts, err := r.cfg.Observe(ctx)
	st.Took = time.Since(st.Start)
	switch {
	case err != nil:
		st.Failed, st.Result = true, "error: "+err.Error()
	case facts.Verify != nil:
		v := facts.Verify
		st.Name, st.Args = v.Command, "self-check: verify"
		st.ExitCode, st.Failed = &v.ExitCode, !v.Ran || v.ExitCode != 0
		st.Result = fmt.Sprintf("%d files changed; exit %d: %s", len(facts.Files), v.ExitCode, v.OutputTail)
	default:
		st.Result = fmt.Sprintf("%d files changed", len(facts.Files))
	}
	r.step(ctx, st)
	if err != nil {
		return rubric.Result{}, err
	}
	crit := rubric.Criteria(rubric.Spec{DefinitionOfDone: r.cfg.DefinitionOfDone, Verify: r.cfg.Verify, Write: r.cfg.Write})
	var g rubric.Grader
	if r.cfg.Grade {
		g = &modelGrader{r: r}
	}
	return rubric.Grade(ctx, crit, facts, g), nil
}

func readOnly(ts []tool.Tool) []tool.Tool {
	var out []tool.Tool
	for _, t := range ts {
		if t.ReadOnly {
			out = append(out, t)
		}
	}
	return out
}

// mailboxTools are the tools that talk to the supervisor.
func (r *runner) mailboxTools(blocker bool) []tool.Tool {
	mb := r.cfg.Mailbox
	if mb == nil {
		return nil
	}
	ts := []tool.Tool{
		{
			Name:        "ask_supervisor",
			Description: "Ask your supervisor a question whose answer is not yours to decide; waits for the reply.",
			Parameters: object(map[string]any{
				"question": str("the question, self-contained"),
				"context":  str("what you found that makes it a question (optional)"),
			}, "question"),
			ReadOnly: true,
			Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var a struct{ Question, Context string }
				if err := strictArgs(raw, &a, "question", "context"); err != nil {
					return "", err
				}
				if strings.TrimSpace(a.Question) == "" {
					return "", errors.New("question is empty; ask a question in words")
				}
				ans, err := mb.Ask(ctx, "question", a.Question, a.Context)
				if err != nil {
					return "", err
				}
				if ans.TimedOut {
					return "No answer came in time. " + ans.Instruction, nil
				}
				return "Supervisor's answer: " + ans.Text, nil
			},
		},
		{
			Name:        "report_progress",
			Description: "Tell your supervisor, in one short line, what milestone you reached.",
			Parameters:  object(map[string]any{"note": str("one short line")}, "note"),
			ReadOnly:    true,
			Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var a struct{ Note string }
				if err := strictArgs(raw, &a, "note"); err != nil {
					return "", err
				}
				steers, err := mb.Progress(ctx, text.OneLine(a.Note, 300))
				if err != nil {
					return "", err
				}
				return "noted" + SteerText(steers), nil
			},
		},
	}
	if blocker {
		ts = append(ts, tool.Tool{
			Name:        "report_blocker",
			Description: "Tell your supervisor you cannot go on without them (missing access, contradictory requirements); waits for the reply, and ends the run if none comes.",
			Parameters: object(map[string]any{
				"blocker": str("what stops you"),
				"needed":  str("what you need to go on"),
			}, "blocker"),
			ReadOnly: true,
			Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var a struct{ Blocker, Needed string }
				if err := strictArgs(raw, &a, "blocker", "needed"); err != nil {
					return "", err
				}
				if strings.TrimSpace(a.Blocker) == "" {
					return "", errors.New("blocker is empty; say what stops you")
				}
				ans, err := mb.Ask(ctx, "blocker", a.Blocker, a.Needed)
				if err != nil {
					return "", err
				}
				if ans.TimedOut {
					return "", &stopError{stop: StopBlocked, summary: "blocked: " + text.OneLine(a.Blocker, 300)}
				}
				return "Supervisor's answer: " + ans.Text, nil
			},
		})
	}
	return ts
}

// roleTools hand a sub-task to a role's own sub-loop, with its own prompt,
// tools and context; the budget and the mailbox are shared.
func (r *runner) roleTools() []tool.Tool {
	all := r.cfg.Workspace.Tools()
	progress := r.mailboxTools(false)
	sets := map[string][]tool.Tool{
		"implementer": append(append([]tool.Tool{}, all...), progress...),
		"tester":      append(append([]tool.Tool{}, all...), progress...),
		"reviewer":    readOnly(all),
	}
	desc := map[string]string{
		"implementer": "Hand a well-defined change to an implementer with its own context; returns its report.",
		"tester":      "Have a tester write or run tests for a behaviour; returns what passes and fails.",
		"reviewer":    "Have a read-only reviewer check the work for bugs and gaps; returns its findings.",
	}
	var out []tool.Tool
	for _, name := range []string{"implementer", "tester", "reviewer"} {
		name := name
		out = append(out, tool.Tool{
			Name:        name,
			Description: desc[name],
			Parameters: object(map[string]any{
				"task":  str("the sub-task, self-contained: what to do, where, and how to check it"),
				"files": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "files to look at first"},
			}, "task"),
			ReadOnly: name == "reviewer",
			Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var a struct {
					Task  string
					Files []string
				}
				if err := strictArgs(raw, &a, "task", "files"); err != nil {
					return "", err
				}
				if strings.TrimSpace(a.Task) == "" {
					return "", errors.New("task is empty; describe the sub-task")
				}
				user := "Sub-task from the lead engineer:\n" + a.Task
				if len(a.Files) > 0 {
					user += "\n\nLook first at: " + strings.Join(a.Files, ", ")
				}
				user += "\n\nThe overall task, for context:\n" + text.OneLine(r.cfg.Task, 2000)
				end := r.loop(ctx, loopSpec{name: name, system: rolePrompts[name], user: user, tools: sets[name], maxTurns: roleTurns,
					final: func(context.Context, string) (string, error) { return "", nil }})
				if end.err != nil && (end.stop == StopCancelled || end.stop == StopBudget || end.stop == StopBlocked) {
					return "", end.err // the whole run must stop, not just the role
				}
				report := strings.TrimSpace(end.text)
				if report == "" {
					report = "(no report)"
				}
				if end.err != nil {
					return fmt.Sprintf("%s stopped early (%v) after %d turns. Its last words:\n%s", name, end.err, end.turns, report), nil
				}
				return fmt.Sprintf("%s's report (%d turns):\n%s", name, end.turns, report), nil
			},
		})
	}
	return out
}

// object is a JSON schema of an object with the given properties.
func object(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

// strictArgs decodes a tool's arguments, refusing unknown fields.
func strictArgs(raw json.RawMessage, v any, known ...string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("arguments must be a JSON object with: %s", strings.Join(known, ", "))
	}
	ok := map[string]bool{}
	for _, k := range known {
		ok[k] = true
	}
	for k := range m {
		if !ok[k] {
			return fmt.Errorf("unknown argument %q; this tool takes: %s", k, strings.Join(known, ", "))
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("arguments do not match the schema: %v", err)
	}
	return nil
}
