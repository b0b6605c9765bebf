package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/errline"
	"github.com/hub-agents/hub/rubric"
)

// StepName is the step engine's name: `hub step` and the MCP step tool run
// a read job on it.
const StepName = "step"

// StepDisagree starts the last line of an account whose claim the state
// contradicts.
const StepDisagree = "verdict: the claim and the state disagree"

// StepSnapshot is the message of the commit `hub step` makes of the user's
// work tree (gitx.WorkTreeCommit): the step's log leaves it out.
const StepSnapshot = "hub step: the work tree as it was"

// Bounds of a narration: what the model is shown and may answer.
const (
	stepDiffMax   = 16 << 10 // bytes of the diff shown to the model
	stepAnswerMax = 800      // tokens the model may answer
	stepLineMax   = 220      // runes of one line of the report
)

// StepTask is the task of a step job: the title, the commit the step
// started from, then what the supervisor says it did. The step engine reads
// it back (parseStepTask); nothing else writes it.
func StepTask(title, since, claim string) string {
	return "step: " + strings.TrimSpace(title) + "\nsince: " + since + "\n\n" + strings.TrimSpace(claim)
}

// parseStepTask reads a task StepTask wrote.
func parseStepTask(task string) (title, since, claim string, err error) {
	head, claim, ok := strings.Cut(task, "\n\n")
	t, s, ok2 := strings.Cut(head, "\n")
	title, ok3 := strings.CutPrefix(t, "step: ")
	since, ok4 := strings.CutPrefix(s, "since: ")
	if !ok || !ok2 || !ok3 || !ok4 || !isSHA(since) || strings.TrimSpace(claim) == "" {
		return "", "", "", errors.New("the step engine narrates a step hub step or the MCP step tool started; start one with `hub step --title T --claim C`")
	}
	return title, since, strings.TrimSpace(claim), nil
}

func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Step is the step engine: one call to a cheap model that narrates a step
// of the supervisor's own work from the repository's real state — the
// files and commits since the step began, the check's outcome, the diff —
// and judges the claim's statements a mechanical check cannot. hub's own
// checks (the check command against "the tests pass") outrank the model, as
// in every rubric. It shares the built-in worker's profiles and model client.
type Step struct{ e *Engine }

// NewStep returns the step engine.
func NewStep(o Options) *Step { return &Step{e: New(o)} }

func (*Step) Name() string { return StepName }

func (s *Step) Capabilities() protocol.EngineCapabilities {
	c := s.e.Capabilities()
	c.Pays = protocol.PaysAPI
	return c
}

func (s *Step) Probe(ctx context.Context) engine.Availability { return s.e.Probe(ctx) }

// Check refuses a step job that hub step did not start, or whose profile
// cannot be reached.
func (s *Step) Check(spec protocol.StartParams) error {
	if spec.Kind != protocol.KindRead {
		return errors.New("the step engine only reads; start it with kind read (hub step does)")
	}
	if _, _, _, err := parseStepTask(spec.Task); err != nil {
		return err
	}
	return s.e.Check(spec)
}

// Start narrates the step in the background.
func (s *Step) Start(ctx context.Context, spec engine.Spec) (engine.Run, error) {
	title, since, claim, err := parseStepTask(spec.Params.Task)
	if err != nil {
		return nil, err
	}
	p, err := s.e.profiles().Get(spec.Params.Profile)
	if err != nil {
		return nil, err
	}
	key, _, err := s.e.profiles().Key(p)
	if err != nil {
		return nil, err
	}
	red := redact.New(key)
	client, cleanup, err := s.e.client(ctx, p, key, spec.Params.Model, red)
	if err != nil {
		return nil, err
	}
	r := &stepRun{started: time.Now(), red: red, model: &trackedModel{Client: client},
		command: fmt.Sprintf("step narration (profile %s, %s %s)", p.Name, p.Provider, client.Model())}
	r.start(ctx, func(ctx context.Context) {
		defer cleanup()
		r.out = r.narrate(ctx, spec, p, title, since, claim)
	})
	return r, nil
}

// stepRun is a step's narration in flight: one model call.
type stepRun struct {
	inShim
	model   *trackedModel
	command string
	started time.Time
	red     *redact.Redactor
	out     engine.Outcome
}

func (r *stepRun) Heartbeat() bool { return r.model.inflight.Load() > 0 }

func (r *stepRun) Wait() engine.Outcome {
	<-r.done
	o := r.out
	o.Duration, o.Command = time.Since(r.started), r.command
	o.Summary, o.Failure = r.red.String(o.Summary), r.red.String(o.Failure)
	return o
}

// stepFacts is what hub observed of the step.
type stepFacts struct {
	files  []gitx.FileChange
	log    []gitx.Commit
	stat   string
	diff   string
	verify *rubric.VerifyFact
}

// narrate gathers the facts, asks the model once, grades the claim and
// writes the report.
func (r *stepRun) narrate(ctx context.Context, spec engine.Spec, p profile.Profile, title, since, claim string) engine.Outcome {
	fail := func(err error) engine.Outcome {
		if ctx.Err() != nil {
			return engine.Outcome{ExitCode: -1, Signal: "stopped", CostKnown: true}
		}
		return engine.Outcome{ExitCode: 1, Failure: err.Error(), CostKnown: true}
	}
	f, err := observeStep(ctx, spec, since)
	if err != nil {
		return fail(err)
	}
	crit := rubric.Criteria(rubric.Spec{DefinitionOfDone: claim, Verify: spec.Params.Verify, Claim: true})
	call := model.Call{MaxTokens: stepAnswerMax, Messages: []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, stepPrompt),
		llms.TextParts(llms.ChatMessageTypeHuman, stepBrief(title, claim, crit, f)),
	}}
	if cost, known := r.model.Estimate(call); known && spec.MaxMicros > 0 && cost > spec.MaxMicros {
		return fail(fmt.Errorf("the narration could cost %s, more than its budget of %s; raise max_usd", cost, spec.MaxMicros))
	}
	if spec.Mailbox != nil {
		spec.Mailbox.Note(ctx, fmt.Sprintf("narrating %d file(s) and %d commit(s) with %s", len(f.files), len(f.log), p.Name))
	}
	start := time.Now()
	reply, err := r.model.Generate(ctx, call)
	if spec.Mailbox != nil {
		e := protocol.TraceEntry{ID: "m1", Kind: protocol.TraceModel, Name: r.model.Model(), Start: start, DurationUS: time.Since(start).Microseconds(),
			Args: title, Failed: err != nil}
		if err != nil {
			e.Result = err.Error()
		} else {
			e.Name, e.Result = reply.Model, reply.Text
			e.TokensIn, e.TokensOut, e.USD, e.CostUnknown = int64(reply.Usage.Input), int64(reply.Usage.Output), reply.CostMicros.USD(), !reply.CostKnown
		}
		spec.Mailbox.Trace(ctx, e)
	}
	if err != nil {
		return fail(fmt.Errorf("the model did not narrate: %w", err))
	}
	o := engine.Outcome{CostMicros: reply.CostMicros, CostKnown: reply.CostKnown, Tokens: int64(reply.Usage.Input + reply.Usage.Output),
		Calls: 1, Model: reply.Model, Models: []string{reply.Model}}
	if spec.Mailbox != nil {
		spec.Mailbox.Spent(ctx, reply.CostMicros, protocol.CostEvent{USD: reply.CostMicros.USD(), Known: reply.CostKnown, Tokens: o.Tokens, Calls: 1, Model: reply.Model})
	}
	narration, judged, perr := parseNarration(reply.Text)
	facts := rubric.Facts{Verify: f.verify}
	for _, c := range f.files {
		facts.Files = append(facts.Files, rubric.FileChange{Path: c.Path, OldPath: c.OldPath, Change: c.Change})
	}
	graded := rubric.Grade(ctx, crit, facts, replay(judged))
	if perr != nil {
		narration = "(the model's answer could not be read: " + perr.Error() + ")"
	}
	o.Summary = stepReport(narration, f, graded)
	return o
}

// observeStep reads what the step did, in the job's checkout of the work
// tree: the files and commits since the step began, the diff, and the
// check's outcome there.
func observeStep(ctx context.Context, spec engine.Spec, since string) (stepFacts, error) {
	var f stepFacts
	head := spec.BaseSHA
	if head == "" {
		return f, errors.New("a step needs a repository")
	}
	var err error
	if f.files, err = gitx.DiffFiles(ctx, spec.Dir, since, head); err != nil {
		return f, fmt.Errorf("read the files changed since %s: %w", view.ShortSHA(since), err)
	}
	log, err := gitx.Log(ctx, spec.Dir, since, head)
	if err != nil {
		return f, fmt.Errorf("read the commits since %s: %w", view.ShortSHA(since), err)
	}
	for _, c := range log {
		if c.Subject != StepSnapshot {
			f.log = append(f.log, c)
		}
	}
	stat, _ := gitx.Git(ctx, spec.Dir, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--stat=120", since, head, "--")
	f.stat = strings.TrimRight(string(stat), "\n")
	diff, _ := gitx.Git(ctx, spec.Dir, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-U2", since, head, "--")
	f.diff = string(diff)
	if len(f.diff) > stepDiffMax {
		f.diff = f.diff[:stepDiffMax] + fmt.Sprintf("\n… (%d more bytes of diff not shown)", len(diff)-stepDiffMax)
	}
	if spec.Params.Verify != "" {
		start := time.Now()
		f.verify = runVerify(ctx, spec)
		if spec.Mailbox != nil {
			code := f.verify.ExitCode
			spec.Mailbox.Trace(ctx, protocol.TraceEntry{ID: "c1", Kind: protocol.TraceCommand, Name: spec.Params.Verify, Start: start,
				DurationUS: time.Since(start).Microseconds(), ExitCode: &code, Failed: code != 0 || f.verify.TimedOut, Result: f.verify.OutputTail})
			spec.Mailbox.Note(ctx, fmt.Sprintf("check `%s` exit %d", view.OneLine(spec.Params.Verify, 80), f.verify.ExitCode))
		}
	}
	return f, nil
}

const stepPrompt = `You narrate one step of a coding session for the developer who supervises it. You see what hub observed in the repository: the files and commits since the step began, the diff, and the outcome of the check command. The claim is what the agent says it did; do not trust it, look at the state.
Answer with only this JSON:
{"narration": "2 to 4 short sentences: what the state shows was done, and what the check showed", "judgements": [{"id": "c2", "status": "pass|fail|unknown", "evidence": "one line: a file and what it holds, or output"}]}
Judge each statement listed under "Statements to judge": pass when the state backs it, fail when the state contradicts it, unknown when the state cannot tell.`

// stepBrief is what the model is told: the claim, the statements it judges,
// and hub's observations.
func stepBrief(title, claim string, crit []rubric.Criterion, f stepFacts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Step: %s\n\nThe agent's claim:\n%s\n\nStatements to judge:\n", title, claim)
	n := 0
	for _, c := range crit {
		if c.Kind == rubric.KindJudgement {
			fmt.Fprintf(&b, "- %s: %s\n", c.ID, c.Text)
			n++
		}
	}
	if n == 0 {
		b.WriteString("(none: hub checks every statement itself)\n")
	}
	fmt.Fprintf(&b, "\nCommits since the step began (%d):\n", len(f.log))
	for _, c := range f.log {
		fmt.Fprintf(&b, "- %s %s\n", view.ShortSHA(c.SHA), view.OneLine(c.Subject, 120))
	}
	b.WriteString("\nFiles changed (committed or not):\n")
	if f.stat == "" {
		b.WriteString("(none)\n")
	} else {
		b.WriteString(f.stat + "\n")
	}
	if v := f.verify; v != nil {
		fmt.Fprintf(&b, "\nCheck `%s`: exit %d, timed out %v. Output tail:\n%s\n", v.Command, v.ExitCode, v.TimedOut, v.OutputTail)
	} else {
		b.WriteString("\nNo check command was given.\n")
	}
	if f.diff != "" {
		b.WriteString("\nDiff:\n" + f.diff)
	}
	return b.String()
}

// parseNarration reads the model's JSON, tolerating prose or a code fence
// around it.
func parseNarration(text string) (string, []rubric.Judgement, error) {
	start, stop := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if start < 0 || stop < start {
		return "", nil, fmt.Errorf("no JSON in %q", view.OneLine(text, 120))
	}
	var out struct {
		Narration  string `json:"narration"`
		Judgements []struct {
			ID, Status, Evidence string
		} `json:"judgements"`
	}
	if err := json.Unmarshal([]byte(text[start:stop+1]), &out); err != nil {
		return "", nil, fmt.Errorf("malformed JSON: %v", err)
	}
	var js []rubric.Judgement
	for _, j := range out.Judgements {
		st := rubric.Status(strings.ToLower(strings.TrimSpace(j.Status)))
		if st != rubric.StatusPass && st != rubric.StatusFail {
			st = rubric.StatusUnknown
		}
		js = append(js, rubric.Judgement{ID: j.ID, Status: st, Evidence: view.OneLine(j.Evidence, 300)})
	}
	return strings.TrimSpace(out.Narration), js, nil
}

// replay gives the rubric the judgements the model already made.
type replay []rubric.Judgement

func (r replay) Judge(context.Context, []rubric.Criterion, rubric.Facts) ([]rubric.Judgement, error) {
	return r, nil
}

// stepReport is the step's answer: the narration, what hub checked, then
// each statement of the claim the state contradicts, could not settle, or
// backs — contradictions first, each with who said so.
func stepReport(narration string, f stepFacts, g rubric.Result) string {
	var b []string
	if narration != "" {
		b = append(b, narration)
	}
	add := 0
	del := 0
	for _, c := range f.files {
		add, del = add+max(c.Added, 0), del+max(c.Deleted, 0)
	}
	facts := fmt.Sprintf("observed: %d commit(s), %d file(s) changed (+%d -%d)", len(f.log), len(f.files), add, del)
	if v := f.verify; v != nil {
		facts += fmt.Sprintf("; `%s` exit %d", view.OneLine(v.Command, 60), v.ExitCode)
		if v.TimedOut {
			facts += " (timed out)"
		}
		if v.ExitCode != 0 && v.OutputTail != "" {
			facts += ": " + view.OneLine(errline.Telling(v.OutputTail), 100)
		}
	}
	b = append(b, view.OneLine(facts, stepLineMax))
	for _, want := range []rubric.Status{rubric.StatusFail, rubric.StatusUnknown, rubric.StatusPass} {
		for _, c := range g.Criteria {
			if c.Status != want {
				continue
			}
			label := map[rubric.Status]string{rubric.StatusFail: "disagrees", rubric.StatusUnknown: "unsure", rubric.StatusPass: "agrees"}[want]
			who := c.By
			if who == "" {
				who = "nobody could check"
			}
			what, ev := c.Text, c.Evidence
			if c.Kind == rubric.KindVerify {
				// The statements the check stands for, and the check that settled them.
				what = "the check passes"
				if len(c.Covers) > 0 {
					what = strings.Join(c.Covers, " ")
				}
				ev = "`" + view.OneLine(c.Command, 60) + "` " + ev
			}
			b = append(b, view.OneLine(fmt.Sprintf("%s: %q — %s (%s)", label, view.OneLine(what, 80), view.OneLine(ev, 120), who), stepLineMax))
		}
	}
	if len(g.Failed()) == 0 {
		b = append(b, "verdict: the state does not contradict the claim")
	} else {
		b = append(b, fmt.Sprintf("%s on %d statement(s)", StepDisagree, len(g.Failed())))
	}
	return strings.Join(b, "\n")
}
