//go:build unix

package store

import (
	"context"
	"encoding/json"
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
