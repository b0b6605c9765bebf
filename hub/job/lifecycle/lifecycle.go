// Package lifecycle is a job's state machine: which state may follow which,
// and who makes each move. The store enforces it on every write of a job's
// state (Admit, SetState, a question asked or answered, Finish), so a move
// the table does not list is refused with both states named, whoever asks.
//
//	queued ─→ preparing ─→ running ⇄ needs_input
//	                          │  ↑
//	                          ↓  │ (a remote job's next attempt)
//	                       verifying
//
// and any state that has not ended may end: succeeded, failed, cancelled or
// timed_out. An ended job never moves again.
//
// It is its own package, below hub/job, because the store enforces it and
// hub/job builds on the store.
package lifecycle

import (
	"fmt"

	"github.com/hub-agents/hub/hub/protocol"
)

// Move is one allowed transition and who makes it.
type Move struct {
	From, To protocol.State
	By       string // who makes it, for the reader of the table
}

// Moves is the table: every move between states that have not ended. Ending
// (to a terminal state) is allowed from each of them and is not listed.
var Moves = []Move{
	{protocol.StateQueued, protocol.StatePreparing, "store.Admit: a slot and the reservation booked"},
	{protocol.StatePreparing, protocol.StateRunning, "the shim, once the checkout and its setup are ready; a remote worker's report"},
	{protocol.StateRunning, protocol.StateNeedsInput, "store.AddQuestion: the worker asked"},
	{protocol.StateNeedsInput, protocol.StateRunning, "store.AnswerQuestion: the last pending question answered or expired; a remote worker's report"},
	{protocol.StateRunning, protocol.StateVerifying, "the shim, once the worker's work is committed; a remote worker's report"},
	{protocol.StateVerifying, protocol.StateRunning, "a remote job's next attempt, started after the last one reached verify"},
	{protocol.StateRunning, protocol.StateRunning, "a remote job's next attempt, started while the last one ran"},
}

// Allowed reports whether a job in from may move to to.
func Allowed(from, to protocol.State) bool {
	if from.Terminal() || !Known(from) || !Known(to) {
		return false
	}
	if to.Terminal() {
		return true
	}
	for _, m := range Moves {
		if m.From == from && m.To == to {
			return true
		}
	}
	return false
}

// Known reports whether st is one of the states.
func Known(st protocol.State) bool {
	for _, s := range protocol.States {
		if s == st {
			return true
		}
	}
	return false
}

// Error is a refused move.
type Error struct {
	ID       string
	From, To protocol.State
}

func (e *Error) Error() string {
	if e.From.Terminal() {
		return fmt.Sprintf("job %s already ended (%s); it cannot move to %s", e.ID, e.From, e.To)
	}
	return fmt.Sprintf("job %s cannot move from %s to %s", e.ID, e.From, e.To)
}

// Check returns an *Error when job id may not move from from to to.
func Check(id string, from, to protocol.State) error {
	if Allowed(from, to) {
		return nil
	}
	return &Error{ID: id, From: from, To: to}
}
