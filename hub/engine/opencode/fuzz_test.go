package opencode

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

// checkedEvents fails the test on an event no stream may produce, and keeps
// the last cost reported.
type checkedEvents struct {
	t    *testing.T
	cost float64
}

func (e *checkedEvents) Session(id string) {
	if id == "" {
		e.t.Fatal("Session with an empty id")
	}
}
func (e *checkedEvents) Said(text string) {
	if strings.TrimSpace(text) == "" {
		e.t.Fatal("Said with no text")
	}
}
func (e *checkedEvents) Tool(string, string)             {}
func (e *checkedEvents) Command(string, *int, time.Time) {}
func (e *checkedEvents) Final(text string) {
	if strings.TrimSpace(text) == "" {
		e.t.Fatal("Final with an empty answer")
	}
}
func (e *checkedEvents) Usage(u model.Usage)  { e.usage("Usage", u) }
func (e *checkedEvents) Tokens(u model.Usage) { e.usage("Tokens", u) }
func (e *checkedEvents) Failed(msg string) {
	if !strings.HasPrefix(msg, "OpenCode: ") {
		e.t.Fatalf("Failed(%q): want \"OpenCode: \" and a message", msg)
	}
}

// Cost is a running total: above zero, under a billion dollars, never falling.
func (e *checkedEvents) Cost(usd float64) {
	if math.IsNaN(usd) || usd <= 0 || usd >= 1e9 {
		e.t.Fatalf("Cost(%v): a cost must be an amount above zero and under a billion dollars", usd)
	}
	if usd < e.cost {
		e.t.Fatalf("Cost(%v) after Cost(%v): the total fell", usd, e.cost)
	}
	e.cost = usd
}

func (e *checkedEvents) usage(what string, u model.Usage) {
	if u.Input < 0 || u.Output < 0 || u.CachedInput < 0 || u.CachedInput > u.Input {
		e.t.Fatalf("%s(%+v): token counts must not be negative, nor cached ones more than the input", what, u)
	}
}

// FuzzParse feeds arbitrary bytes, line by line, to one parser of
// `opencode run --format json`, as the run's reader does. It must never
// panic; the events it reports hold token counts that are not negative
// (cached ones part of the input), a running cost that is above zero, under
// a billion dollars (so its micro-dollars fit an int64) and never falls,
// non-empty session ids, notes and final answers, and failures worded
// "OpenCode: …". Seeds: the recorded streams in testdata.
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
		`{"type":"step_finish","sessionID":"s","part":{"reason":"stop","tokens":{"input":-1,"output":2,"reasoning":-3,"cache":{"read":5,"write":-9}},"cost":1e308}}` + "\n" +
			`{"type":"step_finish","sessionID":"s","part":{"reason":"stop","cost":1e308}}`,
		`{"type":"tool_use","sessionID":"s","part":{"tool":"bash","state":{"status":"error","input":{"command":"exit 3"},"error":"boom","metadata":{"exit":3}}}}`,
		`{"type":"error","sessionID":"s2","error":{"name":"APIError","data":{"message":"overloaded","statusCode":529}}}`,
		`{"type":"text","part":{"text":"  "}}` + "\n" + `{"type":"step_finish","part":{"reason":"tool-calls","cost":-1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parse := newParser()
		ev := &checkedEvents{t: t}
		for line := range bytes.Lines(data) {
			if len(bytes.TrimSpace(line)) > 0 {
				parse(line, ev)
			}
		}
	})
}
