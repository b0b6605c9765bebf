package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
)

type waitIn struct {
	IDs      []string `json:"ids"`
	TimeoutS float64  `json:"timeout_s,omitempty"`
	Any      bool     `json:"any,omitempty" jsonschema:"when one is done"`
	Since    int64    `json:"since,omitempty" jsonschema:"last wait's cursor"`
}

const (
	defaultWaitS = 300
	// waitSlack is how much longer than the daemon's own timeout wait gives
	// the daemon to answer before it reports the daemon as stuck.
	waitSlack = 30 * time.Second
)

func addWait(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "wait",
		Description: "Block until the jobs end or need input.",
		Annotations: annotate("", protocol.DaemonSpec.JobWait),
	}, s.wait)
}

type waitAnswer struct {
	res *protocol.WaitResult
	err error
}

func (s *Server) wait(ctx context.Context, req *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, *protocol.WaitResult, error) {
	timeout := in.TimeoutS
	if timeout <= 0 {
		timeout = defaultWaitS
	}
	p := protocol.WaitParams{IDs: in.IDs, TimeoutS: timeout, Any: in.Any, Since: in.Since}

	token := req.Params.GetProgressToken()
	var w *watcher
	if token != nil {
		w = s.watch(in.IDs) // before the call, so no change is missed
		defer s.unwatch(w)
	}

	// The daemon call runs apart so that the client's cancel reaches it
	// (through ctx) and progress keeps flowing while it blocks.
	cctx, cancel := context.WithTimeout(ctx, time.Duration(timeout*float64(time.Second))+waitSlack)
	defer cancel()
	done := make(chan waitAnswer, 1)
	go func() {
		res, err := protocol.DaemonClient{C: s.d}.JobWait(cctx, p)
		done <- waitAnswer{res: res, err: err}
	}()

	var a waitAnswer
	if token != nil {
		a = s.progress(ctx, req.Session, token, w, len(in.IDs), done)
	} else {
		select {
		case a = <-done:
		case <-ctx.Done():
			a.err = ctx.Err()
		}
	}
	if a.err != nil {
		return nil, nil, toolError(a.err)
	}
	return text("%s", waitText(a.res)), a.res, nil
}

// progress sends progress notifications until the daemon answers: at most
// one per progressMin when a watched job changed, a heartbeat after
// progressBeat without change.
func (s *Server) progress(ctx context.Context, ss *mcp.ServerSession, token any, w *watcher, n int, done <-chan waitAnswer) waitAnswer {
	start := time.Now()
	known := map[string]protocol.JobStatus{}
	var (
		seq      float64
		lastSent time.Time // zero: nothing sent yet
		dirty    bool
		latest   string // the job that changed last
	)
	timer := time.NewTimer(s.progressBeat)
	defer timer.Stop()
	// arm sets the timer for the next notification that may be due.
	arm := func() {
		var at time.Time
		switch {
		case dirty:
			at = lastSent.Add(s.progressMin)
		case lastSent.IsZero():
			at = start.Add(s.progressBeat)
		default:
			at = lastSent.Add(s.progressBeat)
		}
		timer.Reset(max(time.Until(at), 0))
	}
	send := func() {
		seq++
		msg := progressText(known, latest, n, dirty, time.Since(start))
		if err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: seq, Message: msg}); err != nil {
			s.log.Debug("progress notification failed", "err", err)
		}
		lastSent, dirty = time.Now(), false
	}
	for {
		select {
		case a := <-done:
			return a
		case <-ctx.Done():
			return waitAnswer{err: ctx.Err()}
		case <-w.wake:
			changed := w.take(known)
			if len(changed) == 0 {
				continue
			}
			for _, id := range changed {
				if latest == "" || known[id].Cursor >= known[latest].Cursor {
					latest = id
				}
			}
			dirty = true
			if lastSent.IsZero() || time.Since(lastSent) >= s.progressMin {
				send()
			}
			arm()
		case <-timer.C:
			send()
			arm()
		}
	}
}

// progressText is "1/3 ended · abc12345 running: <progress>" after a
// change, "1/3 ended · waiting 40s" for a heartbeat.
func progressText(known map[string]protocol.JobStatus, latest string, n int, changed bool, waited time.Duration) string {
	ended, asking := 0, 0
	for _, st := range known {
		switch {
		case st.State.Terminal():
			ended++
		case st.State == protocol.StateNeedsInput:
			asking++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d ended", ended, n)
	if asking > 0 {
		fmt.Fprintf(&b, " · %d asking", asking)
	}
	if !changed {
		fmt.Fprintf(&b, " · waiting %s", view.Duration(waited))
		return b.String()
	}
	if st, ok := known[latest]; ok {
		fmt.Fprintf(&b, " · %s %s", st.ID, st.State)
		switch {
		case st.State == protocol.StateNeedsInput && st.Question != nil:
			fmt.Fprintf(&b, ": %s", view.OneLine(st.Question.Text, 100))
		case !st.State.Terminal() && st.Progress != "":
			fmt.Fprintf(&b, ": %s", view.OneLine(st.Progress, 100))
		}
	}
	return b.String()
}

// waitText is one line per job, then the cursor to pass as since.
func waitText(r *protocol.WaitResult) string {
	var b strings.Builder
	for _, st := range r.Jobs {
		b.WriteString(view.Line(st))
		b.WriteString("\n")
	}
	if len(r.Unknown) > 0 {
		fmt.Fprintf(&b, "unknown ids: %s\n", strings.Join(r.Unknown, ", "))
	}
	if !r.Done {
		b.WriteString("timeout · ")
	}
	fmt.Fprintf(&b, "cursor %d", r.Cursor)
	return b.String()
}
