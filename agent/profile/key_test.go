package profile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/agent/profile"
)

// writeEnvFile writes the store's env file with mode perm (chmod'ed, so the
// umask does not matter).
func writeEnvFile(t *testing.T, s profile.Store, text string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.EnvFile(), []byte(text), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.EnvFile(), perm); err != nil {
		t.Fatal(err)
	}
}

func readEnvFile(t *testing.T, s profile.Store) string {
	t.Helper()
	b, err := os.ReadFile(s.EnvFile())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestKeyPrecedence(t *testing.T) {
	openai := profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		file    string // "" for no env file
		p       profile.Profile
		wantKey string
		wantSrc string
	}{
		{"environment only", map[string]string{"OPENAI_API_KEY": "sk-env"}, "", openai, "sk-env", profile.FromEnv},
		{"env file only", nil, "OPENAI_API_KEY=sk-file\n", openai, "sk-file", profile.FromEnvFile},
		{"environment wins over env file", map[string]string{"OPENAI_API_KEY": "sk-env"}, "OPENAI_API_KEY=sk-file\n", openai, "sk-env", profile.FromEnv},
		{"environment value is trimmed", map[string]string{"OPENAI_API_KEY": "  sk-env \n"}, "", openai, "sk-env", profile.FromEnv},
		{"blank environment falls back to the file", map[string]string{"OPENAI_API_KEY": "  "}, "OPENAI_API_KEY=sk-file\n", openai, "sk-file", profile.FromEnvFile},
		{"anthropic default variable", map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-env"}, "",
			profile.Profile{Name: "c", Provider: profile.Anthropic, Model: "m"}, "sk-ant", profile.FromEnv},
		{"key env names the variable", map[string]string{"OPENAI_API_KEY": "sk-wrong"}, "GW_KEY=sk-gw\n",
			profile.Profile{Name: "gw", Provider: profile.OpenAI, Model: "m", KeyEnv: "GW_KEY"}, "sk-gw", profile.FromEnvFile},
		{"ollama needs none", nil, "", profile.Profile{Name: "l", Provider: profile.Ollama, Model: "q"}, "", profile.NotNeeded},
		{"ollama ignores the openai key", map[string]string{"OPENAI_API_KEY": "sk-env"}, "", profile.Profile{Name: "l", Provider: profile.Ollama, Model: "q"}, "", profile.NotNeeded},
		{"ollama with a key env but no key", nil, "", profile.Profile{Name: "l", Provider: profile.Ollama, Model: "q", KeyEnv: "OLLAMA_KEY"}, "", profile.NotNeeded},
		{"ollama with a key env and a key", map[string]string{"OLLAMA_KEY": "k"}, "", profile.Profile{Name: "l", Provider: profile.Ollama, Model: "q", KeyEnv: "OLLAMA_KEY"}, "k", profile.FromEnv},
		{"scripted needs none", nil, "", profile.Profile{Name: "s", Provider: profile.Scripted, Script: profile.Demo}, "", profile.NotNeeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(tc.env)}
			if tc.file != "" {
				writeEnvFile(t, s, tc.file, 0o600)
			}
			key, src, err := s.Key(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.wantKey, tc.wantSrc}, []string{key, src}); diff != "" {
				t.Errorf("Key = (key, source) (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnvFileParsing(t *testing.T) {
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
	writeEnvFile(t, s, strings.Join([]string{
		"# hub keys",
		"",
		"   ",
		"PLAIN=plain-value",
		"export EXPORTED=exported-value",
		`DOUBLE="double quoted"`,
		`SINGLE='single quoted'`,
		`MISMATCHED="half'`,
		`LONE="`,
		"  SPACED =  spaced-value  ",
		"\tTABBED=tabbed-value",
		"EQUALS=a=b=c",
		"EMPTY=",
		"# COMMENTED=commented-value",
		"   # INDENTED_COMMENT=x",
		"no equals sign here",
		"BAD-NAME=x",
		"DUP=first",
		"DUP=last",
		"CRLF=crlf-value\r",
		"NO_NEWLINE=at-the-end",
	}, "\n"), 0o600)
	for _, tc := range []struct {
		variable string
		want     string // "" means missing
	}{
		{"PLAIN", "plain-value"},
		{"EXPORTED", "exported-value"},
		{"DOUBLE", "double quoted"},
		{"SINGLE", "single quoted"},
		{"MISMATCHED", `"half'`},
		{"LONE", `"`},
		{"SPACED", "spaced-value"},
		{"TABBED", "tabbed-value"},
		{"EQUALS", "a=b=c"},
		{"DUP", "last"},
		{"CRLF", "crlf-value"},
		{"NO_NEWLINE", "at-the-end"},
		{"EMPTY", ""},
		{"COMMENTED", ""},
		{"INDENTED_COMMENT", ""},
		{"BAD", ""},
	} {
		t.Run(tc.variable, func(t *testing.T) {
			p := profile.Profile{Name: "p", Provider: profile.OpenAI, Model: "m", KeyEnv: tc.variable}
			key, src, err := s.Key(p)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("Key = %q from %s, want missing", key, src)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if key != tc.want || src != profile.FromEnvFile {
				t.Errorf("Key = %q from %s, want %q from the env file", key, src, tc.want)
			}
		})
	}
}

func TestKeyMissing(t *testing.T) {
	for _, tc := range []struct {
		p        profile.Profile
		variable string
	}{
		{profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}, "OPENAI_API_KEY"},
		{profile.Profile{Name: "claude", Provider: profile.Anthropic, Model: "m"}, "ANTHROPIC_API_KEY"},
		{profile.Profile{Name: "gw", Provider: profile.OpenAI, Model: "m", KeyEnv: "GW_KEY"}, "GW_KEY"},
	} {
		t.Run(tc.p.Name, func(t *testing.T) {
			s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(map[string]string{"OTHER": "x"})}
			// An env file holding other keys does not help.
			writeEnvFile(t, s, "OTHER_KEY=x\n", 0o600)
			key, src, err := s.Key(tc.p)
			if err == nil {
				t.Fatalf("Key = %q from %s, want an error", key, src)
			}
			if key != "" {
				t.Errorf("Key returned %q with its error", key)
			}
			for _, w := range []string{tc.variable, "--key-stdin", "hub profile set " + tc.p.Name, s.EnvFile()} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestEnvFileReadableByOthers(t *testing.T) {
	for _, perm := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
		writeEnvFile(t, s, "OPENAI_API_KEY=sk-file\n", perm)
		key, _, err := s.Key(profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"})
		if err == nil {
			t.Errorf("mode %04o: Key = %q, want a refusal", perm, key)
			continue
		}
		if key != "" {
			t.Errorf("mode %04o: Key returned %q with its error", perm, key)
		}
		for _, w := range []string{"chmod 600 " + s.EnvFile(), "readable by others"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("mode %04o: error %q does not mention %q", perm, err, w)
			}
		}
		if strings.Contains(err.Error(), "sk-file") {
			t.Errorf("mode %04o: error %q holds the key", perm, err)
		}
	}
	// The environment is read first, so an exported key still works.
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(map[string]string{"OPENAI_API_KEY": "sk-env"})}
	writeEnvFile(t, s, "OPENAI_API_KEY=sk-file\n", 0o644)
	if key, src, err := s.Key(profile.Profile{Name: "cheap", Provider: profile.OpenAI, Model: "m"}); err != nil || key != "sk-env" || src != profile.FromEnv {
		t.Errorf("Key = %q, %q, %v; want sk-env from the environment", key, src, err)
	}
}

func TestSetKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string // "" for no env file
		key   string
		value string
		want  string
	}{
		{"creates the file", "", "OPENAI_API_KEY", "sk-new", "OPENAI_API_KEY=sk-new\n"},
		{"appends to others", "OTHER=1\n", "OPENAI_API_KEY", "sk-new", "OTHER=1\nOPENAI_API_KEY=sk-new\n"},
		{"appends a newline-less last line", "OTHER=1", "OPENAI_API_KEY", "sk-new", "OTHER=1\nOPENAI_API_KEY=sk-new\n"},
		{"trims the value", "", "OPENAI_API_KEY", "  sk-new \n", "OPENAI_API_KEY=sk-new\n"},
		{
			"replaces in place and keeps the rest",
			"# my keys\n\nANTHROPIC_API_KEY=sk-ant\nexport OPENAI_API_KEY=\"sk-old\"\nOPENAI_API_KEY_2=keep\n  OPENAI_API_KEY=sk-dup\n# OPENAI_API_KEY=commented\n",
			"OPENAI_API_KEY", "sk-new",
			"# my keys\n\nANTHROPIC_API_KEY=sk-ant\nOPENAI_API_KEY=sk-new\nOPENAI_API_KEY_2=keep\n# OPENAI_API_KEY=commented\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := profile.Store{Dir: filepath.Join(t.TempDir(), "hub"), Environ: fakeEnv(nil)}
			if tc.file != "" {
				writeEnvFile(t, s, tc.file, 0o600)
			}
			if err := s.SetKey(tc.key, tc.value); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, readEnvFile(t, s)); diff != "" {
				t.Errorf("env file (-want +got):\n%s", diff)
			}
			fi, err := os.Stat(s.EnvFile())
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("env file mode %04o, want 0600", fi.Mode().Perm())
			}
			key, src, err := s.Key(profile.Profile{Name: "p", Provider: profile.OpenAI, Model: "m", KeyEnv: tc.key})
			if err != nil || key != strings.TrimSpace(tc.value) || src != profile.FromEnvFile {
				t.Errorf("Key after SetKey = %q, %q, %v", key, src, err)
			}
		})
	}
}

// SetKey rewrites a file others could read with mode 0600.
func TestSetKeyTightensMode(t *testing.T) {
	s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
	writeEnvFile(t, s, "OTHER=1\n", 0o644)
	if err := s.SetKey("OPENAI_API_KEY", "sk-new"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.EnvFile())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("env file mode %04o, want 0600", fi.Mode().Perm())
	}
}

func TestSetKeyRefuses(t *testing.T) {
	const before = "OPENAI_API_KEY=sk-old\n"
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"empty value", "OPENAI_API_KEY", "", "empty or spans lines"},
		{"blank value", "OPENAI_API_KEY", " \t\n", "empty or spans lines"},
		{"two lines", "OPENAI_API_KEY", "sk-a\nsk-b", "empty or spans lines"},
		{"carriage return", "OPENAI_API_KEY", "sk-a\rOTHER=x", "empty or spans lines"},
		{"NUL byte", "OPENAI_API_KEY", "sk-a\x00b", "empty or spans lines"},
		{"bad name", "OPENAI-KEY", "sk-new", `"OPENAI-KEY" is not a valid environment variable name`},
		{"empty name", "", "sk-new", "not a valid environment variable name"},
		{"name with newline", "A\nB", "sk-new", "not a valid environment variable name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := profile.Store{Dir: t.TempDir(), Environ: fakeEnv(nil)}
			writeEnvFile(t, s, before, 0o600)
			err := s.SetKey(tc.key, tc.value)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetKey = %v, want an error mentioning %q", err, tc.want)
			}
			if diff := cmp.Diff(before, readEnvFile(t, s)); diff != "" {
				t.Errorf("a refused SetKey changed the env file (-want +got):\n%s", diff)
			}
		})
	}
	// Refused before anything is created.
	s := profile.Store{Dir: filepath.Join(t.TempDir(), "hub"), Environ: fakeEnv(nil)}
	if err := s.SetKey("OPENAI_API_KEY", ""); err == nil {
		t.Fatal("SetKey with an empty value = nil")
	}
	if _, err := os.Stat(s.EnvFile()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused SetKey created the env file (stat: %v)", err)
	}
}
