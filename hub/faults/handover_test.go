//go:build linux

package faults

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/internal/hubtest"
)

// handoverRounds is how many times TestShutdownRace shuts the daemon down
// under concurrent commands.
const handoverRounds = 200

// TestShutdownRace: `hub shutdown` against concurrent `hub jobs` and `hub
// start` on one HUB_HOME, round after round. Every call is served, or
// refused with a hint, within answerLimit; none hangs; every job a start
// reported exists; and at no moment do two daemons serve (the daemon log's
// "serving" and "stopped" lines alternate).
func TestShutdownRace(t *testing.T) {
	for i := 0; i < repeat(t); i++ {
		shutdownRaceCase(t)
	}
}

func shutdownRaceCase(t *testing.T) {
	began := time.Now()
	w := newWorld(t)
	ctx := hubtest.Deadline(t, 8*time.Minute)
	w.plainRepo()
	if a := w.hub(ctx, nil, "jobs"); a.code != 0 {
		t.Fatalf("hub jobs: exit %d\n%s", a.code, a.errOut)
	}
	var (
		f       figures
		slowest time.Duration
		ids     []string
		stops   int // shutdowns that stopped a daemon (the others found none)
	)
	for round := 0; round < handoverRounds && !t.Failed(); round++ {
		cmds := [][]string{
			{"shutdown"},
			{"jobs"},
			{"start", "--repo", w.repo, "--engine", "exec", "--exec", "true", "--task", fmt.Sprintf("round %d", round)},
			{"jobs", "--json"},
		}
		answers := make([]answer, len(cmds))
		var wg sync.WaitGroup
		for i, args := range cmds {
			wg.Go(func() { answers[i] = w.hub(ctx, nil, args...) })
		}
		wg.Wait()
		for _, a := range answers {
			slowest = max(slowest, a.took)
			if a.took > answerLimit {
				f.Hung++
				t.Errorf("round %d: hub %v took %s (at most %s)\nstderr: %s", round, a.args, a.took, answerLimit, a.errOut)
			}
			switch {
			case a.code != 0:
				// Refused with a hint would keep the promise; across a
				// hand-over every call should even be served.
				f.Unhinted++
				t.Errorf("round %d: hub %v: exit %d:\n%s", round, a.args, a.code, a.errOut)
			case a.args[0] == "start":
				ids = append(ids, strings.TrimSpace(a.out))
			case a.args[0] == "shutdown" && strings.Contains(a.out, "stopped"):
				stops++
			}
		}
	}

	// Every job a start reported is there, under whichever daemon serves now.
	a := w.hub(ctx, nil, "jobs", "--json", "--limit", "100000")
	if a.code != 0 {
		t.Fatalf("hub jobs: exit %d\n%s", a.code, a.errOut)
	}
	for _, id := range ids {
		if !strings.Contains(a.out, `"`+id+`"`) {
			f.WorkLost++
			t.Errorf("job %s that start reported is not listed", id)
		}
	}
	serving, stopped, overlaps := daemonIntervals(t, w.paths.DaemonLog())
	f.TwoDaemons += overlaps
	if stopped < stops || stops < handoverRounds/2 {
		t.Errorf("%d shutdowns stopped a daemon and the log has %d stopping; want the log to have them all, and at least %d", stops, stopped, handoverRounds/2)
	}
	if a := w.hub(ctx, nil, "shutdown"); a.code != 0 {
		t.Errorf("hub shutdown: exit %d: %s", a.code, a.errOut)
	}
	record(outcome{Test: "TestShutdownRace", Fault: fmt.Sprintf("%d rounds of `hub shutdown` against a concurrent `hub start` and two `hub jobs`", handoverRounds),
		Ends: []string{fmt.Sprintf("%d daemons stopped, %d served, every call served (slowest %s), %d jobs started and listed",
			stops, serving, slowest.Round(time.Millisecond), len(ids))},
		Figures: f, Took: time.Since(began)})
}

var (
	daemonLine = regexp.MustCompile(`hub daemon (serving|stopped)`)
	pidField   = regexp.MustCompile(`\bpid=(\d+)`)
)

// daemonIntervals reads the daemon log (every daemon of the HUB_HOME
// appends to it): a daemon says it serves after taking the lock and that it
// stopped just before letting go of it, so the lines must alternate, each
// pair from one pid. It counts them and the overlaps.
func daemonIntervals(t *testing.T, log string) (serving, stopped, overlaps int) {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	current := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		ev, pid := daemonLine.FindStringSubmatch(line), pidField.FindStringSubmatch(line)
		if ev == nil || pid == nil {
			continue
		}
		switch ev[1] {
		case "serving":
			if current != "" {
				overlaps++
				t.Errorf("daemon %s serves while daemon %s has not stopped", pid[1], current)
			}
			current = pid[1]
			serving++
		case "stopped":
			if current != pid[1] {
				overlaps++
				t.Errorf("daemon %s stopped, but %q was the one serving", pid[1], current)
			}
			current = ""
			stopped++
		}
	}
	return serving, stopped, overlaps
}
