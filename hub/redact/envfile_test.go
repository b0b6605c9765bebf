package redact

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvFileName(t *testing.T) {
	for name, want := range map[string]bool{
		".env": true, "config/.env": true, ".env.local": true, ".env.production": true, "prod.env": true, "a/b/dev.env": true,
		"env": false, ".envrc": false, "environment.txt": false, ".env-example": false, "x.env.bak": false, ".env/x": false,
	} {
		if got := EnvFileName(name); got != want {
			t.Errorf("EnvFileName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestEnvFileValues(t *testing.T) {
	in := `# a comment
API_TOKEN=canary-5f3a9c2e7b1d
export DB_PASSWORD="quoted secret value"
SINGLE='single-quoted-1'
BARE=bare-value-42 # trailing comment
SHORT=abc
DEBUG=true
ENABLED=yes
PORT=8080
RATIO=0.123456789
EMPTY=
MULTI="line one of it
line two of it"
not a line at all
1BAD=ignored-value-x
  export   SPACED = spaced-value-1
WIN=crlf-value-99` + "\r\n"
	want := []string{"canary-5f3a9c2e7b1d", "quoted secret value", "single-quoted-1", "bare-value-42",
		"line one of it\nline two of it", "line one of it", "line two of it", "spaced-value-1", "crlf-value-99"}
	if diff := cmp.Diff(want, EnvFileValues([]byte(in))); diff != "" {
		t.Errorf("EnvFileValues (-want +got):\n%s", diff)
	}
}

// TestAdd: values added later are redacted from then on, with the ones
// the redactor had; Add is safe while String runs.
func TestAdd(t *testing.T) {
	r := New("first-secret-1")
	if got := r.String("a canary-5f3a9c2e7b1d b"); got != "a canary-5f3a9c2e7b1d b" {
		t.Fatalf("before Add: %q", got)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				_ = r.String("first-secret-1 canary-5f3a9c2e7b1d")
			}
		}()
	}
	r.Add(EnvFileValues([]byte("API_TOKEN=canary-5f3a9c2e7b1d\nX=short\n"))...)
	wg.Wait()
	got := r.String("a canary-5f3a9c2e7b1d b first-secret-1 c short")
	if got != "a [REDACTED] b [REDACTED] c short" {
		t.Errorf("after Add: %q", got)
	}
	var zero Redactor
	zero.Add("zero-value-secret")
	if got := zero.String("x zero-value-secret"); !strings.Contains(got, "[REDACTED]") {
		t.Errorf("zero value after Add: %q", got)
	}
	var nilR *Redactor
	nilR.Add("anything-at-all") // no panic
}
