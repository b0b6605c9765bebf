//go:build unix

package agentcli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestEngine: a CLI table makes an engine that checks the program, the
// engine's own refusals and the profile, in that order, and launches the
// CLI with its profile resolved, its private home made, its prompt and
// what hub records it ran.
func TestEngine(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-cli")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho '{\"t\":\"final\",\"v\":\"'\"$1\"'\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HUB_FAKE_CLI", bin)
	t.Setenv("HUB_FAKE_KEY", "sk-fake")
	st := profile.Store{Dir: dir}
	for _, p := range []profile.Profile{{Name: "o", Provider: profile.OpenAI, Model: "m", KeyEnv: "HUB_FAKE_KEY"}, {Name: "a", Provider: profile.Anthropic, Model: "c", KeyEnv: "X"}} {
		if err := st.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	var job *agentcli.Job
	e := agentcli.New(agentcli.CLI{
		Program:   agentcli.Program{Engine: "fake", Binary: "fake-cli", PathEnv: "HUB_FAKE_CLI", Product: "Fake", Install: "make fake"},
		Providers: []string{profile.OpenAI}, Mismatch: "Fake speaks openai only", ToolPrefix: "fake_",
		Refuse: func(p protocol.StartParams) error {
			if p.MaxTurns > 0 {
				return errors.New("no turn limit")
			}
			return nil
		},
		Launch: func(ctx context.Context, j *agentcli.Job) (engine.Run, error) {
			job = j
			return j.Run(ctx, "fake-cli run", agentcli.Invocation{Args: []string{j.Model}, Env: j.Env, Parse: parse})
		},
	}, agentcli.Options{ConfigDir: dir})

	if c := e.Capabilities(); e.Name() != "fake" || c.Pays != protocol.PaysAPI || !slices.Equal(c.Isolation, []protocol.Isolation{protocol.IsolationWorktree}) {
		t.Errorf("name %s capabilities %+v", e.Name(), c)
	}
	for _, tc := range []struct {
		p    protocol.StartParams
		want string
	}{
		{protocol.StartParams{Profile: "a", Exec: "true", MaxTurns: 1}, "exec is for the exec engine"},
		{protocol.StartParams{Profile: "a", MaxTurns: 1}, "no turn limit"},
		{protocol.StartParams{Profile: "a"}, "uses provider anthropic; this engine speaks to openai endpoints: pick a profile with one of those providers (Fake speaks openai only)"},
		{protocol.StartParams{Profile: "nope"}, `no profile "nope"`},
	} {
		if err := e.Check(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%+v) = %v, want %q", tc.p, err, tc.want)
		}
	}
	if err := e.Check(protocol.StartParams{Profile: "nope"}); strings.Contains(err.Error(), "Fake speaks") {
		t.Errorf("a missing profile is not a provider's mismatch: %v", err)
	}

	spec := engine.Spec{JobID: "j", Dir: t.TempDir(), Scratch: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=/home/user"},
		Params: protocol.StartParams{Profile: "o", Model: "m2", Task: "fix it"}}
	r, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	o := r.Wait()
	if o.ExitCode != 0 || o.Summary != "m2" || o.Command != "fake-cli run (Fake, profile o, model m2)" {
		t.Errorf("outcome %+v", o)
	}
	if job.Path != bin || job.Name != "o" || job.Key != "sk-fake" || job.BaseURL == "" || job.Home != filepath.Join(spec.Scratch, "home") ||
		!slices.Contains(job.Env, "HOME="+job.Home) || !strings.Contains(job.Prompt(), "fix it") || !strings.Contains(job.Prompt(), "fake_ask_supervisor") {
		t.Errorf("job %+v\nprompt:\n%s", job, job.Prompt())
	}
}
