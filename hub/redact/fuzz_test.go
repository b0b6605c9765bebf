package redact

import (
	"strings"
	"testing"
)

// FuzzString redacts arbitrary text, alone and with two values the redactor
// was told of spliced in. String must never panic; a value of 8 bytes or
// more must not be left in the output, except where an occurrence overlaps a
// marker the output has (so is not text of the input); the output may grow
// by no more than the markers it holds; and redacting the output again
// changes nothing.
func FuzzString(f *testing.F) {
	f.Add("plain text stays", "", "")
	f.Add("key AKIAABCDEFGHIJKLMNOP here and ghp_abcdefghijklmnopqrstuvwxyz0123456789", "hunter2hunter2", "short")
	f.Add("API_KEY=abcdefghijklmnop123 password: 'correct-horse-battery'", "abcdefghijklmnop123", "correct-horse")
	f.Add("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "MIIEMIIEMIIE", "-----END")
	f.Add("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJzdWIiOiIx", "")
	f.Add("sk-ant-abcdefghijklmnopqrstuvwxyz xoxb-1234567890-abc AIzaSyA1234567890abcdefghijklmnopqrstu", "sk-ant-abcdefgh", "xoxb-1234567890")
	f.Add("token=aaaaaaaaaaaaaaaa token=aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaab")
	f.Fuzz(func(t *testing.T, text, v1, v2 string) {
		r := New(v1, v2)
		for _, in := range []string{text, v1 + text + v2, text + v2 + v1 + text} {
			check(t, r, []string{v1, v2}, in)
			check(t, nil, nil, in)
		}
	})
}

func check(t *testing.T, r *Redactor, values []string, in string) {
	t.Helper()
	out := r.String(in)
	for _, v := range values {
		if len(v) >= 8 && leaks(out, v) {
			t.Fatalf("New(%q).String(%q) = %q still holds %q", values, in, out, v)
		}
	}
	if n := strings.Count(out, marker); len(out) > len(in)+n*len(marker) {
		t.Fatalf("String(%q) = %q grew by %d bytes, more than its %d markers", in, out, len(out)-len(in), n)
	}
	if again := r.String(out); again != out {
		t.Fatalf("String is not idempotent: String(%q) = %q, String of that = %q", in, out, again)
	}
}

// leaks reports whether v occurs in out other than overlapping a marker.
func leaks(out, v string) bool {
	var marked []int // start of each marker in out
	for i := 0; ; {
		j := strings.Index(out[i:], marker)
		if j < 0 {
			break
		}
		marked = append(marked, i+j)
		i += j + 1
	}
	for i := 0; ; {
		j := strings.Index(out[i:], v)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(v)
		overlaps := false
		for _, m := range marked {
			if start < m+len(marker) && m < end {
				overlaps = true
				break
			}
		}
		if !overlaps {
			return true
		}
		i = start + 1
	}
}

// FuzzEnvFileValues reads arbitrary env files. EnvFileValues must never
// panic, and each value it returns must be one that may be a secret,
// returned once, and text of the file: as written (lines ending in \n),
// or with its double-quote escapes read as most loaders or as dotenv
// (Node) read them.
func FuzzEnvFileValues(f *testing.F) {
	f.Add([]byte("API_TOKEN=canary-5f3a9c2e7b1d\nexport DB_PASSWORD=\"quoted secret value\"\nSINGLE='single-quoted-1'\n"))
	f.Add([]byte(`API_KEY="abc\"def-secret-value" # say "hi"` + "\nK=\"a-secret\\\"quoted\\nnext-line-part\\\\\"\n"))
	f.Add([]byte("MULTI=\"line one of it\r\nline two of it\"\r\nB='-----BEGIN-----\nsecret-line-body\n-----END-----'\n"))
	f.Add([]byte("\ufeffA=\"unterminated-value\nB=next-secret-value\nC=`back-tick-value` # c\nexport\tD = abc12345#def678\t# x\n"))
	f.Add([]byte("use nix\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nK=\"ends-with-backslash\\\nnext-line-secret\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := EnvFileValues(data)
		text := strings.ReplaceAll(strings.TrimPrefix(string(data), "\ufeff"), "\r\n", "\n")
		readings := []string{text, unescape(text), strings.ReplaceAll(strings.ReplaceAll(text, `\n`, "\n"), `\r`, "\r")}
		seen := map[string]bool{}
		for _, v := range got {
			if seen[v] {
				t.Fatalf("EnvFileValues(%q) returned %q twice", data, v)
			}
			seen[v] = true
			if !secretValue(v) {
				t.Fatalf("EnvFileValues(%q) returned %q, which cannot be a secret", data, v)
			}
			found := false
			for _, r := range readings {
				found = found || strings.Contains(r, v)
			}
			if !found {
				t.Fatalf("EnvFileValues(%q) returned %q, which is not in it, raw or unescaped", data, v)
			}
		}
	})
}
