package lifecycle

import (
	"errors"
	"strings"
	"testing"

	"github.com/hub-agents/hub/hub/protocol"
)

// TestEveryStateReachable: from queued, every state can be reached through
// the table, and every ending from every state that has not ended.
func TestEveryStateReachable(t *testing.T) {
	seen := map[protocol.State]bool{protocol.StateQueued: true}
	frontier := []protocol.State{protocol.StateQueued}
	for len(frontier) > 0 {
		from := frontier[0]
		frontier = frontier[1:]
		for _, to := range protocol.States {
			if Allowed(from, to) && !seen[to] {
				seen[to] = true
				frontier = append(frontier, to)
			}
		}
	}
	for _, st := range protocol.States {
		if !seen[st] {
			t.Errorf("%s cannot be reached from queued", st)
		}
	}
	for _, from := range protocol.States {
		for _, to := range protocol.States {
			if !from.Terminal() && to.Terminal() && !Allowed(from, to) {
				t.Errorf("%s cannot end as %s", from, to)
			}
		}
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		from, to protocol.State
		says     string
	}{
		{protocol.StateSucceeded, protocol.StateRunning, "job j already ended (succeeded); it cannot move to running"},
		{protocol.StateFailed, protocol.StateCancelled, "already ended (failed)"},
		{protocol.StateQueued, protocol.StateRunning, "job j cannot move from queued to running"},
		{protocol.StateVerifying, protocol.StatePreparing, "cannot move from verifying to preparing"},
		{protocol.StateNeedsInput, protocol.StateVerifying, "cannot move from needs_input to verifying"},
		{protocol.StateRunning, protocol.StateQueued, "cannot move from running to queued"},
		{protocol.StatePreparing, protocol.StatePreparing, "cannot move from preparing to preparing"},
		{protocol.StateRunning, "dancing", "cannot move from running to dancing"},
		{"dancing", protocol.StateRunning, "cannot move from dancing to running"},
	} {
		err := Check("j", tc.from, tc.to)
		var le *Error
		if err == nil || !errors.As(err, &le) || le.From != tc.from || le.To != tc.to || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Check(%s → %s) = %v, want an *Error saying %q", tc.from, tc.to, err, tc.says)
		}
	}
	for _, m := range Moves {
		if err := Check("j", m.From, m.To); err != nil {
			t.Errorf("a listed move is refused: %v", err)
		}
		if m.By == "" {
			t.Errorf("move %s → %s does not say who makes it", m.From, m.To)
		}
	}
}
