//go:build linux

package faults

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// garbage is what a corrupted file gets: invalid UTF-8, NULs, a broken
// JSON line and a line far past any buffer.
var garbage = append(append([]byte("\x00\xff\xfe{\"cursor\":\"not a number\",\"kind\":\n{{{\xc3\x28 \x00\n"),
	make([]byte, 70<<10)...), []byte("\ntruncated {\"cursor\": 12, \"job_id\": \"")...)

// TestCorruptFiles: a job's worker log (HUB_HOME/jobs/<id>/worker.log, whose
// tail the full result shows) corrupted and truncated — one job's after it
// ended, another's while its worker still runs and its shim still appends.
// hub keeps serving, through a daemon restart too, both jobs' records stay
// readable and what it shows of the logs is valid UTF-8; the running one
// finishes whole. (A job's events live only in hub.db.)
func TestCorruptFiles(t *testing.T) {
	for i := 0; i < repeat(t); i++ {
		corruptCase(t)
	}
}

// corrupt overwrites the middle of path with garbage and cuts it off mid-line.
func corrupt(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(garbage, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(fi.Size()/2 + int64(len(garbage)) - 7); err != nil {
		t.Fatal(err)
	}
}

func corruptCase(t *testing.T) {
	began := time.Now()
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 90*time.Second)
	w.makeRepo(filepath.Join(w.dir, "repo"))
	w.startDaemon(ctx)

	doneID := w.start(ctx, protocol.StartParams{Task: "ended, then corrupted",
		Exec: `for i in 1 2 3; do hub progress "step $i"; echo "line $i"; done; echo done > done.txt`, Verify: "test -f done.txt"})
	w.waitEnd(ctx, doneID)
	runID := w.start(ctx, protocol.StartParams{Task: "corrupted while running",
		Exec: `echo "before" > before.txt; echo out; hub progress parked; ` + w.gateCmd("run") +
			`; hub progress "after the corruption"; echo more output; echo "after" > after.txt`,
		Verify: "test -f after.txt"})
	w.until(ctx, runID, func(st protocol.JobStatus) bool { return st.Progress == "parked" })

	// The ended job: worker log corrupted with garbage. The running one:
	// worker log corrupted, then truncated to a broken line, while its
	// shim has it open for appending.
	corrupt(t, w.paths.WorkerLog(doneID))
	corrupt(t, w.paths.WorkerLog(runID))
	if err := os.WriteFile(w.paths.WorkerLog(runID), []byte("\xff\xfe half a li"), 0o600); err != nil {
		t.Fatal(err)
	}

	readAll := func() {
		t.Helper()
		for _, id := range []string{doneID, runID} {
			w.status(ctx, id)
			res := hubtest.Daemon(t, w.c).JobResult(ctx, protocol.ResultParams{ID: id, Full: true, Evidence: true})
			if !utf8.ValidString(res.Full) {
				t.Errorf("job %s's full result is not valid UTF-8", id)
			}
			hubtest.Daemon(t, w.c).JobEvents(ctx, protocol.EventsParams{ID: id})
		}
		hubtest.Daemon(t, w.c).JobList(ctx, protocol.ListParams{})
		hubtest.Daemon(t, w.c).DU(ctx, protocol.DUParams{})
		// The CLI a person would use, too.
		for _, args := range [][]string{{"result", "--full", doneID}, {"status", runID}} {
			cmd := exec.CommandContext(ctx, w.bin, args...)
			cmd.Env = w.vars
			if out, err := cmd.CombinedOutput(); err != nil || !utf8.Valid(out) {
				t.Errorf("hub %v: %v (valid UTF-8: %v)\n%s", args, err, utf8.Valid(out), out)
			}
		}
	}
	readAll()
	// A daemon starting over corrupted files.
	w.killDaemon(ctx, syscall.SIGKILL)
	w.startDaemon(ctx)
	readAll()

	w.openGate("run")
	ends := w.waitEnd(ctx, doneID, runID)
	for _, e := range ends {
		if e.State != protocol.StateSucceeded {
			t.Errorf("job %s ended %s: %s", e.ID, e.State, e.Error)
		}
	}
	readAll()
	f := w.checkAll(ctx,
		work{id: doneID, files: map[string]string{"done.txt": "done\n"}},
		work{id: runID, files: map[string]string{"before.txt": "before\n", "after.txt": "after\n"}})
	report(t, outcome{Test: "TestCorruptFiles", Fault: "worker.log corrupted (garbage, invalid UTF-8, a 70 KiB line, cut mid-line) and truncated, of an ended job and of a running one while its shim appends; daemon restarted over them",
		Ends: []string{w.ending(ends[0]), w.ending(ends[1])}, Figures: f, Took: time.Since(began)})
}
