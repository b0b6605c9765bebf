package agent

import (
	"fmt"
	"strings"
)

// The prompts are short on purpose: every token of them is paid on every call.

// Brief is the task as the caller gave it: what a worker's task prompt is
// built from, whichever engine runs the worker.
type Brief struct {
	Task             string
	Files            []string // where to look first
	DefinitionOfDone string
	Verify           string // the caller's check, for the worker to run
	Write            bool   // a write job (false: answer a question, change nothing)
}

// Worker is what a task prompt says differently from one engine to
// another. Everything else a worker is told about its task, its
// supervisor and its answer is said once, by Prompt, for every engine.
type Worker struct {
	// System: the prompt is the worker's system prompt (hub's built-in
	// worker). It then says who the worker is, the task comes as the first
	// message, and the final answer is one without a tool call (the loop
	// ends there). Without it (an agent CLI, which keeps its own system
	// prompt) everything is one prompt and the worker ends its own way.
	System bool
	// Tools are the worker's own tools, named where the prompt says how to
	// look, change and check ("": not named; an agent CLI's own system
	// prompt teaches its tools).
	Tools ToolNames
	// ToolPrefix is how the engine names hub's worker tools
	// (report_progress, ask_supervisor, report_blocker) to its model:
	// "mcp__hub__" for Claude Code, "hub_" for OpenCode, "" for the
	// built-in worker, whose tools go by their own names.
	ToolPrefix string
	// Helpers: a write job's worker may hand sub-tasks to helpers (the
	// built-in worker's implementer, tester and reviewer).
	Helpers bool
}

// ToolNames names a worker's own tools in its prompt, by what they are for.
type ToolNames struct {
	Read string // to look around: "list_dir, glob, grep, read_file"
	Edit string // to change code: "edit_file (…) or write_file"
	Run  string // to run the tests and the check: "run_shell"
}

// Prompt is a worker's task prompt.
type Prompt struct {
	// System is the worker's system prompt ("" when the engine keeps its own).
	System string
	// User is the first message: the task, and everything when there is no System.
	User string
}

// steerLine is how every worker is told about steering.
const steerLine = "Messages marked STEERING come from your supervisor while you work: they override earlier guidance."

// Prompt is the task prompt for b as w's engine hands it over.
func (w Worker) Prompt(b Brief) Prompt {
	task := taskText(b)
	var intro, rest string
	if b.Write {
		intro, rest = w.writeIntro(), w.howToWork()+"\n\n"+w.writeEnding()
	} else {
		intro, rest = w.readIntro(), w.readRules()
	}
	if w.System {
		sep := "\n"
		if b.Write {
			sep = "\n\n"
		}
		return Prompt{System: intro + sep + rest, User: task}
	}
	return Prompt{User: intro + "\n\n" + task + "\n" + rest + "\n"}
}

// writeIntro is who the worker is and what it is to do (a write job).
func (w Worker) writeIntro() string {
	if w.System {
		return "You are a careful senior software engineer working alone in a git worktree. Your supervisor handed you one bounded task; finish it completely, then stop."
	}
	return "You are working one bounded task in this git worktree for a supervisor. Finish it completely, check it, then stop."
}

// readIntro is who the worker is and what it may do (a read job).
func (w Worker) readIntro() string {
	may := "You may read and search" + named(w.Tools.Read) + " but must not change anything."
	if w.System {
		return "You are a careful senior software engineer answering a question about the code in this directory. " + may
	}
	return "Answer this question about the code in this directory. " + may
}

// howToWork are a write job's rules, a line each.
func (w Worker) howToWork() string {
	p := w.ToolPrefix
	var lines []string
	if w.Tools.Read != "" {
		lines = append(lines, "Look before you change: read the files named in the task and whatever they depend on"+named(w.Tools.Read)+".")
	}
	if w.Tools.Edit != "" {
		lines = append(lines, "Change code with "+w.Tools.Edit+". Keep changes small and in the style of the code around them. Do not reformat unrelated code.")
	}
	if w.Tools.Run != "" {
		lines = append(lines, "Run the project's tests or the check you were given with "+w.Tools.Run+", read the failures, fix, and run again until it passes.")
	}
	lines = append(lines,
		"Report progress with "+p+"report_progress at milestones (one short line; it also brings new direction), not every step.",
		"If a decision is not yours to make (product behaviour, an API others depend on, deleting data), ask with "+p+"ask_supervisor; "+
			"if you cannot go on at all, use "+p+"report_blocker. Otherwise decide sensibly yourself and say so in your final answer.",
		steerLine)
	if w.Helpers {
		lines = append(lines, "You may hand a well-defined sub-task to a helper (implementer, tester, reviewer) when it keeps your own context small; you remain responsible for the result.")
	}
	lines = append(lines,
		"Do not commit, push, or change git configuration: hub commits your work.",
		"Never try to reach outside the worktree.")
	return "How to work:\n- " + strings.Join(lines, "\n- ")
}

// writeEnding is what a write job's final answer says.
func (w Worker) writeEnding() string {
	how := "end with a short summary"
	if w.System {
		how = "answer without calling a tool"
	}
	return "When you are done, " + how + ": first line, what you did in one sentence; then the files you changed and how you checked it; then anything left open."
}

// readRules are a read job's rules and what its answer says.
func (w Worker) readRules() string {
	how := "end with it"
	if w.System {
		how = "reply without calling a tool"
	}
	return "Ask your supervisor with " + w.ToolPrefix + "ask_supervisor only if the question cannot be answered without a decision from them.\n" +
		steerLine + "\n" +
		"When you know the answer, " + how + ": the answer first, then the evidence (files and lines)."
}

// named is tools in brackets, after a space ("" for none).
func named(tools string) string {
	if tools == "" {
		return ""
	}
	return " (" + tools + ")"
}

// taskText is the task and everything the caller said about it.
func taskText(b Brief) string {
	var s strings.Builder
	s.WriteString("Task:\n")
	s.WriteString(strings.TrimSpace(b.Task))
	s.WriteString("\n")
	if len(b.Files) > 0 {
		fmt.Fprintf(&s, "\nLook first at: %s\n", strings.Join(b.Files, ", "))
	}
	if dod := strings.TrimSpace(b.DefinitionOfDone); dod != "" {
		fmt.Fprintf(&s, "\nDefinition of done (you will be graded against it):\n%s\n", dod)
	}
	if b.Verify != "" {
		fmt.Fprintf(&s, "\nThe check that must pass on your result: `%s` (run it yourself before you finish).\n", b.Verify)
	}
	return s.String()
}

// builtin is hub's built-in worker as its task prompt names it.
var builtin = Worker{System: true, Helpers: true, Tools: ToolNames{
	Read: "list_dir, glob, grep, read_file",
	Edit: "edit_file (exact, unique replacements) or write_file",
	Run:  "run_shell",
}}

// The built-in worker's system prompts, for a write job (the lead's) and a read job.
var (
	leadPrompt = builtin.Prompt(Brief{Write: true}).System
	readPrompt = builtin.Prompt(Brief{}).System
)

// taskMessage is the built-in worker's first user message: the task and
// everything the caller said about it.
func taskMessage(cfg Config) string {
	return builtin.Prompt(Brief{Task: cfg.Task, Files: cfg.Files, DefinitionOfDone: cfg.DefinitionOfDone, Verify: cfg.Verify, Write: cfg.Write}).User
}

var rolePrompts = map[string]string{
	"implementer": `You are an implementer helping a lead engineer. Make exactly the change you are given in this git worktree: read first, edit with edit_file or write_file, run what proves it works with run_shell. Do not commit. When done, reply without a tool call: what you changed (files) and how you checked it, in a few lines.`,
	"tester":      `You are a tester helping a lead engineer. Write or extend tests for the behaviour you are given, run them with run_shell, and report precisely what passes and what fails (with the failing output, shortened). Change only test files unless told otherwise. Do not commit. Reply without a tool call when done.`,
	"reviewer":    `You are a code reviewer helping a lead engineer. You can only read. Review what you are given for bugs, missing cases, and departures from the task; cite files and lines. Reply without a tool call with a short list of findings, most serious first, or "no findings".`,
}

// SteerHeader marks steering, wherever a worker gets it.
const SteerHeader = "STEERING from your supervisor (this overrides earlier guidance):"

// SteerText is steering appended to what a worker reads next: a tool's
// result (the built-in worker's, or hub's worker tools over MCP), or the
// built-in worker's own answer sent back.
func SteerText(steers []string) string {
	var b strings.Builder
	for _, s := range steers {
		b.WriteString("\n\n")
		b.WriteString(SteerHeader)
		b.WriteString("\n")
		b.WriteString(strings.TrimSpace(s))
	}
	return b.String()
}

// SteeringPrompt is a prompt of its own that hands a worker the steering
// it has not taken yet: an agent CLI's session resumed with it, an ACP
// agent's next turn.
func SteeringPrompt(steers []string) string {
	var b strings.Builder
	for _, s := range steers {
		b.WriteString(SteerHeader)
		b.WriteString("\n")
		b.WriteString(strings.TrimSpace(s))
		b.WriteString("\n\n")
	}
	b.WriteString("Go on with the task with this in mind, then end with your summary as before.")
	return b.String()
}

const summaryPrompt = `You compress the history of a coding agent's session so it can go on with less context. Write a faithful summary for the agent itself: what the task is, what it has found (files, functions, facts with paths), what it changed (files and how), what it ran and the results, decisions and answers from the supervisor, and what it was about to do next. Be specific and terse; no preamble.`
