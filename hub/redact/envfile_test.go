package redact

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvFileName(t *testing.T) {
	for name, want := range map[string]bool{
		".env": true, "config/.env": true, ".env.local": true, ".env.production": true, "prod.env": true, "a/b/dev.env": true,
		".envrc": true, "config/.envrc": true, `c:\x\.envrc`: true, ".envrc.local": true, ".envrc.private": true,
		"env": false, "envrc": false, "environment.txt": false, ".env-example": false, "x.env.bak": false, ".env/x": false,
		".envrc-old": false, "x.envrc": false, ".envrcs": false, ".envrc/x": false,
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

// TestEnvFileValuesReadings: a value is kept as the program reading the
// file sees it and as it is written there, whichever quotes, escapes and
// spacing it takes.
func TestEnvFileValuesReadings(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"escaped quote", `API_KEY="abc\"def-secret-value"`, []string{`abc"def-secret-value`, `abc\"def-secret-value`}},
		{"escaped backslash before the closing quote", `K="secret-value\\"`, []string{`secret-value\`, `secret-value\\`}},
		{"escaped newline", `K="line-one-secret\nline-two-secret"`,
			[]string{"line-one-secret\nline-two-secret", "line-one-secret", "line-two-secret", `line-one-secret\nline-two-secret`}},
		{"escaped tab and return", `K="tab\tseparated\rsecret"`,
			[]string{"tab\tseparated\rsecret", "tab\\tseparated\rsecret", `tab\tseparated\rsecret`}},
		{"escaped dollar", `K="price-\$100-secret"`, []string{"price-$100-secret", `price-\$100-secret`}},
		{"unknown escape kept", `K="keep-\q-secret"`, []string{`keep-\q-secret`}},
		// dotenv (Node) expands \n and \r only: its reading is a third one.
		{"escaped quote and newline", `K="a-secret\"quoted\nnext-line-part"`,
			[]string{"a-secret\"quoted\nnext-line-part", `a-secret"quoted`, "next-line-part",
				"a-secret\\\"quoted\nnext-line-part", `a-secret\"quoted`, `a-secret\"quoted\nnext-line-part`}},
		{"escaped quote in a value over lines", "K=\"first \\\"line\\\" secret\nsecond line secret\"",
			[]string{"first \"line\" secret\nsecond line secret", `first "line" secret`, "second line secret",
				"first \\\"line\\\" secret\nsecond line secret", `first \"line\" secret`}},
		{"backslash ends a line of a value over lines", "K=\"ends-with-backslash\\\nnext-line-secret\"",
			[]string{"ends-with-backslash\\\nnext-line-secret", "ends-with-backslash\\", "next-line-secret"}},
		{"comment with a quote after an escaped quote", `K="abc\"def-secret" # say "hi there you"`,
			[]string{`abc"def-secret`, `abc\"def-secret`}},
		{"spaces around =", "KEY = spaced-value-1\nQ  =  \"quoted spaced value\"\nT\t=\ttabbed-value-1",
			[]string{"spaced-value-1", "quoted spaced value", "tabbed-value-1"}},
		{"export", "export A=exported-value-1\nexport\tB=tab-exported-1\n  export   C = \"spaced-exported\"\nexport=not-export-key",
			[]string{"exported-value-1", "tab-exported-1", "spaced-exported", "not-export-key"}},
		{"export alone", "export\nexport ONLY_NAME\nexport X", nil},
		{"trailing comment after quotes", "S='single # not a comment' # a comment\nD=\"double # not either\"\t# a comment",
			[]string{"single # not a comment", "double # not either"}},
		{"bare value, comment after a tab", "K=bare-secret-val\t# comment", []string{"bare-secret-val"}},
		// dotenv (Node) ends a bare value at any #; a shell at " #".
		{"bare value with #", "K=abc12345#def678 # comment", []string{"abc12345#def678", "abc12345"}},
		{"single quotes take no escapes", `K='back\slash-secret\'`, []string{`back\slash-secret\`}},
		{"single quotes over lines", "KEY='-----BEGIN-----\nsecret-line-body\n-----END-----'",
			[]string{"-----BEGIN-----\nsecret-line-body\n-----END-----", "-----BEGIN-----", "secret-line-body", "-----END-----"}},
		{"backticks", "K=`backtick-secret-1`\nL=`it's \"quoted\" inside`", []string{"backtick-secret-1", `it's "quoted" inside`}},
		// A quote that never closes is a bare value on its line (as dotenv
		// reads it), and the lines after it are read as lines.
		{"unterminated quote", "A=\"unterminated-value\nB=next-secret-value\nC='also-open-value\n",
			[]string{"next-secret-value", "unterminated-value", "also-open-value"}},
		{"assignment inside a value over lines", "A=\"first-line-value\nB=inner-secret-val\nlast-line-value\"",
			[]string{"inner-secret-val", "first-line-value\nB=inner-secret-val\nlast-line-value", "first-line-value", "B=inner-secret-val", "last-line-value"}},
		{"byte order mark", "\ufeffFIRST_KEY=first-secret-1\nSECOND=second-secret-2", []string{"first-secret-1", "second-secret-2"}},
		{"crlf over lines", "K=\"one-line-secret\r\ntwo-line-secret\"\r\nL=after-crlf-value\r\n",
			[]string{"one-line-secret\ntwo-line-secret", "one-line-secret", "two-line-secret", "after-crlf-value"}},
		{"envrc", "use nix\nPATH_add bin\ndotenv_if_exists .env.local\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nexport AWS_REGION=eu-west-1\n",
			[]string{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "eu-west-1"}},
		{"not secrets", "A=\"true\"\nB='12345678'\nC=\"short\"\nD=\"\\\"\"\nE=\"\"\nF=\"0.1234567\"", nil},
		{"same value twice", "A=same-secret-value\nB=\"same-secret-value\"", []string{"same-secret-value"}},
		{"line too long", "A=" + strings.Repeat("x", maxEnvValue+1) + "\nB=after-long-line", []string{"after-long-line"}},
		{"value over lines too long", "A=\"open-long-value\n" + strings.Repeat("y", maxEnvValue/2) + "\n" + strings.Repeat("z", maxEnvValue/2) + "\"\nB=after-long-value",
			[]string{"open-long-value", "after-long-value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, EnvFileValues([]byte(tc.in))); diff != "" {
				t.Errorf("EnvFileValues(%.200q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestReadEnvFile: a value anywhere in a file far larger than the part
// hub used to read (1 MiB) is found, the last line's too; a path that is
// not a regular file gives none.
func TestReadEnvFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".env")
	var b strings.Builder
	b.WriteString("FIRST=first-secret-value\n")
	pad := "# " + strings.Repeat("padding ", 16) + "\n"
	for b.Len() < 3<<19 { // 1.5 MiB
		b.WriteString(pad)
	}
	b.WriteString("export MIDDLE_KEY=\"middle\\\"secret-value\"\n")
	for b.Len() < 3<<20 {
		b.WriteString(pad)
	}
	b.WriteString("LAST='last-secret-value'") // no newline at the end
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{"first-secret-value", `middle"secret-value`, `middle\"secret-value`, "last-secret-value"}
	if diff := cmp.Diff(want, ReadEnvFile(p)); diff != "" {
		t.Errorf("ReadEnvFile of a %d-byte file (-want +got):\n%s", b.Len(), diff)
	}

	link := filepath.Join(dir, "link.env")
	if err := os.Symlink(p, link); err != nil {
		t.Logf("no symlink here: %v", err)
		link = ""
	}
	for _, bad := range []string{dir, link, filepath.Join(dir, "missing.env")} {
		if bad == "" {
			continue
		}
		if got := ReadEnvFile(bad); got != nil {
			t.Errorf("ReadEnvFile(%s) = %q, want nothing", bad, got)
		}
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
