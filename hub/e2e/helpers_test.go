package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/store"
)

// world is one test's HUB_HOME with a daemon client.
type world struct {
	t     *testing.T
	env   *hubtest.Env
	paths config.Paths
	bin   string

	mu       sync.Mutex
	statuses map[string]protocol.JobStatus
	changed  chan struct{}
	// notices are the question/asked and question/answered notifications, in order.
	notices []notice
}

// notice is one question notification: its method and params.
type notice struct {
	method string
	asked  protocol.QuestionNotice
	answer protocol.AnswerNotice
}

func newWorld(t *testing.T) *world {
	env := hubtest.NewEnv(t)
	return &world{t: t, env: env, paths: config.Paths{Home: env.Home}, bin: hubtest.MustBinary(t),
		statuses: map[string]protocol.JobStatus{}, changed: make(chan struct{})}
}

// connect returns a client subscribed to notifications; the daemon starts if needed.
func (w *world) connect(ctx context.Context) *client.Client {
	w.t.Helper()
	h := func(ctx context.Context, c *rpc.Conn, req *jsonrpc2.Request) (any, error) {
		if req.Method == protocol.NotifyJobChanged && req.Params != nil {
			var st protocol.JobStatus
			if json.Unmarshal(*req.Params, &st) == nil {
				w.mu.Lock()
				w.statuses[st.ID] = st
				close(w.changed)
				w.changed = make(chan struct{})
				w.mu.Unlock()
			}
		}
		if (req.Method == protocol.NotifyQuestionAsked || req.Method == protocol.NotifyQuestionAnswered) && req.Params != nil {
			n := notice{method: req.Method}
			_ = json.Unmarshal(*req.Params, &n.asked)
			_ = json.Unmarshal(*req.Params, &n.answer)
			w.mu.Lock()
			w.notices = append(w.notices, n)
			w.mu.Unlock()
		}
		return nil, nil
	}
	c, err := client.Connect(ctx, w.paths, client.Options{AutoStart: true, HubBinary: w.bin, ClientName: "e2e", Handler: h})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	if _, err := c.Daemon().Subscribe(ctx, protocol.SubscribeParams{}); err != nil {
		w.t.Fatal(err)
	}
	return c
}

// changedCh returns a channel closed at the next job/changed notification.
func (w *world) changedCh() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// until waits for a job/changed notification that satisfies ok.
func (w *world) until(ctx context.Context, id string, ok func(protocol.JobStatus) bool) protocol.JobStatus {
	w.t.Helper()
	for {
		w.mu.Lock()
		st, seen := w.statuses[id]
		ch := w.changed
		w.mu.Unlock()
		if seen && ok(st) {
			return st
		}
		select {
		case <-ch:
		case <-ctx.Done():
			w.t.Fatalf("job %s: condition not met before deadline; last status %+v", id, st)
		}
	}
}

// sampleRepo makes a repo whose bug.txt says "broken".
func sampleRepo(t *testing.T, name string) string {
	dir := filepath.Join(t.TempDir(), name)
	return hubtest.Repo(t, dir, map[string]string{"bug.txt": "broken\n", "README.md": "# sample\n"})
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func storeJob(t *testing.T, w *world, id string) (*store.Job, error) {
	t.Helper()
	st, err := store.Open(w.paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return st.Job(hubtest.Deadline(t, 10*time.Second), id)
}

// mcpSession launches `hub mcp` on stdio in w's world and connects a go-sdk
// client pinned to version. Progress messages land in the returned channel.
func (w *world) mcpSession(ctx context.Context, version string) (*mcp.ClientSession, <-chan string) {
	w.t.Helper()
	cmd := exec.Command(w.bin, "mcp")
	cmd.Env = w.env.Vars
	progress := make(chan string, 64)
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- r.Params.Message:
			default:
			}
		},
	})
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { cs.Close() })
	return cs, progress
}
