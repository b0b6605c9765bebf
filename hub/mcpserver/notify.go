package mcpserver

import (
	"encoding/json"
	"sync"

	"github.com/hub-agents/hub/hub/protocol"
)

// Notify is fed every notification the daemon sends. A job/changed status
// wakes the waits that watch its job, which then send progress; other
// notifications are ignored (job/changed follows every state and progress
// change, so job/event adds nothing wait needs). Notify never blocks on a
// wait: it keeps only the newest status per job. Safe for concurrent use.
func (s *Server) Notify(method string, params json.RawMessage) {
	if method != protocol.NotifyJobChanged {
		return
	}
	s.watchersMu.Lock()
	idle := len(s.watchers) == 0
	s.watchersMu.Unlock()
	if idle {
		return // nobody waits: don't pay for decoding
	}
	var st protocol.JobStatus
	if err := json.Unmarshal(params, &st); err != nil || st.ID == "" {
		s.log.Warn("bad job/changed notification", "err", err)
		return
	}
	s.watchersMu.Lock()
	defer s.watchersMu.Unlock()
	for w := range s.watchers {
		w.offer(st)
	}
}

// watcher collects the newest status of each job one wait watches.
type watcher struct {
	ids  map[string]bool
	wake chan struct{} // holds one token when latest has news

	latestMu sync.Mutex
	latest   map[string]protocol.JobStatus
}

func (s *Server) watch(ids []string) *watcher {
	w := &watcher{ids: map[string]bool{}, wake: make(chan struct{}, 1), latest: map[string]protocol.JobStatus{}}
	for _, id := range ids {
		w.ids[id] = true
	}
	s.watchersMu.Lock()
	s.watchers[w] = struct{}{}
	s.watchersMu.Unlock()
	return w
}

func (s *Server) unwatch(w *watcher) {
	s.watchersMu.Lock()
	delete(s.watchers, w)
	s.watchersMu.Unlock()
}

func (w *watcher) offer(st protocol.JobStatus) {
	if !w.ids[st.ID] {
		return
	}
	w.latestMu.Lock()
	if old, ok := w.latest[st.ID]; ok && old.Cursor > st.Cursor {
		w.latestMu.Unlock()
		return // older than what we have
	}
	w.latest[st.ID] = st
	w.latestMu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// take moves the news into known, returning the ids that changed.
func (w *watcher) take(known map[string]protocol.JobStatus) []string {
	w.latestMu.Lock()
	defer w.latestMu.Unlock()
	var changed []string
	for id, st := range w.latest {
		if old, ok := known[id]; ok && old.Cursor > st.Cursor {
			continue
		}
		known[id] = st
		changed = append(changed, id)
	}
	clear(w.latest)
	return changed
}
