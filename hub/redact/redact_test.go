package redact

import "testing"

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text stays", "plain text stays"},
		{"key AKIAABCDEFGHIJKLMNOP here", "key [REDACTED] here"},
		{"tok ghp_abcdefghijklmnopqrstuvwxyz0123456789", "tok [REDACTED]"},
		{"OPENAI sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI [REDACTED]"},
		{"API_KEY=abcdefghijklmnop123", "API_KEY=[REDACTED]"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[REDACTED]"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt [REDACTED]"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := New("hunter2hunter2").String("pw is hunter2hunter2."); got != "pw is [REDACTED]." {
		t.Errorf("by value: got %q", got)
	}
}
