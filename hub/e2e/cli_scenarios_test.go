package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// The agent CLI engines' end-to-end tests: each engine runs the real CLI
// (pinned by scripts/agents.sh) as the worker of a real daemon and shim,
// against a scripted model on loopback, through the same scenarios: it
// edits and is verified, asks its supervisor and goes on with the reply,
// takes steering, and is stopped with its work salvaged. cliEngines is the
// table of engines; each scenario is one test with a subtest per engine.

// cliEngine is one engine as the scenarios drive it: how its world is made,
// how its model calls its tools, what it supports, and what it checks
// besides what every engine must do.
type cliEngine struct {
	name string // the engine: the job's Engine and the subtest's name
	// product and acp are how hub records the worker's command line:
	// "(<product>, profile t, …)", or "(<product> over ACP, profile t, …)".
	product string
	acp     bool
	// world makes the world: the CLI installed, profile "t" (the default)
	// reaching a model played by respond. The CLI's side requests (titles,
	// summaries: no tools) get a short text there and never reach respond.
	world    func(t *testing.T, ctx context.Context, respond scripted.Responder) *builtinWorld
	deadline time.Duration // of each scenario
	// shell is the call of the CLI's shell tool running command.
	shell func(command string) scripted.ToolCall
	// hubName is the name the model calls hub's worker tool base by; hubNS
	// the namespace the call must carry (Codex's Responses wire), or "".
	hubName func(base string) string
	hubNS   string
	// exitCodes: the CLI says what its commands exited with (Gemini CLI
	// does not).
	exitCodes bool
	// steer is how steering reaches the worker.
	steer cliSteerMode
	// stopWithin is how soon a stop ends the job.
	stopWithin time.Duration
	// skip says, by scenario, why the engine does not run it.
	skip map[cliScenario]string

	// edit, when set, changes how the engine plays the edit scenario (see
	// cliEdit); asking checks more while its question waits, asked once
	// the job ended; steered checks more once the steered job ended.
	edit    func(t *testing.T, e cliEngine, x *cliEdit)
	asking  func(t *testing.T, j cliJob)
	asked   func(t *testing.T, j cliJob)
	steered func(t *testing.T, j cliJob)
}

// cliScenario names a scenario, for cliEngine.skip.
type cliScenario string

const (
	cliEdits cliScenario = "edits"
	cliAsks  cliScenario = "asks"
	cliSteer cliScenario = "steer"
	cliStop  cliScenario = "stop"
)

// cliSteerMode is how steering that came while the worker runs, and that it
// does not pick up through hub's tools, reaches it.
type cliSteerMode int

const (
	// cliResume: once the CLI's run ends, hub resumes its session with the
	// steering ("resuming session" in the worker log).
	cliResume cliSteerMode = iota + 1
	// cliCancel: hub cancels the agent's turn (ACP's session/cancel) and
	// prompts it again with the steering and the task.
	cliCancel
)

// cliEdit is the edit scenario as an engine plays it. By default the model
// runs "echo fixed > bug.txt" with the shell tool, then sums up.
type cliEdit struct {
	// steps are the model's tool calls, one a turn, before its summary;
	// command is the one of them hub must observe succeed.
	steps   []scripted.ToolCall
	command string
	// start changes the job started; respond wraps the model.
	start   func(p *protocol.StartParams)
	respond func(scripted.Responder) scripted.Responder
	// check checks what else the engine does, once the job succeeded.
	check func(t *testing.T, j cliJob, ev *protocol.Evidence)
}

// cliJob is a scenario's job, as the engine's own checks see it.
type cliJob struct {
	ctx context.Context
	b   *builtinWorld
	id  string
	log string // the worker log, once the job ended
}

// cliEngines is the table of agent CLI engines.
var cliEngines = []cliEngine{
	{
		name: "claude", product: "Claude Code", deadline: 120 * time.Second,
		world: claudeWorld, shell: claudeBash, hubName: mcpName("mcp__hub__"),
		exitCodes: true, steer: cliResume, stopWithin: 10 * time.Second,
	},
	{
		name: "codex", product: "Codex", deadline: 90 * time.Second,
		world: codexWorld, shell: codexCall, hubName: mcpName(""), hubNS: codexHubNS,
		exitCodes: true, steer: cliResume, stopWithin: 10 * time.Second,
		edit: codexEdit, asked: codexAsked,
	},
	{
		name: "opencode", product: "OpenCode", deadline: 90 * time.Second,
		world: newOpenCodeWorld, shell: ocBash, hubName: mcpName("hub_"),
		exitCodes: true, steer: cliResume, stopWithin: 10 * time.Second,
		edit: ocEdit, asking: ocAsking, steered: ocSteered,
	},
	{
		name: "gemini", product: "Gemini CLI", acp: true, deadline: 90 * time.Second,
		world: acpAgentWorld(acpGemini), shell: acpGemini.shell, hubName: acpGemini.tool,
		exitCodes: false, steer: cliCancel, stopWithin: 15 * time.Second,
		edit: acpEditChecks,
	},
	{
		name: "qwen", product: "Qwen Code", acp: true, deadline: 90 * time.Second,
		world: acpAgentWorld(acpQwen), shell: acpQwen.shell, hubName: acpQwen.tool,
		exitCodes: true, steer: cliCancel, stopWithin: 15 * time.Second,
		edit: acpEditChecks,
	},
	{
		// A user-defined agent: Qwen Code again, made by config.json alone
		// under another name, its profile mapped into its own variables.
		// It runs with the agent's own defaults: its side calls and
		// deferred tools are its own business.
		name: "my-qwen", product: "my-qwen", acp: true, deadline: 90 * time.Second,
		world: myQwenWorld, shell: acpQwen.shell, hubName: acpQwen.tool,
		exitCodes: true, steer: cliCancel, stopWithin: 15 * time.Second,
		skip: map[cliScenario]string{cliAsks: sameAsQwen, cliSteer: sameAsQwen, cliStop: sameAsQwen},
	},
}

// sameAsQwen is why my-qwen runs only the edit.
const sameAsQwen = "my-qwen is the qwen row's CLI, made an agent by config.json alone: the edit shows that works; the qwen row runs the rest on the same CLI"

// eachCLI runs scenario for every engine of the table, as subtests named
// after the engine; an engine that does not run it is skipped with the
// table's reason.
func eachCLI(t *testing.T, scenario cliScenario, f func(t *testing.T, e cliEngine)) {
	for _, e := range cliEngines {
		t.Run(e.name, func(t *testing.T) {
			if why := e.skip[scenario]; why != "" {
				t.Skip(why)
			}
			f(t, e)
		})
	}
}

// mcpName names hub's worker tools with prefix.
func mcpName(prefix string) func(base string) string {
	return func(base string) string { return prefix + base }
}

// hubCall is the model's call of hub's worker tool base.
func (e cliEngine) hubCall(base string, args any) scripted.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return scripted.ToolCall{Name: e.hubName(base), Namespace: e.hubNS, Args: b}
}

// offersHub reports whether r offers hub's worker tool base.
func (e cliEngine) offersHub(r *scripted.Request, base string) bool {
	if e.hubNS != "" {
		return r.Namespaces[e.hubName(base)] == e.hubNS
	}
	return hasTool(r, e.hubName(base))
}

// shellCalled reports whether the model called the CLI's shell tool in r's
// history.
func (e cliEngine) shellCalled(r *scripted.Request) bool {
	return acpCalled(r, e.shell("").Name)
}

// toolCallsIn counts the tool calls the model made in r's history.
func toolCallsIn(r *scripted.Request) int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.ToolCalls)
	}
	return n
}

func turnOf(c scripted.ToolCall) scripted.Turn {
	return scripted.Turn{ToolCalls: []scripted.ToolCall{c}}
}

// start starts a job on e in b's repo with profile "t".
func (e cliEngine) start(t *testing.T, ctx context.Context, b *builtinWorld, p protocol.StartParams) protocol.StartResult {
	t.Helper()
	p.Repo, p.Engine, p.Profile = b.repo, e.name, "t"
	return hubtest.Daemon(t, b.c).JobStart(ctx, p)
}

// TestCLIEdits: the model fixes bug.txt through the CLI's tools; hub allows
// it (a command in the worktree), commits and verifies, and the evidence
// holds the command with its exit code, the summary, the tokens and their
// cost, and the worker's command line.
func TestCLIEdits(t *testing.T) {
	eachCLI(t, cliEdits, func(t *testing.T, e cliEngine) {
		ctx := hubtest.Deadline(t, e.deadline)
		x := cliEdit{steps: []scripted.ToolCall{e.shell("echo fixed > bug.txt")}, command: "echo fixed > bug.txt"}
		if e.edit != nil {
			e.edit(t, e, &x)
		}
		var respond scripted.Responder = func(r *scripted.Request) (scripted.Turn, bool) {
			if n := toolCallsIn(r); n < len(x.steps) {
				return turnOf(x.steps[n]), true
			}
			return scripted.Turn{Text: "Fixed bug.txt: it now says fixed."}, true
		}
		if x.respond != nil {
			respond = x.respond(respond)
		}
		b := e.world(t, ctx, respond)
		p := protocol.StartParams{Repo: b.repo, Engine: e.name, Profile: "t", Task: "make bug.txt say fixed", Verify: "grep -qx fixed bug.txt"}
		if x.start != nil {
			x.start(&p)
		}
		r := hubtest.Daemon(t, b.c).JobStart(ctx, p)
		if r.Engine != e.name {
			t.Fatalf("the job went to engine %q, want %s", r.Engine, e.name)
		}
		end := b.waitEnd(ctx, r.ID)
		log := readFile(t, b.paths.WorkerLog(r.ID))
		if end.State != protocol.StateSucceeded || end.VerifyExit == nil || *end.VerifyExit != 0 {
			t.Fatalf("job ended %s (verify exit %v): %s\n%s", end.State, exitText(end.VerifyExit), end.Error, log)
		}
		if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "fixed" {
			t.Errorf("bug.txt on the branch: %q", got)
		}
		ev := b.evidence(ctx, r.ID).Evidence
		if !strings.Contains(ev.Claimed.Report, "Fixed bug.txt") || !ev.Cost.Known || ev.Cost.Tokens == 0 {
			t.Errorf("evidence: summary %q, cost %+v", ev.Claimed.Report, ev.Cost)
		}
		// The command, with its exit code when the CLI tells it, in the
		// evidence, the worker log and the trace.
		var code *int
		logged := "[command] exit ?: " + x.command
		if e.exitCodes {
			code, logged = new(int), "[command] exit 0: "+x.command
		}
		seen := false
		for _, c := range ev.Observed.Commands {
			seen = seen || (c.Command == x.command && c.Role == "worker command" && (!e.exitCodes || (c.ExitCode != nil && *c.ExitCode == 0)))
		}
		if !seen {
			t.Errorf("evidence lacks the observed command %q: %+v\n%s", x.command, ev.Observed.Commands, log)
		}
		if !strings.Contains(log, logged) {
			t.Errorf("the worker log lacks %q:\n%s", logged, log)
		}
		tracedCommand(t, b, r.ID, x.command, code)
		// The worker's command line, as hub recorded it.
		over := ""
		if e.acp {
			over = " over ACP"
		}
		recorded := "(" + e.product + over + ", profile t, model " + modelName + ")"
		worker := false
		for _, c := range ev.Observed.Commands {
			worker = worker || (c.Role == "worker" && strings.Contains(c.Command, recorded))
		}
		if !worker {
			t.Errorf("the worker is not recorded as %s: %+v", recorded, ev.Observed.Commands)
		}
		if x.check != nil {
			x.check(t, cliJob{ctx: ctx, b: b, id: r.ID, log: log}, ev)
		}
	})
}

// TestCLIAsks: the model asks its supervisor through hub's worker MCP
// server; the job waits in needs_input, the reply reaches the model as the
// tool's result, and the job goes on to succeed with the answer.
func TestCLIAsks(t *testing.T) {
	eachCLI(t, cliAsks, func(t *testing.T, e cliEngine) {
		ctx := hubtest.Deadline(t, e.deadline)
		b := e.world(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
			switch {
			case answerOf(r) != "":
				return turnOf(e.shell("echo " + answerOf(r) + " > bug.txt")), true
			case e.shellCalled(r):
				return scripted.Turn{Text: "Wrote the supervisor's word to bug.txt."}, true
			case !e.offersHub(r, "ask_supervisor"):
				return scripted.Turn{Text: "hub's tools are missing: " + strings.Join(r.Tools, ", ")}, true
			}
			return turnOf(e.hubCall("ask_supervisor", map[string]string{"question": "Which word should bug.txt say?"})), true
		})
		r := e.start(t, ctx, b, protocol.StartParams{Task: "make bug.txt say the word the supervisor wants", Verify: "grep -qx teal bug.txt", AskTimeoutS: 120})
		wr := hubtest.Daemon(t, b.c).JobWait(ctx, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: (e.deadline * 2 / 3).Seconds()})
		if st := wr.Jobs[0]; st.State != protocol.StateNeedsInput || st.Question == nil || !strings.Contains(st.Question.Text, "Which word") {
			t.Fatalf("the worker's question did not reach the supervisor: %+v\n%s", st, readFile(t, b.paths.WorkerLog(r.ID)))
		}
		if e.asking != nil {
			e.asking(t, cliJob{ctx: ctx, b: b, id: r.ID})
		}
		hubtest.Daemon(t, b.c).JobReply(ctx, protocol.ReplyParams{ID: r.ID, Text: "teal"})
		end := b.waitEnd(ctx, r.ID)
		log := readFile(t, b.paths.WorkerLog(r.ID))
		if end.State != protocol.StateSucceeded {
			t.Fatalf("job ended %s: %s\n%s", end.State, end.Error, log)
		}
		if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "teal" {
			t.Errorf("bug.txt on the branch: %q", got)
		}
		if e.asked != nil {
			e.asked(t, cliJob{ctx: ctx, b: b, id: r.ID, log: log})
		}
	})
}

// TestCLISteer: steering sent while the worker is on a turn, which it never
// picks up through hub's tools, reaches it (see cliSteerMode), and the
// worker acts on it in the same session.
func TestCLISteer(t *testing.T) {
	const steering = "write steered into bug.txt"
	eachCLI(t, cliSteer, func(t *testing.T, e cliEngine) {
		ctx := hubtest.Deadline(t, e.deadline)
		first, steered := make(chan struct{}, 1), make(chan struct{})
		b := e.world(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
			switch {
			case e.shellCalled(r):
				return scripted.Turn{Text: "Took the steering: bug.txt says steered."}, true
			case hasSteering(r, steering):
				return turnOf(e.shell("echo steered > bug.txt")), true
			}
			select {
			case first <- struct{}{}:
			default:
			}
			if e.steer == cliCancel { // a slow turn, which hub must cancel
				return scripted.Turn{Text: "Still thinking.", DelayMS: 60_000}, true
			}
			select { // the run ends right after the steering came
			case <-steered:
			case <-ctx.Done():
			}
			return scripted.Turn{Text: "Looked around; nothing to change."}, true
		})
		r := e.start(t, ctx, b, protocol.StartParams{Task: "look at bug.txt", Verify: "grep -qx steered bug.txt"})
		select {
		case <-first:
		case <-ctx.Done():
			t.Fatal("the worker never asked the model")
		}
		t0 := time.Now()
		hubtest.Daemon(t, b.c).JobSteer(ctx, protocol.SteerParams{ID: r.ID, Text: steering})
		close(steered)
		end := b.waitEnd(ctx, r.ID)
		log := readFile(t, b.paths.WorkerLog(r.ID))
		reqs := b.model.Requests()
		if end.State != protocol.StateSucceeded {
			for i, r := range reqs {
				l := lastMessage(&r)
				t.Logf("request %d: %d messages, last %s %.200q", i, len(r.Messages), l.Role, l.Text)
			}
			t.Fatalf("job ended %s: %s\n%s", end.State, end.Error, log)
		}
		if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":bug.txt"); got != "steered" {
			t.Errorf("bug.txt on the branch: %q", got)
		}
		if ev := b.evidence(ctx, r.ID).Evidence; !strings.Contains(ev.Claimed.Report, "Took the steering") {
			t.Errorf("summary %q; log:\n%s", ev.Claimed.Report, log)
		}
		// The first request that brought the steering.
		var with *scripted.Request
		for i := range reqs {
			if hasSteering(&reqs[i], steering) {
				with = &reqs[i]
				break
			}
		}
		switch e.steer {
		case cliResume:
			if !strings.Contains(log, "resuming session") {
				t.Errorf("no resume in the worker log:\n%s", log)
			}
			// The resumed run carries the first run's history: one session.
			if with == nil || !hasText(with, "assistant", "Looked around; nothing to change.") {
				t.Errorf("the resumed run's request lacks the first run: %+v", with)
			}
		case cliCancel:
			if d := time.Since(t0); d > 40*time.Second {
				t.Errorf("the steering took %s to act on: the slow turn was not cancelled", d)
			}
			if !strings.Contains(log, "cancelling the agent's turn to deliver it") {
				t.Errorf("the worker log does not show the cancel-and-continue:\n%s", log)
			}
			// The steered turn carries the steering and the task (an agent
			// may drop a cancelled turn from its history).
			if with == nil {
				t.Errorf("no request brought the steering")
			} else if l := lastMessage(with).Text; !strings.Contains(l, "STEERING from your supervisor") || !strings.Contains(l, steering) || !strings.Contains(l, "look at bug.txt") {
				t.Errorf("the steered turn's request: %+v", with)
			}
		}
		if e.steered != nil {
			e.steered(t, cliJob{ctx: ctx, b: b, id: r.ID, log: log})
		}
	})
}

// hasSteering reports whether a user message of r's history brings hub's
// steering with text.
func hasSteering(r *scripted.Request, text string) bool {
	for _, m := range r.Messages {
		if m.Role == "user" && strings.Contains(m.Text, "STEERING") && strings.Contains(m.Text, text) {
			return true
		}
	}
	return false
}

// hasText reports whether a message of role in r's history holds text.
func hasText(r *scripted.Request, role, text string) bool {
	for _, m := range r.Messages {
		if m.Role == role && strings.Contains(m.Text, text) {
			return true
		}
	}
	return false
}

// TestCLIStop: stopped while the model takes its time, the job ends
// cancelled within seconds, what the worker had done salvaged onto its
// branch, and nothing of the CLI left running.
func TestCLIStop(t *testing.T) {
	eachCLI(t, cliStop, func(t *testing.T, e cliEngine) {
		ctx := hubtest.Deadline(t, e.deadline)
		slow := make(chan struct{}, 1)
		b := e.world(t, ctx, func(r *scripted.Request) (scripted.Turn, bool) {
			if !e.shellCalled(r) {
				return turnOf(e.shell("echo half done > half.txt")), true
			}
			select {
			case slow <- struct{}{}:
			default:
			}
			return scripted.Turn{Text: "never seen", DelayMS: 60_000}, true
		})
		r := e.start(t, ctx, b, protocol.StartParams{Task: "a long job", Verify: "true"})
		select {
		case <-slow:
		case <-ctx.Done():
			t.Fatal("the worker never got to its slow turn")
		}
		t0 := time.Now()
		st := hubtest.Daemon(t, b.c).JobStop(ctx, protocol.IDParams{ID: r.ID})
		if !st.State.Terminal() {
			st = b.waitEnd(ctx, r.ID)
		}
		if st.State != protocol.StateCancelled || !st.Salvaged || time.Since(t0) > e.stopWithin {
			t.Fatalf("stopped job: %+v after %s (want within %s)\n%s", st, time.Since(t0), e.stopWithin, readFile(t, b.paths.WorkerLog(r.ID)))
		}
		if got := hubtest.Git(t, b.repo, "show", "hub/"+r.ID+":half.txt"); got != "half done" {
			t.Errorf("half.txt on the branch: %q", got)
		}
		if msg := hubtest.Git(t, b.repo, "log", "-1", "--format=%B", "hub/"+r.ID); !strings.Contains(msg, "Hub-Salvage: true") {
			t.Errorf("no salvage commit:\n%s", msg)
		}
		for _, l := range b.evidence(ctx, r.ID).Evidence.Observed.Leftovers {
			if !l.Ended {
				t.Errorf("a process of the worker survived the stop: %+v", l)
			}
		}
	})
}
