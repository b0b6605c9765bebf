package cli

import (
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * 24 * time.Hour, true},
		{"0d", 0, true},
		{"0", 0, true},
		{"12h", 12 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"1.5d", 0, false},
		{"-1d", 0, false},
		{"-2h", 0, false},
		{"36601d", 0, false}, // past money.ParseSpan's hundred years
		{"3x", 0, false},
		{"", 0, false},
	} {
		got, err := parseAge(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseAge(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 10 * 1024: "10 KiB",
		5 << 20: "5.0 MiB", 300 << 20: "300 MiB", 3 << 30: "3.0 GiB",
	} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}
