//go:build unix

package store

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/hub-agents/hub/hub/protocol"
)

// TestHubRefs: the refs hub moves in a repository are its jobs' branches and
// the commits its landings moved a branch to; another repository's, a read
// job's and anyone else's are not.
func TestHubRefs(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	newJob(t, s, c, "a", 0)
	newJob(t, s, c, "b", 0)
	if err := s.CreateJob(ctx, &Job{ID: "r", Kind: protocol.KindRead, Repo: "/src/repo"}, c.now()); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJob(ctx, &Job{ID: "o", Kind: protocol.KindWrite, Repo: "/src/other", Branch: "hub/o"}, c.now()); err != nil {
		t.Fatal(err)
	}
	landing, _ := json.Marshal(protocol.Landing{Into: "main", Commit: "c0ffee", From: "beef", Head: "f00d", Mode: "merge"})
	if _, err := s.SetLanded(ctx, "a", landing, "landed", c.now()); err != nil {
		t.Fatal(err)
	}
	h, err := s.HubRefs(ctx, "/src/repo")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref, after string
		want       bool
	}{
		{"refs/heads/hub/a", "anything", true},
		{"refs/heads/hub/b", "", true}, // removed by cleanup
		{"refs/heads/main", "c0ffee", true},
		{"refs/heads/main", "beef", false}, // main moved back: not hub's doing
		{"refs/heads/main", "other", false},
		{"refs/heads/hub/o", "x", false}, // a job of another repository
		{"refs/heads/hub/r", "x", false}, // a read job has no branch
		{"refs/heads/feature", "x", false},
	} {
		if got := h.Made(tc.ref, tc.after); got != tc.want {
			t.Errorf("Made(%s, %s) = %v, want %v", tc.ref, tc.after, got, tc.want)
		}
	}
	if none, err := s.HubRefs(ctx, "/src/nowhere"); err != nil || none.Made("refs/heads/hub/a", "x") {
		t.Errorf("a repository with no jobs: %v, %v", none, err)
	}
}

// TestLandRuns: a landing run's record is added running, ends once (a
// second end is ErrWrongState and changes nothing), reads back whole, and
// the runs a stopped daemon left running are interrupted, only those.
func TestLandRuns(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	c := newClock()
	for _, id := range []string{"land-a", "land-b"} {
		if err := s.AddLandRun(ctx, protocol.LandRun{ID: id, Repo: "/src/repo", Into: "main", IDs: []string{"j1", "j2"}, StartedAt: c.now()}); err != nil {
			t.Fatal(err)
		}
	}
	res := &protocol.LandResult{Into: "main", From: "a", Tip: "b", Jobs: []protocol.LandItem{{ID: "j1", Outcome: protocol.LandLanded, Commit: "b"}}, Line: "1 landed"}
	if err := s.EndLandRun(ctx, "land-a", protocol.LandRunDone, res, "", c.now()); err != nil {
		t.Fatal(err)
	}
	if err := s.EndLandRun(ctx, "land-a", protocol.LandRunFailed, nil, "again", c.now()); !errors.Is(err, ErrWrongState) {
		t.Errorf("a second end: %v", err)
	}
	if err := s.EndLandRun(ctx, "land-none", protocol.LandRunDone, nil, "", c.now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("the end of an unknown run: %v", err)
	}
	ids, err := s.InterruptLandRuns(ctx, "interrupted: gone", c.now())
	if err != nil || !slices.Equal(ids, []string{"land-b"}) {
		t.Errorf("interrupted %v (%v), want land-b only", ids, err)
	}
	a, err := s.LandRun(ctx, "land-a")
	if err != nil || a.State != protocol.LandRunDone || a.Error != "" || !reflect.DeepEqual(a.Result, res) || a.EndedAt.IsZero() ||
		!slices.Equal(a.IDs, []string{"j1", "j2"}) || a.Repo != "/src/repo" || a.Into != "main" {
		t.Errorf("land-a: %+v (%v)", a, err)
	}
	b, err := s.LandRun(ctx, "land-b")
	if err != nil || b.State != protocol.LandRunInterrupted || b.Error != "interrupted: gone" || b.Result != nil {
		t.Errorf("land-b: %+v (%v)", b, err)
	}
	if _, err := s.LandRun(ctx, "land-none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown run: %v", err)
	}
}
