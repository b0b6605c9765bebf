package shim

import (
	"context"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// Notifier tells the daemon that a job's records changed, for whatever
// writes them outside the daemon: a job's shim, a remote job's relay.
// Pokes coalesce into one call at a time on one connection; a daemon that
// is not there is not told (it reads the store when it comes back).
type Notifier struct {
	socket string
	id     string
	ch     chan struct{}
}

// NewNotifier tells the daemon at socket about job id.
func NewNotifier(socket, id string) *Notifier {
	return &Notifier{socket: socket, id: id, ch: make(chan struct{}, 1)}
}

// Poke says the job's records changed; Run passes it on.
func (n *Notifier) Poke() {
	select {
	case n.ch <- struct{}{}:
	default:
	}
}

// Run passes the pokes on until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	var conn *rpc.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.ch:
		}
		for attempt := 0; attempt < 2; attempt++ {
			if conn == nil {
				dctx, cancel := context.WithTimeout(ctx, time.Second)
				nc, err := rpc.Dial(dctx, n.socket)
				cancel()
				if err != nil {
					break
				}
				conn = rpc.NewConn(ctx, nc, nil, nil)
			}
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := protocol.DaemonClient{C: conn}.ShimChanged(cctx, protocol.ShimChangedParams{ID: n.id})
			cancel()
			if err != nil {
				conn.Close()
				conn = nil
				continue
			}
			break
		}
	}
}

// Flush tells the daemon once more, on a connection of its own, and
// returns once it heard (or is not there): what a process does last before
// it exits.
func (n *Notifier) Flush() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	nc, err := rpc.Dial(ctx, n.socket)
	if err != nil {
		return // no daemon: the next one reads the store when it starts
	}
	c := rpc.NewConn(ctx, nc, nil, nil)
	defer c.Close()
	_, _ = protocol.DaemonClient{C: c}.ShimChanged(ctx, protocol.ShimChangedParams{ID: n.id})
}
