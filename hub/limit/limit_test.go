package limit_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hub-agents/hub/hub/limit"
)

func TestLimitsString(t *testing.T) {
	cases := []struct {
		l    limit.Limits
		want string
	}{
		{limit.Limits{Processes: 1024, MemoryBytes: 8 << 30, DiskBytes: 20 << 30}, "1,024 processes, 8 GiB memory, 20 GiB disk"},
		{limit.Limits{Processes: 40, MemoryBytes: 1536 << 20}, "40 processes, 1.5 GiB memory, no disk cap"},
		{limit.Limits{MemoryBytes: 64 << 20, DiskBytes: 1 << 40}, "no process cap, 64 MiB memory, 1 TiB disk"},
		{limit.Limits{Processes: 1234567}, "1,234,567 processes, no memory cap, no disk cap"},
		{limit.Limits{}, "no limits"},
	}
	for _, c := range cases {
		if got := c.l.String(); got != c.want {
			t.Errorf("%+v.String() = %q; want %q", c.l, got, c.want)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	cases := []struct {
		l    limit.Limits
		want []string // what the error says; none: valid
	}{
		{limit.Limits{}, nil},
		{limit.Limits{Processes: 1024, MemoryBytes: 8 << 30, DiskBytes: 20 << 30}, nil},
		{limit.Limits{Processes: -1}, []string{"negative"}},
		{limit.Limits{Processes: 3}, []string{"3 processes is too small", "threads count"}},
		{limit.Limits{MemoryBytes: 1 << 20, DiskBytes: 10}, []string{"memory cap of 1 MiB is too small", "disk cap of 10 bytes is too small"}},
	}
	for _, c := range cases {
		err := c.l.Validate()
		if (err != nil) != (len(c.want) > 0) {
			t.Errorf("%+v.Validate() = %v; want error: %v", c.l, err, len(c.want) > 0)
			continue
		}
		for _, s := range c.want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%+v.Validate() = %q; want it to say %q", c.l, err, s)
			}
		}
	}
}

func TestHitsString(t *testing.T) {
	cases := []struct {
		h    limit.Hits
		any  bool
		want string
	}{
		{limit.Hits{}, false, "no limit"},
		{limit.Hits{MemoryMax: 7}, false, "no limit"}, // reclaim at the cap is no failure
		{limit.Hits{Processes: 1}, true, "the process limit (1 fork refused)"},
		{limit.Hits{Processes: 12, OOMKills: 2}, true, "the process limit (12 forks refused) and the memory limit (2 processes killed)"},
	}
	for _, c := range cases {
		if diff := cmp.Diff([]any{c.any, c.want}, []any{c.h.Any(), c.h.String()}); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", c.h, diff)
		}
	}
}

func TestScope(t *testing.T) {
	a, b := limit.Scope("/home/u/.hub"), limit.Scope("/home/u/.hub2")
	if a == b || a != limit.Scope("/home/u/.hub/") || !strings.HasPrefix(a, "hub-") || len(a) != len("hub-")+10 {
		t.Errorf("Scope: %q, %q", a, b)
	}
	if _, err := limit.New(a, "../x", limit.Limits{}); err == nil {
		t.Error("New took a job id with a slash")
	}
	if _, err := limit.New("Bad Scope", "job", limit.Limits{}); err == nil {
		t.Error("New took a bad scope")
	}
}

// A nil Group caps nothing and every method is safe on it.
func TestNilGroup(t *testing.T) {
	var g *limit.Group
	if h, err := g.Hit(); err != nil || h.Any() {
		t.Errorf("Hit = %+v, %v", h, err)
	}
	if err := g.Kill(); err != nil {
		t.Error(err)
	}
	if err := g.Remove(); err != nil {
		t.Error(err)
	}
	if !g.Plan().Empty() || g.Name() != "" || g.Cgroups() != nil {
		t.Errorf("nil group has a plan %+v", g.Plan())
	}
}
