package daemon

import (
	"errors"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// drainFor bounds how long a daemon that is shutting down lets the requests
// it already took finish before it closes their connections.
const drainFor = 10 * time.Second

// beginShutdown stops taking connections (the listener's close removes the
// socket, so the next client starts a new daemon, which waits for this
// one's lock) and requests (the gate answers them ShuttingDown); Serve
// then drains and lets go.
func (s *Server) beginShutdown() {
	if !s.gate.Close() {
		return
	}
	s.o.Log.Info().Msg("shutting down: no new connections or requests; letting those in flight finish")
	s.endLogins()
	s.lands.Interrupt(errors.New("the daemon shut down"))
	if s.ln != nil {
		_ = s.ln.Close()
	}
}

// drain waits for the requests in flight to be answered, tells every
// connection it is going away, then closes them all.
func (s *Server) drain() {
	if !s.gate.Drain(drainFor) {
		s.o.Log.Warn().Dur("after", drainFor).Msg("shutting down: requests still in flight are cut off")
	}
	s.cancel()
}

// shuttingDown answers a request that arrived after shutdown began.
func shuttingDown() *jsonrpc2.Error {
	return rpc.Errorf(protocol.CodeShuttingDown,
		"send it again: the next hub command starts a new daemon (the hub CLI and `hub mcp` do this themselves)",
		"the hub daemon is shutting down and did not act on this request")
}
