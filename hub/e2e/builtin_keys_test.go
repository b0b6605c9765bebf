package e2e

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hub-agents/hub/agent/scripted"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
)

// TestBuiltinKeyStaysOutOfTheWorker: the model's key is in the daemon's
// environment and reaches the model server, but a worker that runs `env`
// sees neither the key nor its variable, and nothing hub writes under
// HUB_HOME (journal, worker and shim logs, daemon log, store) holds the key.
func TestBuiltinKeyStaysOutOfTheWorker(t *testing.T) {
	eachWire(t, func(t *testing.T, wr wire) {
		ctx := hubtest.Deadline(t, 60*time.Second)
		u := scripted.Usage{Input: 100, Output: 10}
		b := newBuiltinWorld(t, ctx, wr, true,
			toolTurn(u, "run_shell", map[string]any{"command": "env; echo \"key var: ${" + keyEnvName + ":-unset}\""}),
			toolTurn(u, "write_file", map[string]any{"path": "env-checked.txt", "content": "ok\n"}),
			textTurn(u, "Looked at the environment."),
		)
		r := b.start(ctx, protocol.StartParams{Task: "print the environment"})
		st := b.waitEnd(ctx, r.ID)
		if st.State != protocol.StateSucceeded {
			t.Fatalf("job ended %s: %s", st.State, st.Error)
		}
		if got := wr.key(b.model.request(0).Header); got != b.key {
			t.Fatalf("the model server got key %q; the test means nothing unless the real key was in use", got)
		}
		res := lastToolResults(t, b.model.request(1))
		if !strings.Contains(res, "HUB_JOB="+r.ID) {
			t.Fatalf("env did not run in the worker:\n%s", res)
		}
		if strings.Contains(res, b.key) {
			t.Errorf("the worker's env shows the key:\n%s", res)
		}
		if strings.Contains(res, keyEnvName) || !strings.Contains(res, "key var: unset") {
			t.Errorf("the worker's env has the key variable:\n%s", res)
		}
		for _, req := range b.model.Requests() {
			if bytes.Contains(req.Body, []byte(b.key)) {
				t.Errorf("a request body sent to the model holds the key")
			}
		}
		// Nothing under HUB_HOME holds the key: the job's directory
		// (worker.log, shim.log), the logs, the store with the journal.
		jobDir := b.paths.JobDir(r.ID)
		seen := map[string]bool{}
		err := filepath.WalkDir(b.paths.Home, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // the daemon's forecast takes and drops its lock files as it goes
			}
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(b.paths.Home, p)
			seen[filepath.Base(p)] = seen[filepath.Base(p)] || strings.HasPrefix(p, jobDir)
			if bytes.Contains(data, []byte(b.key)) {
				t.Errorf("HUB_HOME/%s holds the key", rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"worker.log"} {
			if !seen[f] {
				t.Errorf("the job has no %s to check", f)
			}
		}
	})
}
