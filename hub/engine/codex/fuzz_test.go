package codex

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/model"
)

// checkedEvents fails the test on an event no stream may produce.
type checkedEvents struct{ t *testing.T }

func (e checkedEvents) Session(id string) {
	if id == "" {
		e.t.Fatal("Session with an empty id")
	}
}
func (e checkedEvents) Said(string)                     {}
func (e checkedEvents) Tool(string, string)             {}
func (e checkedEvents) Command(string, *int, time.Time) {}
func (e checkedEvents) Final(text string) {
	if strings.TrimSpace(text) == "" {
		e.t.Fatal("Final with an empty answer")
	}
}
func (e checkedEvents) Usage(u model.Usage)  { e.usage("Usage", u) }
func (e checkedEvents) Tokens(u model.Usage) { e.usage("Tokens", u) }
func (e checkedEvents) Failed(msg string) {
	if !strings.HasPrefix(msg, "Codex: ") || strings.TrimSpace(strings.TrimPrefix(msg, "Codex: ")) == "" {
		e.t.Fatalf("Failed(%q): want \"Codex: \" and a message", msg)
	}
}

func (e checkedEvents) Cost(usd float64) {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		e.t.Fatalf("Cost(%v): a cost must be a finite amount, not negative", usd)
	}
}

func (e checkedEvents) usage(what string, u model.Usage) {
	if u.Input < 0 || u.Output < 0 || u.CachedInput < 0 || u.CachedInput > u.Input {
		e.t.Fatalf("%s(%+v): token counts must not be negative, nor cached ones more than the input", what, u)
	}
}

// FuzzParse feeds arbitrary bytes, line by line, to one parser of
// `codex exec --json`, as the run's reader does. It must never panic; the
// events it reports hold token counts that are not negative (cached ones part
// of the input), a non-empty session id and final answer, and failures
// worded "Codex: <message>". Seeds: the recorded streams in testdata.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"type":"turn.completed","usage":{"input_tokens":-5,"cached_input_tokens":9,"output_tokens":3}}`,
		`{"type":"item.completed","item":{"type":"file_change","status":"completed","changes":[{"path":"/w/../etc/passwd","kind":"update"},{"path":"rel","kind":"add"}]}}`,
		`{"type":"error","message":"{\"error\":{\"message\":\"404 /responses\",\"type\":\"x\"}}"}` + "\n" + `{"type":"turn.failed","error":{"message":""}}`,
		`{"type":"item.completed","item":{"type":"mcp_tool_call","server":"hub","tool":"ask","arguments":{"q":1},"error":{"message":"timeout"}}}`,
		`{"type":"item.completed","item":{"type":"command_execution","command":"/bin/zsh -lic \"echo \\\"hi\\\" \\\\$HOME\"","exit_code":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parse := newParser("/w")
		ev := checkedEvents{t}
		for line := range bytes.Lines(data) {
			if len(bytes.TrimSpace(line)) > 0 {
				parse(line, ev)
			}
		}
	})
}

// quote quotes s for a POSIX shell as one word, the way Codex does for
// arguments that need it.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// FuzzShellScript checks the reading of the shell command lines Codex
// reports. splitWords must never panic, and must read back exactly the words
// a POSIX shell quoting gives it; shellScript must unwrap
// `/bin/bash -lc <script>` to the script, and give any command it does not
// unwrap back unchanged.
func FuzzShellScript(f *testing.F) {
	f.Add(`/bin/bash -lc 'echo fixed > bug.txt'`, "bash", "echo 'a b' \"c\\\"d\" \\$e")
	f.Add(`/usr/bin/zsh -c "printf \"%s\\n\" \$HOME"`, "-c", "")
	f.Add(`sh -lic ls\ -l`, "/bin/sh", "x\ny")
	f.Add(`bash -lc 'unterminated`, "'", `\`)
	f.Add(`"a"'b'\c  d`, "é\x00", "\t")
	f.Fuzz(func(t *testing.T, cmd, word, script string) {
		// Arbitrary input: no panic; what is not unwrapped is unchanged.
		if got := shellScript(cmd); got != cmd {
			if argv, ok := splitWords(cmd); !ok || len(argv) != 3 || argv[2] != got {
				t.Fatalf("shellScript(%q) = %q, which is neither the command nor its third word", cmd, got)
			}
		}
		// Quoted words read back exactly.
		words := []string{word, script, cmd}
		line := quote(word) + " " + quote(script) + "\t" + quote(cmd)
		got, ok := splitWords(line)
		if !ok || len(got) != 3 || got[0] != word || got[1] != script || got[2] != cmd {
			t.Fatalf("splitWords(%q) = %q, %v; want %q", line, got, ok, words)
		}
		for _, sh := range []string{"/bin/bash -lc ", "bash -c ", "/usr/bin/zsh -lic "} {
			if got := shellScript(sh + quote(script)); got != script {
				t.Fatalf("shellScript(%q) = %q, want the script %q", sh+quote(script), got, script)
			}
		}
	})
}
