// Package view renders what hub shows of a job, once for every front end:
// the short status built from the store, the one-line view, the ten-line
// summary, durations, money and one-line excerpts. The CLI and the MCP
// server print these same strings; the editor shows the protocol types.
//
// It only reads what it is given: no store writes, no git, no processes.
package view

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/internal/errline"
	"github.com/hub-agents/hub/internal/text"
	"github.com/hub-agents/hub/rubric"
)

// Status builds the short view of a job. pending is its oldest pending
// question, or nil.
func Status(j *store.Job, pending *store.Question, now time.Time) protocol.JobStatus {
	st := protocol.JobStatus{
		ID: j.ID, State: j.State, Kind: j.Kind, Engine: j.Engine, Model: j.Model,
		Repo: j.Repo, Branch: j.Branch, Base: j.BaseSHA, Head: j.HeadSHA,
		Task: FirstLine(j.Task, 100), Progress: j.Progress,
		Cost:     protocol.Cost{USD: j.CostMicros.USD(), Known: j.CostKnown, ReservedUSD: j.MaxMicros.USD(), Tokens: j.Tokens},
		Salvaged: j.Salvaged, Error: j.Error, Category: j.Category, CreatedAt: j.CreatedAt, Cursor: j.Cursor,
	}
	st.OldCostUSD, st.OldCostKnown = st.Cost.USD, st.Cost.Known
	if pending != nil && j.State == protocol.StateNeedsInput {
		st.Question = QuestionView(pending)
	}
	st.Target = j.Target
	st.Rubric, st.Alerts = j.Rubric, j.Alerts
	if len(j.Forecast) > 0 {
		var f protocol.Forecast
		if json.Unmarshal(j.Forecast, &f) == nil {
			st.Forecast = &f
		}
	}
	if len(j.Landed) > 0 {
		var l protocol.Landing
		if json.Unmarshal(j.Landed, &l) == nil {
			st.Landed = &l
		}
	}
	if len(j.Verify) > 0 {
		var v protocol.Verify
		if json.Unmarshal(j.Verify, &v) == nil {
			code := v.ExitCode
			st.VerifyExit = &code
		}
	}
	end := now
	if !j.EndedAt.IsZero() {
		e := j.EndedAt
		st.EndedAt = &e
		end = e
	}
	st.ElapsedMS = end.Sub(j.CreatedAt).Milliseconds()
	return st
}

// QuestionView converts a stored question.
func QuestionView(q *store.Question) *protocol.Question {
	return &protocol.Question{ID: q.ID, Kind: q.Kind, Text: q.Text, Context: q.Context,
		AskedAt: q.AskedAt, ExpiresAt: q.ExpiresAt, Cursor: q.Cursor}
}

// FirstLine returns the first line of s, cut to n runes (text.FirstLine).
func FirstLine(s string, n int) string { return text.FirstLine(s, n) }

// Line renders a job in one line: "id state · engine · 12s · $0.00 ·
// verified", then what its reader must act on: its question, its error, or
// while it runs its latest progress note.
func Line(st protocol.JobStatus) string {
	parts := []string{st.ID + " " + string(st.State), st.Engine, Duration(time.Duration(st.ElapsedMS) * time.Millisecond),
		Cost(st.Cost.USD, st.Cost.Known)}
	switch {
	case st.VerifyExit != nil && *st.VerifyExit == 0:
		parts = append(parts, "verified")
	case st.VerifyExit != nil:
		parts = append(parts, fmt.Sprintf("verify failed (exit %d)", *st.VerifyExit))
	}
	if st.Salvaged {
		parts = append(parts, "salvaged")
	}
	if st.State == protocol.StateSucceeded && (st.Rubric == string(rubric.VerdictNeedsRevision) || st.Rubric == string(rubric.VerdictUnknown)) {
		// A success with a criterion failing or unchecked says so beside it.
		parts = append(parts, "rubric "+st.Rubric)
	}
	if len(st.Alerts) > 0 {
		a := "⚠ " + OneLine(st.Alerts[0], 120)
		if n := len(st.Alerts) - 1; n > 0 {
			a += fmt.Sprintf(" (+%d more)", n)
		}
		parts = append(parts, a)
	}
	switch {
	case st.Landed != nil:
		parts = append(parts, "landed on "+st.Landed.Into)
	case ConflictLine(st.Forecast) != "" && (!st.State.Terminal() || st.State == protocol.StateSucceeded):
		// Work that may land; a job that failed has its error to show.
		parts = append(parts, ConflictLine(st.Forecast))
	}
	switch {
	case st.State == protocol.StateNeedsInput && st.Question != nil:
		parts = append(parts, "asks: "+OneLine(st.Question.Text, 200))
	case st.Error != "":
		parts = append(parts, OneLine(st.Error, 200))
	case !st.State.Terminal() && st.Progress != "":
		parts = append(parts, OneLine(st.Progress, 120))
	}
	return strings.Join(parts, " · ")
}

// ConflictLine is a forecast's predicted conflicts in one line: the first
// one, then how many more ("" when none).
func ConflictLine(f *protocol.Forecast) string {
	if f == nil || len(f.Conflicts) == 0 {
		return ""
	}
	s := f.Conflicts[0].Line
	if n := len(f.Conflicts) - 1; n > 0 {
		s += fmt.Sprintf(" (+%d more conflicts)", n)
	}
	return s
}

// Cost is "$0.42", or "$?" when the engine did not say what it cost.
func Cost(usd float64, known bool) string {
	if !known {
		return "$?"
	}
	return fmt.Sprintf("$%.2f", usd)
}

// Duration renders d for a person: 850ms, 12s, 4m10s, 2h05m.
func Duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// OneLine folds s onto one line of at most max runes (text.OneLine).
func OneLine(s string, max int) string { return text.OneLine(s, max) }

// FirstLines keeps at most n lines of s.
func FirstLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n")
}

// Summary renders the result in at most 10 lines: the outcome, the answer
// (claimed), files, commit, verify, what is left.
func Summary(st protocol.JobStatus, ev *protocol.Evidence) string {
	var b []string
	b = append(b, Line(st))
	// What it did beyond its branch comes before the rest, which the line
	// limit may cut: the reader has something to put back.
	alerts := Alerts(ev)
	if ev == nil {
		alerts = st.Alerts
	}
	for i, a := range alerts {
		if i == 3 {
			b = append(b, fmt.Sprintf("⚠ +%d more (hub result %s --full)", len(alerts)-3, st.ID))
			break
		}
		b = append(b, "⚠ "+a)
	}
	if ev == nil {
		if !st.State.Terminal() {
			b = append(b, "not ended yet: wait for it, then ask again")
		}
		return strings.Join(b, "\n")
	}
	if ev.Claimed.Report != "" {
		lines := strings.Split(ev.Claimed.Report, "\n")
		if len(lines) > 3 {
			lines = lines[len(lines)-3:]
		}
		b = append(b, "worker says: "+strings.Join(lines, " / "))
	}
	if ev.Kind == protocol.KindWrite {
		add, del := 0, 0
		var names []string
		for _, f := range ev.Files {
			if f.Added > 0 {
				add += f.Added
			}
			if f.Deleted > 0 {
				del += f.Deleted
			}
			names = append(names, f.Path)
		}
		if len(names) > 6 {
			names = append(names[:6], fmt.Sprintf("+%d more", len(names)-6))
		}
		if len(ev.Files) == 0 {
			b = append(b, "files: none changed")
		} else {
			b = append(b, fmt.Sprintf("files: %d changed (+%d -%d): %s", len(ev.Files), add, del, strings.Join(names, ", ")))
		}
		if ev.Head != "" && ev.Head != ev.Base {
			b = append(b, fmt.Sprintf("commit: %s %s..%s (%d commits)", ev.Branch, ShortSHA(ev.Base), ShortSHA(ev.Head), len(ev.Commits)))
		}
	}
	if l := envLine(ev.Env); l != "" {
		b = append(b, l)
	}
	for _, e := range ev.Env {
		if e.Failed && e.OutputTail != "" {
			b = append(b, e.What+" output: "+FirstLine(errline.Telling(e.OutputTail), 160))
		}
	}
	if v := ev.Verify; v != nil {
		s := fmt.Sprintf("verify: `%s` exit %d in %s on %s", FirstLine(v.Command, 60), v.ExitCode,
			Duration(time.Duration(v.DurationMS)*time.Millisecond), ShortSHA(v.Commit))
		if v.TimedOut {
			s += " (timed out)"
		}
		b = append(b, s)
		if v.ExitCode != 0 && v.OutputTail != "" {
			b = append(b, "verify output: "+FirstLine(errline.Telling(v.OutputTail), 160))
		}
	}
	if r := ev.Rubric; r != nil && len(r.Criteria) > 0 && (r.Verdict != "satisfied" || hasKind(r, "judgement", "unchanged", "only")) &&
		(st.State == protocol.StateSucceeded || r.Verdict == string(rubric.VerdictFailed) || r.Verdict == string(rubric.VerdictNeedsRevision)) {
		// A job that did not succeed shows its rubric only when a criterion
		// failed: "satisfied" beside a failure would read as a success.
		b = append(b, r.Line)
	}
	b = append(b, "left: "+left(st, ev))
	if ev.Observed.UserCheckoutDirty {
		b = append(b, "note: your checkout had uncommitted changes; the job started from the commit without them")
	}
	if len(b) > 10 {
		b = b[:10]
	}
	return strings.Join(b, "\n")
}

// envLine says in one line how the job's checkout was made ready:
// "env: node_modules from hub's cache (npm) 1.1s; setup `make gen` 0.2s".
func envLine(steps []protocol.EnvStep) string {
	var parts []string
	for _, e := range steps {
		took := Duration(time.Duration(e.DurationMS) * time.Millisecond)
		switch {
		case e.What == "setup":
			s := fmt.Sprintf("setup `%s` %s", FirstLine(e.Command, 40), took)
			if e.Failed {
				s += " failed"
			}
			parts = append(parts, s)
		case e.Failed:
			parts = append(parts, fmt.Sprintf("`%s` failed (%s, %s)", FirstLine(e.Command, 40), e.Manager, e.Lockfile))
		case e.Source == "":
			parts = append(parts, fmt.Sprintf("%s dependencies not made ready", e.Manager))
		case len(e.Dirs) == 0:
			parts = append(parts, fmt.Sprintf("%s modules downloaded %s", e.Manager, took))
		default:
			parts = append(parts, fmt.Sprintf("%s from %s (%s) %s", strings.Join(e.Dirs, ", "), e.Source, e.Manager, took))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "env: " + strings.Join(parts, "; ")
}

// left says what is left to do with the job, from the same facts as its
// state line: a success with files to land says to review and land them
// (revising first when a criterion failed, checking what nobody could);
// a success with nothing changed says there is nothing to land.
func left(st protocol.JobStatus, ev *protocol.Evidence) string {
	switch {
	case ev.Kind == protocol.KindRead && st.State == protocol.StateSucceeded:
		return "nothing; the answer is above"
	case st.Landed != nil:
		return fmt.Sprintf("nothing; landed on %s as %s (%s); cleanup removes the worktree", st.Landed.Into, ShortSHA(st.Landed.Commit), st.Landed.Verified)
	case st.State == protocol.StateSucceeded && ev.Kind == protocol.KindWrite:
		s := fmt.Sprintf("review %s, then land it (hub land %s), then cleanup", ev.Branch, st.ID)
		r := ev.Rubric
		switch {
		case len(ev.Files) == 0:
			s = "nothing to land: no file differs from the base; cleanup"
		case r != nil && r.Verdict == string(rubric.VerdictNeedsRevision):
			s = fmt.Sprintf("revise it (%s failed) or review %s and land it anyway (hub land %s)", strings.Join(criteria(r, rubric.StatusFail), ", "), ev.Branch, st.ID)
		}
		if r != nil && r.Verdict == string(rubric.VerdictUnknown) {
			s = "check " + strings.Join(criteria(r, rubric.StatusUnknown), ", ") + " yourself (nobody could); " + s
		}
		if c := ConflictLine(st.Forecast); c != "" && len(ev.Files) > 0 {
			s = c + "; " + s
		}
		return s
	case ev.Error != "":
		s := FirstLine(ev.Error, 120)
		if ev.Salvaged {
			s += "; partial work is committed on " + ev.Branch
		}
		return s
	}
	return string(st.State)
}

// criteria lists the ids of r's criteria with status st.
func criteria(r *protocol.Rubric, st rubric.Status) []string {
	var ids []string
	for _, c := range r.Criteria {
		if c.Status == string(st) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// Alerts name what a job did beyond its branch, one line each, with how to
// put it back where git can: refs it moved in the user's repository (a
// branch, a tag, the stash it took or changed) and files of its base it
// deleted. A job's status carries them (Job.Alerts, set as it ends), so
// status, result and --full name them all.
func Alerts(ev *protocol.Evidence) []string {
	if ev == nil {
		return nil
	}
	var out []string
	for _, rc := range ev.Observed.RefChanges {
		out = append(out, refAlert(rc))
	}
	for _, c := range ev.Observed.RepoChanges {
		out = append(out, repoAlert(c))
	}
	var deleted []string
	for _, f := range ev.Files {
		if f.Change == "deleted" {
			deleted = append(deleted, f.Path)
		}
	}
	if len(deleted) > 0 {
		out = append(out, fmt.Sprintf("deleted %d file(s) of the base: %s", len(deleted), PathList(deleted, 5)))
	}
	return out
}

// repoAlert says what changed in the user's repository's shared config or
// hooks while the job ran, and that hub put it back.
func repoAlert(c protocol.RepoChange) string {
	where := "your repository's git config"
	if c.What == "hooks" {
		where = "your repository's hooks folder"
	}
	who := "while it ran"
	if len(c.Others) > 0 {
		who = "while it ran (or by another job running then: " + strings.Join(c.Others, ", ") + ")"
	}
	return fmt.Sprintf("%s changed %s: %s; hub %s", where, who, c.Found, c.Done)
}

// refAlert says how one ref moved while the job ran and how to put it
// back. At isolation worktree hub cannot tell whether the worker moved it
// or someone else did (the journal's note says so); hub's own moves — other
// jobs' branches, landings — are not reported (the shim's ref guard).
func refAlert(rc protocol.RefChange) string {
	b, a := ShortSHA(rc.Before), ShortSHA(rc.After)
	if rc.Ref == "refs/stash" {
		switch {
		case rc.After == "":
			return fmt.Sprintf("your stash %s was taken while it ran (git stash store -m restored %s puts it back)", b, rc.Before)
		case rc.Before == "":
			return fmt.Sprintf("a stash %s was made in your repository while it ran", a)
		}
		return fmt.Sprintf("your stash changed while it ran: its top was %s, now %s (git stash store -m restored %s puts the old top back)", b, a, rc.Before)
	}
	what, name := "ref", rc.Ref
	switch {
	case strings.HasPrefix(rc.Ref, "refs/heads/"):
		what, name = "branch", strings.TrimPrefix(rc.Ref, "refs/heads/")
	case strings.HasPrefix(rc.Ref, "refs/tags/"):
		what, name = "tag", strings.TrimPrefix(rc.Ref, "refs/tags/")
	}
	switch {
	case rc.Before == "":
		return fmt.Sprintf("%s %s was made at %s while it ran (git update-ref -d %s removes it)", what, name, a, rc.Ref)
	case rc.After == "":
		return fmt.Sprintf("%s %s was deleted while it ran (git update-ref %s %s puts it back)", what, name, rc.Ref, rc.Before)
	}
	return fmt.Sprintf("%s %s moved while it ran: %s → %s (git update-ref %s %s puts it back)", what, name, b, a, rc.Ref, rc.Before)
}

// hasKind says whether the rubric has a criterion of one of the kinds: a
// definition of done beyond "verify passes and something changed" is worth a line.
func hasKind(r *protocol.Rubric, kinds ...string) bool {
	for _, c := range r.Criteria {
		for _, k := range kinds {
			if c.Kind == k {
				return true
			}
		}
	}
	return false
}

// ShortSHA abbreviates a commit SHA as hub shows them (text.ShortSHA).
func ShortSHA(sha string) string { return text.ShortSHA(sha) }

// Next says in a few words what to do next with a job in a review packet.
func Next(it protocol.ReviewItem) string {
	switch {
	case it.Landed != nil:
		return "cleanup (landed on " + it.Landed.Into + ")"
	case !it.State.Terminal():
		return "wait"
	case it.Files == 0:
		return "nothing to land; cleanup"
	case it.State != protocol.StateSucceeded || it.Verify == "fail":
		return "read its result; fix or retry"
	case len(it.Conflicts) > 0 && it.Conflicts[0].With == "target":
		return "land (merges onto the new tip) or resolve"
	case len(it.Conflicts) > 0:
		return "land it or " + it.Conflicts[0].With + "; resolve the other"
	case slices.Contains(it.Risks, "secret"):
		return "remove the secret first"
	case slices.Contains(it.Risks, "refs-moved"):
		return "put back what moved (hub result " + it.ID + "), then land"
	case len(it.Risks) > 0 || it.Rubric == "needs_revision":
		return "review the diff, then land"
	}
	return "land"
}

// Review renders a review packet: a header line, then one line per job
// (about a hundred bytes each), so a batch of twenty fits in ~2 KB.
func Review(items []protocol.ReviewItem) string {
	ready, conflicted, failed, landed := 0, 0, 0, 0
	for _, it := range items {
		switch {
		case it.Landed != nil:
			landed++
		case it.Next == "land":
			ready++
		case it.State.Terminal() && (it.State != protocol.StateSucceeded || it.Verify == "fail"):
			failed++
		case len(it.Conflicts) > 0:
			conflicted++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs: %d ready to land, %d with conflicts, %d failed, %d landed\n", len(items), ready, conflicted, failed, landed)
	for _, it := range items {
		b.WriteString(ReviewLine(it))
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// ReviewLine is one job of a review packet:
// "abc12345 succeeded 3f +40-2 v:pass r:satisfied $0.01 ⚠ lockfile · conflicts hub/x: a.go · next: land".
func ReviewLine(it protocol.ReviewItem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %df +%d-%d", it.ID, it.State, it.Files, it.Added, it.Deleted)
	if it.Verify != "" {
		b.WriteString(" v:" + it.Verify)
	}
	if it.Rubric != "" && it.Rubric != "satisfied" {
		b.WriteString(" r:" + it.Rubric)
	}
	fmt.Fprintf(&b, " $%.2f", it.CostUSD)
	if len(it.Risks) > 0 {
		b.WriteString(" ⚠ " + strings.Join(it.Risks, ","))
	}
	if len(it.Conflicts) > 0 {
		c := it.Conflicts[0]
		b.WriteString(" · ✗ " + c.Branch + ": " + PathList(c.Files, 2))
		if len(it.Conflicts) > 1 {
			fmt.Fprintf(&b, " +%d", len(it.Conflicts)-1)
		}
	}
	b.WriteString(" · " + it.Next)
	return b.String()
}

// PathList names up to n paths, then how many more.
func PathList(paths []string, n int) string {
	if len(paths) <= n {
		return strings.Join(paths, ", ")
	}
	return strings.Join(paths[:n], ", ") + fmt.Sprintf(" (+%d more)", len(paths)-n)
}

// LandItemLine is one job of a landing in one line: "abc12345 landed ·
// 3f2a9c01de · `go test ./...` exit 0", "abc12345 conflict · a.go, b.go ·
// follow-up xyz98765", "abc12345 red · why".
func LandItemLine(it protocol.LandItem) string {
	parts := []string{it.ID + " " + it.Outcome}
	switch it.Outcome {
	case protocol.LandLanded, protocol.LandWould, protocol.LandAlready:
		if it.Commit != "" {
			parts = append(parts, ShortSHA(it.Commit))
		}
		for _, v := range []*protocol.Verify{it.Verify, it.Batch} {
			if v != nil {
				parts = append(parts, fmt.Sprintf("`%s` exit %d", FirstLine(v.Command, 40), v.ExitCode))
			}
		}
	case protocol.LandConflict:
		parts = append(parts, PathList(it.Files, 5))
	default:
		if it.Reason != "" {
			parts = append(parts, OneLine(it.Reason, 200))
		}
	}
	if it.FollowUp != "" {
		parts = append(parts, "follow-up "+it.FollowUp)
	}
	return strings.Join(parts, " · ")
}
