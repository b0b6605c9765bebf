package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
)

func now() time.Time { return time.Now().UTC() }

// result gives the summary, the full text or the evidence of a job.
func (s *Server) result(ctx context.Context, p protocol.ResultParams) (*protocol.ResultResult, error) {
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
		ev = &protocol.Evidence{}
		if err := json.Unmarshal(j.Evidence, ev); err != nil {
			return nil, internal(fmt.Errorf("job %s: stored evidence unreadable: %w", j.ID, err))
		}
	}
	res := &protocol.ResultResult{ID: j.ID, State: j.State, Summary: job.Summary(st, ev)}
	if p.Evidence {
		res.Evidence = ev
	}
	if p.Full {
		res.Full = s.fullText(j.ID, res.Summary, ev)
	}
	return res, nil
}

// fullText is the summary, then what the worker said in full, the verify
// output and the tail of the worker's log.
func (s *Server) fullText(id, summary string, ev *protocol.Evidence) string {
	var b strings.Builder
	b.WriteString(summary)
	b.WriteString("\n")
	if ev != nil {
		if len(ev.Claimed.Progress) > 0 {
			b.WriteString("\n## Progress the worker reported\n")
			for _, n := range ev.Claimed.Progress {
				b.WriteString("- " + n + "\n")
			}
		}
		if ev.Claimed.Summary != "" {
			b.WriteString("\n## What the worker said at the end\n" + ev.Claimed.Summary + "\n")
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
