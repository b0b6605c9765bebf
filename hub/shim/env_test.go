package shim

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/redact"
)

// TestAllowListHoldsNoKeys: no name a worker inherits says it holds a secret.
func TestAllowListHoldsNoKeys(t *testing.T) {
	for name := range envAllow {
		if redact.SecretName(name) {
			t.Errorf("%s is allowed into a worker's environment but names a secret", name)
		}
	}
}

// TestWorkerEnv: a worker gets the allowed names, LC_*, hub's directory
// first on PATH and what the shim adds; none of the keys in the shim's own
// environment, nor an allowed variable that carries one.
func TestWorkerEnv(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY": "sk-proj-canary0000000000000000", "ANTHROPIC_API_KEY": "sk-ant-canary00000000000000",
		"AWS_SECRET_ACCESS_KEY": "awscanary0000000000000000000000000000000", "GITHUB_TOKEN": "ghp_canary00000000000000000000000000000",
		"MY_SERVICE_TOKEN": "svc-canary-0000", "DB_PASSWORD": "pw-canary-0000", "GW_CRED": "gw-canary-0000",
		"SSH_AUTH_SOCK": "/tmp/ssh-canary/agent", "GOPROXY": "https://me:proxy-canary-0000@proxy.example",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("LC_ALL", "C.UTF-8")
	t.Setenv("HOME", "/home/someone")
	env := workerEnv("/opt/hub/bin/hub", "HUB_JOB=abc")
	names := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		names[k] = v
		if !envAllow[k] && !strings.HasPrefix(k, "LC_") && k != "HUB_JOB" {
			t.Errorf("%s reached the worker", k)
		}
		for name, secret := range secrets {
			if strings.Contains(v, secret) {
				t.Errorf("%s's value reached the worker in %s", name, k)
			}
		}
	}
	if names["HOME"] != "/home/someone" || names["LC_ALL"] != "C.UTF-8" || names["HUB_JOB"] != "abc" {
		t.Errorf("allowed variables missing: %v", names)
	}
	if !strings.HasPrefix(names["PATH"], "/opt/hub/bin"+string(os.PathListSeparator)) {
		t.Errorf("PATH %q does not start with hub's directory", names["PATH"])
	}
}

// TestSecrets: the shim's redactor knows every profile key (under the name
// the profile gives, or from the env file) and the secret variables of its
// environment.
func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HUB_CONFIG_DIR", dir)
	st := profile.Store{Dir: dir}
	if err := st.Set(profile.Profile{Name: "gw", Provider: profile.OpenAI, Model: "m", KeyEnv: "GW_CRED"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Set(profile.Profile{Name: "claude", Provider: profile.Anthropic, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetKey("ANTHROPIC_API_KEY", "file-key-0123456789"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GW_CRED", "gw-env-key-0123456789")
	t.Setenv("MY_SERVICE_TOKEN", "svc-token-0123456789")
	t.Setenv("HARMLESS", "harmless-value-0123")
	got := secrets().String("a file-key-0123456789 b gw-env-key-0123456789 c svc-token-0123456789 d harmless-value-0123")
	if want := "a [REDACTED] b [REDACTED] c [REDACTED] d harmless-value-0123"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestLineRedactor: what reaches the worker log is redacted whole however
// the output was split into writes: a value cut across two writes, a
// private key over many lines, a line too long to hold.
func TestLineRedactor(t *testing.T) {
	var log bytes.Buffer
	l := &lineRedactor{w: &log, r: redact.New("canary-0123456789")}
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDx\n-----END OPENSSH PRIVATE KEY-----\n"
	long := strings.Repeat("word ", maxLine/5) + "canary-0123456789 " + strings.Repeat("x", 100) + "\n"
	out := "start canary-0123456789 end\n" + key + "after\n" + long + "tail without newline canary-0123456789"
	for i := 0; i < len(out); i += 7 { // writes that cut everything in odd places
		if _, err := l.Write([]byte(out[i:min(i+7, len(out))])); err != nil {
			t.Fatal(err)
		}
	}
	l.Flush()
	got := log.String()
	for _, leak := range []string{"canary-0123456789", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "QyNTUxOQAAACDx"} {
		if strings.Contains(got, leak) {
			t.Errorf("the log holds %q", leak)
		}
	}
	for _, kept := range []string{"start [REDACTED] end\n[REDACTED]\nafter\nword word", "tail without newline [REDACTED]"} {
		if !strings.Contains(got, kept) {
			t.Errorf("the log lacks %q", kept)
		}
	}
}
