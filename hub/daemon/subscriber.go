package daemon

import (
	"context"

	"github.com/hub-agents/hub/hub/rpc"
)

// subscriberQueue bounds what a slow client may lag behind. A client that
// falls this far behind is disconnected (it resubscribes with `since`),
// so one stuck editor never holds up the fan-out or the waiters.
const subscriberQueue = 4096

type notification struct {
	method string
	params any
}

// subscriber is one connection that asked for notifications. Its queue is
// drained by its own goroutine; last is the newest event cursor queued.
type subscriber struct {
	conn *rpc.Conn
	q    chan notification
	last int64
	// sent is the cursor of the last job/changed sent per job: a status
	// read while the pump fans out a batch may already include the next
	// batch's events, and is not sent twice.
	sent map[string]int64
}

func newSubscriber(c *rpc.Conn, last int64) *subscriber {
	s := &subscriber{conn: c, q: make(chan notification, subscriberQueue), last: last, sent: map[string]int64{}}
	go func() {
		for {
			select {
			case n := <-s.q:
				if err := c.Notify(context.Background(), n.method, n.params); err != nil {
					c.Close()
					return
				}
			case <-c.DisconnectNotify():
				return
			}
		}
	}()
	return s
}

// send queues n, or disconnects a subscriber that cannot keep up.
func (s *subscriber) send(n notification) {
	select {
	case s.q <- n:
	default:
		s.conn.Close()
	}
}
