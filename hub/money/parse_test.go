package money

import (
	"strings"
	"testing"
	"time"
)

func TestParseMonth(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "2026-12", want: "2026-12"},
		{in: " 2027-01 ", want: "2027-01"},
		{in: "2026-13", err: `"2026-13" is not a month: give it as YYYY-MM, such as 2026-12`},
		{in: "2026-1", err: "give it as YYYY-MM"},
		{in: "december", err: "give it as YYYY-MM"},
		{in: "2026-12-01", err: "give it as YYYY-MM"},
	} {
		got, err := ParseMonth(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseMonth(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseMonth(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{in: "30d", want: now.AddDate(0, 0, -30)},
		{in: "1d", want: now.Add(-24 * time.Hour)},
		{in: "12h", want: now.Add(-12 * time.Hour)},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "2026-11-01", want: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{in: "2026-12-15", want: time.Date(2026, 12, 15, 0, 0, 0, 0, time.UTC)},
		{in: "2027-01-01", err: "2027-01-01 is in the future"},
		{in: "0d", err: "give a positive one, such as 30d"},
		{in: "-3h", err: "give a positive one, such as 30d"},
		{in: "thirty days", err: `"thirty days" is neither a span such as 30d, 12h or 90m nor a date such as 2026-11-01`},
		{in: "30x", err: "is neither a span"},
		{in: "d", err: "is neither a span"},
		{in: "99999999999d", err: "is neither a span"},
		{in: "", err: "is neither a span"},
	} {
		got, err := ParseSince(tc.in, now)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseSince(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || !got.Equal(tc.want)):
			t.Errorf("ParseSince(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
