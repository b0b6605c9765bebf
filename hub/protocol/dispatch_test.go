package protocol

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestDispatchersServeTheirSpecs: each generated dispatcher serves exactly
// the requests whose Spec routes them to its party, and decodes their
// params before it calls anything.
func TestDispatchersServeTheirSpecs(t *testing.T) {
	stop := errors.New("decoded")
	decode := func(any) error { return stop }
	for _, c := range []struct {
		party    string
		methods  []string
		dispatch func(method string) (bool, error)
	}{
		{PartyDaemon, DaemonMethods, func(m string) (bool, error) {
			_, served, err := DispatchDaemon(context.Background(), nil, m, decode)
			return served, err
		}},
		{PartyShim, ShimMethods, func(m string) (bool, error) {
			_, served, err := DispatchShim(context.Background(), nil, m, decode)
			return served, err
		}},
	} {
		var want []string
		for _, s := range Specs {
			if s.To == c.party && !s.Notification && !strings.HasPrefix(s.Method, "$/") {
				want = append(want, s.Method)
			}
		}
		if !slices.Equal(want, c.methods) {
			t.Errorf("%s methods %v, its Specs %v: run `make protocol`", c.party, c.methods, want)
		}
		for _, s := range Specs {
			served, err := c.dispatch(s.Method)
			if served != slices.Contains(want, s.Method) {
				t.Errorf("%s's dispatcher serves %s: %v", c.party, s.Method, served)
			}
			if served && !errors.Is(err, stop) {
				t.Errorf("%s's dispatcher did not decode %s's params first: %v", c.party, s.Method, err)
			}
		}
		if served, _ := c.dispatch("job/nope"); served {
			t.Errorf("%s's dispatcher serves an unknown method", c.party)
		}
	}
}

// TestSpecEffects: a read-only request is idempotent and not destructive,
// and a notification has no effect flags to read.
func TestSpecEffects(t *testing.T) {
	for _, s := range Specs {
		if s.ReadOnly && s.Destructive {
			t.Errorf("%s is read-only and destructive", s.Method)
		}
		if s.ReadOnly && !s.Idempotent && s.From != PartyWorker {
			t.Errorf("%s is read-only but not idempotent", s.Method)
		}
		if s.Notification && (s.ReadOnly || s.Idempotent || s.Destructive) {
			t.Errorf("notification %s has effect flags", s.Method)
		}
	}
}
