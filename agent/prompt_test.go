package agent

import (
	"strings"
	"testing"
)

// TestOneTaskPrompt: the built-in worker and an agent CLI are told the same
// task in the same words, and the same of their supervisor, steering and
// git; what differs is what their engines differ in: who writes the system
// prompt, the built-in worker's own tools and helpers, how hub's tools are
// named, how the answer ends.
func TestOneTaskPrompt(t *testing.T) {
	cli := Worker{ToolPrefix: "mcp__hub__"}
	for _, write := range []bool{true, false} {
		b := Brief{Task: " fix bug.txt \n", Files: []string{"bug.txt"}, DefinitionOfDone: "bug.txt says fixed", Verify: "grep -qx fixed bug.txt", Write: write}
		own, other := builtin.Prompt(b), cli.Prompt(b)
		if own.User != taskMessage(Config{Task: b.Task, Files: b.Files, DefinitionOfDone: b.DefinitionOfDone, Verify: b.Verify, Write: write}) ||
			!strings.HasPrefix(own.User, "Task:\nfix bug.txt\n") || !strings.Contains(own.User, "`grep -qx fixed bug.txt`") {
			t.Errorf("write %v: the built-in worker's task:\n%s", write, own.User)
		}
		if other.System != "" || !strings.Contains(other.User, "\n\n"+own.User+"\n") {
			t.Errorf("write %v: the CLI's prompt does not hold the task as the built-in worker gets it:\n%s", write, other.User)
		}
		for _, p := range []string{own.System, other.User} {
			if !strings.Contains(p, steerLine) {
				t.Errorf("write %v: no word of steering:\n%s", write, p)
			}
		}
		if !strings.Contains(own.System, "with ask_supervisor") || !strings.Contains(other.User, "with mcp__hub__ask_supervisor") ||
			strings.Contains(other.User, " ask_supervisor") {
			t.Errorf("write %v: hub's tools are not named as each engine names them:\n%s\n---\n%s", write, own.System, other.User)
		}
		for _, tool := range []string{"read_file", "run_shell", "edit_file", "helper", "without calling a tool"} {
			if strings.Contains(other.User, tool) {
				t.Errorf("write %v: the CLI is told of the built-in worker's %q:\n%s", write, tool, other.User)
			}
		}
		if !write && (strings.Contains(own.System, "files you changed") || strings.Contains(other.User, "files you changed")) {
			t.Errorf("a read job is asked for the files it changed:\n%s\n---\n%s", own.System, other.User)
		}
	}
	own, other := leadPrompt, cli.Prompt(Brief{Task: "x", Write: true}).User
	if !strings.HasPrefix(other, "You are working one bounded task") || !strings.Contains(leadPrompt, "senior software engineer working alone") {
		t.Errorf("intros:\n%s\n---\n%s", own, other)
	}
	for _, line := range []string{"- Do not commit, push, or change git configuration: hub commits your work.", "- Never try to reach outside the worktree.",
		"then the files you changed and how you checked it; then anything left open."} {
		if !strings.Contains(own, line) || !strings.Contains(other, line) {
			t.Errorf("%q is not said to both:\n%s\n---\n%s", line, own, other)
		}
	}
	for _, tool := range []string{"(list_dir, glob, grep, read_file)", "edit_file (exact, unique replacements) or write_file", "with run_shell", "a helper (implementer, tester, reviewer)"} {
		if !strings.Contains(own, tool) {
			t.Errorf("the built-in worker is not told of %s:\n%s", tool, own)
		}
	}
	if !strings.Contains(readPrompt, "read and search (list_dir, glob, grep, read_file)") || strings.Contains(readPrompt, "helper") {
		t.Errorf("read prompt:\n%s", readPrompt)
	}
}

func TestSteeringPrompt(t *testing.T) {
	got := SteeringPrompt([]string{" use tabs \n", "keep the API"})
	want := SteerHeader + "\nuse tabs\n\n" + SteerHeader + "\nkeep the API\n\nGo on with the task with this in mind, then end with your summary as before."
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := SteerText([]string{"use tabs"}); got != "\n\n"+SteerHeader+"\nuse tabs" {
		t.Errorf("steerText %q", got)
	}
}
