package daemon

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/redact"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
)

// now is the daemon's clock (Options.Now), in UTC.
func (s *Server) now() time.Time { return s.o.Now().UTC() }

// JobResult gives the summary, the full text or the evidence of a job.
func (s *Server) JobResult(ctx context.Context, p protocol.ResultParams) (*protocol.ResultResult, error) {
	j, err := s.st.Job(ctx, p.ID)
	if err != nil {
		return nil, notFound(p.ID, err)
	}
	st, err := s.status(ctx, p.ID)
	if err != nil {
		return nil, notFound(p.ID, err)
	}
	var ev *protocol.Evidence
	if len(j.Evidence) > 0 {
		if ev, err = store.DecodeEvidence(j.Evidence); err != nil {
			return nil, internal(fmt.Errorf("job %s: %w", j.ID, err))
		}
	}
	// The shim redacted what it stored; this is the second layer, with the
	// keys as they are now (a job stored before a key was set, a commit
	// subject the worker wrote).
	red := s.secrets()
	redactEvidence(red, ev)
	res := &protocol.ResultResult{ID: j.ID, State: j.State, Summary: red.String(view.Summary(st, ev))}
	if p.Evidence && ev != nil {
		ev.OldStatus, ev.Claimed.OldSummary = ev.State, ev.Claimed.Report
		res.Evidence = ev
	}
	if p.Full {
		res.Full = red.String(s.fullText(j.ID, res.Summary, ev))
	}
	return res, nil
}

// secrets is the redactor for what the daemon returns: every key hub knows
// of (each profile's key, every value of the env file), the values of
// secret-looking variables in the daemon's environment, and the common
// formats. It is built per call, so a key set a moment ago counts.
func (s *Server) secrets() *redact.Redactor {
	return redact.WithEnv(s.profiles().KeyValues()...)
}

// redactEvidence redacts, in place, every text of ev a worker, a command's
// output or a model could have put a secret in.
func redactEvidence(red *redact.Redactor, ev *protocol.Evidence) {
	if ev == nil {
		return
	}
	ev.Error = red.String(ev.Error)
	ev.Claimed.Report = red.String(ev.Claimed.Report)
	for i := range ev.Claimed.Progress {
		ev.Claimed.Progress[i] = red.String(ev.Claimed.Progress[i])
	}
	for i := range ev.Commits {
		ev.Commits[i].Subject = red.String(ev.Commits[i].Subject)
	}
	for i := range ev.Observed.Commands {
		ev.Observed.Commands[i].Command = red.String(ev.Observed.Commands[i].Command)
	}
	if ev.Verify != nil {
		ev.Verify.Command = red.String(ev.Verify.Command)
		ev.Verify.OutputTail = red.String(ev.Verify.OutputTail)
	}
	if ev.Rubric != nil {
		ev.Rubric.Line = red.String(ev.Rubric.Line)
		ev.Rubric.GraderError = red.String(ev.Rubric.GraderError)
		for i := range ev.Rubric.Criteria {
			c := &ev.Rubric.Criteria[i]
			c.Text, c.Evidence = red.String(c.Text), red.String(c.Evidence)
		}
	}
}

// fullText is the summary, then what the worker said in full, the verify
// output and the tail of the worker's log.
func (s *Server) fullText(id, summary string, ev *protocol.Evidence) string {
	var b strings.Builder
	b.WriteString(summary)
	b.WriteString("\n")
	if ev != nil {
		if alerts := view.Alerts(ev); len(alerts) > 0 {
			b.WriteString("\n## Beyond its branch (refs: by the worker or someone else while it ran)\n")
			for _, a := range alerts {
				b.WriteString("- " + a + "\n")
			}
		}
		if len(ev.Claimed.Progress) > 0 {
			b.WriteString("\n## Progress the worker reported\n")
			for _, n := range ev.Claimed.Progress {
				b.WriteString("- " + n + "\n")
			}
		}
		if ev.Claimed.Report != "" {
			b.WriteString("\n## What the worker said at the end\n" + ev.Claimed.Report + "\n")
		}
		if len(ev.Files) > 0 {
			b.WriteString("\n## Files\n")
			for _, f := range ev.Files {
				fmt.Fprintf(&b, "- %s %s (+%d -%d)\n", f.Change, f.Path, f.Added, f.Deleted)
			}
		}
		if len(ev.Commits) > 0 {
			b.WriteString("\n## Commits\n")
			for _, c := range ev.Commits {
				by := c.Author
				if c.ByHub {
					by = "hub"
				}
				fmt.Fprintf(&b, "- %s %s (%s)\n", c.SHA[:min(10, len(c.SHA))], c.Subject, by)
			}
		}
		if ev.Verify != nil {
			fmt.Fprintf(&b, "\n## Verify: `%s` exit %d\n%s\n", ev.Verify.Command, ev.Verify.ExitCode, ev.Verify.OutputTail)
		}
	}
	if tail := fileTail(s.o.Paths.WorkerLog(id), 8<<10); tail != "" {
		b.WriteString("\n## Worker output (tail)\n" + tail)
	}
	return b.String()
}

func fileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	if fi.Size() > n {
		_, _ = f.Seek(fi.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
