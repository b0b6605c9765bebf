package money

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultWindow is how far back roi looks when not told.
const DefaultWindow = 30 * 24 * time.Hour

// maxDays bounds a span in days, well inside time.Duration.
const maxDays = 100 * 366

// ParseMonth checks a month given as YYYY-MM and returns it as the ledger
// keeps it.
func ParseMonth(s string) (string, error) {
	t, err := time.Parse("2006-01", strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("%q is not a month: give it as YYYY-MM, such as 2026-12", s)
	}
	return t.Format("2006-01"), nil
}

// ParseSpan reads a span of time as whole days (30d) or a Go duration
// (12h, 90m); it is never negative.
func ParseSpan(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("%q is not a span: use whole days (30d) or a duration (12h, 90m)", s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > maxDays {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, bad
	}
	return d, nil
}

// ParseSince reads how far back to look, as a span before now (30d, 12h,
// 90m) or a UTC date (2026-11-01), and returns the instant it names.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("%q is neither a span such as 30d, 12h or 90m nor a date such as 2026-11-01", s)
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		if t.After(now) {
			return time.Time{}, fmt.Errorf("%s is in the future: give a date before today, or a span such as 30d", s)
		}
		return t, nil
	}
	if strings.HasPrefix(s, "-") {
		return time.Time{}, fmt.Errorf("%q is not a span back in time: give a positive one, such as 30d", s)
	}
	span, err := ParseSpan(s)
	if err != nil {
		return time.Time{}, bad
	}
	if span <= 0 {
		return time.Time{}, fmt.Errorf("%q is not a span back in time: give a positive one, such as 30d", s)
	}
	return now.Add(-span), nil
}
