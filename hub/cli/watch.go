package cli

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/view"
)

func newWatchCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "watch ID...",
		Short: "Print live progress lines until the jobs end",
		Args:  minArgs(1, "one or more job ids"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return watch(cmd.Context(), ios, args)
		},
	}
}

// watch prints a line whenever a watched job changes, until all have ended.
func watch(ctx context.Context, ios *IO, ids []string) error {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var mu sync.Mutex
	last := map[string]string{}
	ended := map[string]bool{}
	done := make(chan struct{})
	var once sync.Once
	show := func(st protocol.JobStatus) {
		mu.Lock()
		defer mu.Unlock()
		if !want[st.ID] {
			return
		}
		// A new line only when something a person reads changed, not the clock.
		key := string(st.State) + "\x00" + st.Progress + "\x00" + st.Error
		if st.Question != nil {
			key += "\x00" + st.Question.ID
		}
		if last[st.ID] != key {
			last[st.ID] = key
			line := view.Line(st)
			if ios.JSON {
				b, _ := json.Marshal(st)
				line = string(b)
			}
			ios.printf("%s\n", line)
		}
		if st.State.Terminal() {
			ended[st.ID] = true
		}
		if len(ended) == len(want) {
			once.Do(func() { close(done) })
		}
	}
	h := func(ctx context.Context, c *rpc.Conn, req *jsonrpc2.Request) (any, error) {
		if req.Method == protocol.NotifyJobChanged && req.Params != nil {
			var st protocol.JobStatus
			if json.Unmarshal(*req.Params, &st) == nil {
				show(st)
			}
		}
		return nil, nil
	}
	c, err := ios.connect(ctx, h)
	if err != nil {
		return err
	}
	defer c.Close()
	d := protocol.DaemonClient{C: c}
	if _, err := d.Subscribe(ctx, protocol.SubscribeParams{}); err != nil {
		return err
	}
	for _, id := range ids {
		st, err := d.JobStatus(ctx, protocol.IDParams{ID: id})
		if err != nil {
			return err
		}
		show(*st)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.DisconnectNotify():
		return errDaemonGone
	}
}
