package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/hub-agents/hub/hub/money"
)

// span is the one syntax of every flag that takes a length of time: a Go
// duration (90s, 10m, 1h30m), whole days (30d), or bare seconds (600) as
// the protocol's *_s fields take them.
type span struct{ d *time.Duration }

// String is the span as hub shows a length of time; "0" (which pflag
// takes for no default) when it is zero, so help does not say
// "(default 0s)" after a usage that names the real default.
func (s span) String() string {
	if s.d == nil || *s.d == 0 {
		return "0"
	}
	return humanAge(*s.d)
}

func (s span) Type() string { return "duration" }

func (s span) Set(v string) error {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n < 0 {
			return fmt.Errorf("%s is negative", v)
		}
		*s.d = time.Duration(n * float64(time.Second))
		return nil
	}
	d, err := money.ParseSpan(v)
	if err != nil {
		return fmt.Errorf("%q is not a length of time: give a duration (90s, 10m, 1h30m), whole days (30d) or seconds (600)", v)
	}
	*s.d = d
	return nil
}

// spanVar defines a flag of that syntax.
func spanVar(f *pflag.FlagSet, d *time.Duration, name string, def time.Duration, usage string) {
	*d = def
	f.Var(span{d}, name, usage)
}

// seconds is d in whole seconds for a protocol *_s field: rounded, and
// never 0 (the default) for a d that is not.
func seconds(d time.Duration) int {
	s := int(d.Round(time.Second) / time.Second)
	if d > 0 && s == 0 {
		s = 1
	}
	return s
}
