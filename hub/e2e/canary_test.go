package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
	_ "modernc.org/sqlite"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/internal/hubtest"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
)

// canaries are this run's planted secrets: name → value. Each is random, so
// finding one anywhere means it leaked from this run.
type canaries map[string]string

// plantCanaries makes the secrets: four known by value (two in hub's
// environment under secret-looking names, a profile key under a name that
// says nothing, a profile key in hub's env file, with regexp metacharacters
// in it) and four known only by their format (an AWS secret key, a GitHub
// token, a JWT, a private key, each line of which counts).
func plantCanaries() (c canaries, pemBlock string) {
	c = canaries{
		"OPENAI_API_KEY (environment)":     "cnry1-" + rand.Text(),
		"MY_SERVICE_TOKEN (environment)":   "cnry2-" + rand.Text(),
		"GW_CRED (profile key_env)":        "cnry3-" + rand.Text(),
		"ANTHROPIC_API_KEY (hub env file)": "cnry4." + rand.Text() + `+*?(|)^$[x]{2}\d`,
		"AWS secret access key":            base64.StdEncoding.EncodeToString(randBytes(30)),
		"GitHub token":                     "ghp_" + (rand.Text() + rand.Text())[:36],
		"JWT":                              "eyJhbGciOiJIUzI1NiJ9.eyJ" + rand.Text() + "." + rand.Text(),
	}
	body := base64.StdEncoding.EncodeToString(randBytes(6 * 48))
	var pem strings.Builder
	pem.WriteString("-----BEGIN OPENSSH PRIVATE KEY-----\n")
	for i := 0; i < len(body); i += 64 {
		line := body[i:min(i+64, len(body))]
		c[fmt.Sprintf("private key line %d", i/64+1)] = line
		pem.WriteString(line + "\n")
	}
	pem.WriteString("-----END OPENSSH PRIVATE KEY-----\n")
	return c, pem.String()
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// find returns the names of the canaries in b.
func (c canaries) find(b []byte) []string {
	var found []string
	for name, v := range c {
		if bytes.Contains(b, []byte(v)) {
			found = append(found, name)
		}
	}
	slices.Sort(found)
	return found
}

// check fails the test for each canary in what (anything JSON can encode).
func (c canaries) check(t *testing.T, where string, what any) {
	t.Helper()
	b, ok := what.([]byte)
	if !ok {
		s, isString := what.(string)
		if isString {
			b = []byte(s)
		} else {
			var err error
			if b, err = json.Marshal(what); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		}
	}
	if found := c.find(b); len(found) > 0 {
		t.Errorf("%s holds canaries %v:\n%s", where, found, b)
	}
}

// TestCanarySecrets plants canary secrets in hub's environment, in model
// profiles' keys and in files a worker reads, runs real exec jobs that
// spread them everywhere they can (the log, a progress note, a question and
// its context, a committed file, verify's output, the worker's last words,
// a failure), and then reads everything hub returns and every byte it keeps
// under HUB_HOME: no canary may appear. The worker's environment never holds
// one; the branch does (it is the repository's own content, not hub's), yet
// job/file returns it redacted.
func TestCanarySecrets(t *testing.T) {
	w := newWorld(t)
	c, pemBlock := plantCanaries()
	value := func(prefix string) string {
		for name, v := range c {
			if strings.HasPrefix(name, prefix) {
				return v
			}
		}
		t.Fatalf("no canary %s", prefix)
		return ""
	}
	// Hub's own environment: the daemon (started below) and its shims inherit it.
	t.Setenv("OPENAI_API_KEY", value("OPENAI_API_KEY"))
	t.Setenv("MY_SERVICE_TOKEN", value("MY_SERVICE_TOKEN"))
	t.Setenv("GW_CRED", value("GW_CRED"))
	t.Setenv("ANTHROPIC_API_KEY", "") // the env file's key must be the one that counts
	os.Unsetenv("ANTHROPIC_API_KEY")

	ctx := hubtest.Deadline(t, 120*time.Second)
	cl := w.connect(ctx)
	hubtest.Daemon(t, cl).ProfileSet(ctx, protocol.ProfileSetParams{
		Profile: protocol.ProfileInfo{Name: "gw", Provider: "openai", Model: "m", BaseURL: "https://gateway.invalid/v1", KeyEnv: "GW_CRED"}})
	hubtest.Daemon(t, cl).ProfileSet(ctx, protocol.ProfileSetParams{
		Profile: protocol.ProfileInfo{Name: "claude", Provider: "anthropic", Model: "m"}, Key: value("ANTHROPIC_API_KEY")})

	// A file outside the worktree, named in the task; one inside the repository.
	outside := filepath.Join(t.TempDir(), "notes.txt")
	notes := fmt.Sprintf("openai %s\nservice %s\ngateway %s\nclaude %s\naws_secret_access_key = %s\ngithub %s\njwt %s\n",
		value("OPENAI_API_KEY"), value("MY_SERVICE_TOKEN"), value("GW_CRED"), value("ANTHROPIC_API_KEY"),
		value("AWS secret"), value("GitHub"), value("JWT"))
	if err := os.WriteFile(outside, []byte(notes), 0o600); err != nil {
		t.Fatal(err)
	}
	dotenv := fmt.Sprintf("MY_SERVICE_TOKEN=%s\nANTHROPIC_API_KEY=%s\n%s", value("MY_SERVICE_TOKEN"), value("ANTHROPIC_API_KEY"), pemBlock)
	repo := hubtest.Repo(t, filepath.Join(t.TempDir(), "repo"), map[string]string{".env": dotenv, "README.md": "# sample\n"})

	// The worker: echoes its environment (and commits it), reads hub's key
	// file and both files, commits what it read (the secrets in the commit
	// message too), reports it as progress,
	// asks with it, and ends with the private key as its last words.
	exec := `set -e
OUT="${HUB_TASK#read }"
env > env.txt
env
cat "$XDG_CONFIG_HOME/hub/env"
cat "$OUT"
cat "$OUT" .env > leaked.txt
git add leaked.txt && git commit -q -m "leak: $(head -c 300 .env | tr '\n' ' ')"
hub progress - < "$OUT"
hub progress "the repo's .env: $(cat .env)"
ans=$(hub ask --context "$(cat .env)" "Which of these? $(cat "$OUT")")
printf '%s\n' "$ans" > answer.txt
cat "$OUT"
cat .env`
	verify := `cat leaked.txt; cat "$XDG_CONFIG_HOME/hub/env"; cat .env`
	r := hubtest.Daemon(t, cl).JobStart(ctx, protocol.StartParams{Task: "read " + outside, Repo: repo,
		Engine: "exec", Exec: exec, Verify: verify})
	asking := w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State == protocol.StateNeedsInput })
	if asking.Question == nil || !strings.Contains(asking.Question.Text, "[REDACTED]") {
		t.Fatalf("the question should hold redacted secrets: %+v", asking.Question)
	}
	c.check(t, "job/status while asking", asking)
	c.check(t, "job/status (called) while asking", hubtest.Daemon(t, cl).JobStatus(ctx, protocol.IDParams{ID: r.ID}))
	hubtest.Daemon(t, cl).JobReply(ctx, protocol.ReplyParams{ID: r.ID, Text: "the first"})
	st := w.until(ctx, r.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() })
	if st.State != protocol.StateSucceeded {
		t.Fatalf("job ended %s: %s", st.State, st.Error)
	}

	// A second job fails with the secrets in its last words.
	r2 := hubtest.Daemon(t, cl).JobStart(ctx, protocol.StartParams{Task: "read " + outside, Repo: repo,
		Engine: "exec", Exec: `cat "${HUB_TASK#read }" >&2; cat .env; exit 3`})
	if st2 := w.until(ctx, r2.ID, func(s protocol.JobStatus) bool { return s.State.Terminal() }); st2.State != protocol.StateFailed {
		t.Fatalf("job 2 ended %s, want failed", st2.State)
	}

	// The canaries did flow: the worker read them and committed them (the
	// branch is the repository's content, not something hub stores) ...
	branch := hubtest.Git(t, repo, "show", "hub/"+r.ID+":leaked.txt")
	if found := c.find([]byte(branch)); len(found) != len(c) {
		t.Fatalf("leaked.txt on the branch holds %d of %d canaries (%v): the worker did not read them all", len(found), len(c), found)
	}
	// ... but never through its environment.
	workerEnv := hubtest.Git(t, repo, "show", "hub/"+r.ID+":env.txt")
	if !strings.Contains(workerEnv, "HUB_JOB="+r.ID) {
		t.Fatalf("env.txt is not the worker's environment:\n%s", workerEnv)
	}
	c.check(t, "the worker's environment", workerEnv)
	for _, name := range []string{"OPENAI_API_KEY", "MY_SERVICE_TOKEN", "GW_CRED", "ANTHROPIC_API_KEY"} {
		if strings.Contains(workerEnv, name+"=") {
			t.Errorf("the worker's environment has %s", name)
		}
	}

	// Everything hub returns.
	w.mu.Lock()
	c.check(t, "question notifications", w.notices)
	w.mu.Unlock()
	for _, id := range []string{r.ID, r2.ID} {
		c.check(t, "job/status "+id, hubtest.Daemon(t, cl).JobStatus(ctx, protocol.IDParams{ID: id}))
		c.check(t, "job/result "+id, hubtest.Daemon(t, cl).JobResult(ctx, protocol.ResultParams{ID: id}))
		full := hubtest.Daemon(t, cl).JobResult(ctx, protocol.ResultParams{ID: id, Full: true, Evidence: true})
		c.check(t, "job/result --full --evidence "+id, full)
		if id == r.ID {
			ev := full.Evidence
			if ev == nil || ev.Verify == nil || !strings.Contains(ev.Verify.OutputTail, "[REDACTED]") ||
				!strings.Contains(ev.Claimed.Report, "[REDACTED]") || len(ev.Claimed.Progress) != 2 {
				t.Errorf("the evidence should hold the redacted verify output, summary and two notes: %+v", ev)
			}
		}
		c.check(t, "job/events "+id, hubtest.Daemon(t, cl).JobEvents(ctx, protocol.EventsParams{ID: id}))
		c.check(t, "job/files "+id, hubtest.Daemon(t, cl).JobFiles(ctx, protocol.FilesParams{ID: id}))
	}
	c.check(t, "job/events (all)", hubtest.Daemon(t, cl).JobEvents(ctx, protocol.EventsParams{}))
	for _, f := range []struct{ rev, path string }{{"base", ".env"}, {"head", ".env"}, {"head", "leaked.txt"}, {"head", "env.txt"}, {"head", "answer.txt"}} {
		got := hubtest.Daemon(t, cl).JobFile(ctx, protocol.FileParams{ID: r.ID, Rev: f.rev, Path: f.path})
		if !got.Exists {
			t.Errorf("job/file %s %s does not exist", f.rev, f.path)
		}
		if f.path == "leaked.txt" && strings.Count(got.Content, "[REDACTED]") < len(c)-6 {
			t.Errorf("job/file head leaked.txt should show the secrets redacted:\n%s", got.Content)
		}
		c.check(t, "job/file "+f.rev+" "+f.path, got)
	}

	// The store's tables, read directly, while the daemon runs.
	dumpStore(t, c, w.paths.DB())
	// Every file under HUB_HOME but the worktrees (the user's checkout).
	scanTree(t, c, w.paths.Home, w.paths.WorktreesDir())

	// Then with the worktrees gone and every process that holds the store
	// ended (the last one out checkpoints the WAL): every byte.
	for _, id := range []string{r.ID, r2.ID} {
		hubtest.Daemon(t, cl).JobCleanup(ctx, protocol.CleanupParams{ID: id})
		waitUnlocked(t, ctx, w.paths.ShimLock(id))
	}
	shutdownAndExit(t, ctx, cl)
	scanTree(t, c, w.paths.Home, "")
	if _, err := os.Stat(w.paths.DB()); err != nil {
		t.Fatalf("no store to scan: %v", err)
	}
}

// dumpStore reads every row of every table and looks for canaries in each value.
func dumpStore(t *testing.T, c canaries, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if !slices.Contains(tables, "events") {
		t.Fatalf("no events table among %v", tables)
	}
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		n := 0
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				var b []byte
				switch v := v.(type) {
				case string:
					b = []byte(v)
				case []byte:
					b = v
				default:
					continue
				}
				if found := c.find(b); len(found) > 0 {
					t.Errorf("store table %s row %d column %s holds canaries %v: %s", table, n, cols[i], found, b)
				}
			}
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if table == "events" && n == 0 {
			t.Errorf("the events table is empty")
		}
	}
}

// scanTree looks for canaries in every regular file under root, byte for
// byte, except under skip.
func scanTree(t *testing.T, c canaries, root, skip string) {
	t.Helper()
	var scanned []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if skip != "" && p == skip {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		scanned = append(scanned, fmt.Sprintf("%s (%d bytes)", rel, len(b)))
		if found := c.find(b); len(found) > 0 {
			t.Errorf("HUB_HOME/%s holds canaries %v", rel, found)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scanned %d files under HUB_HOME: %s", len(scanned), strings.Join(scanned, ", "))
}

// waitUnlocked returns once nobody holds the lock at path: the process that
// did has ended.
func waitUnlocked(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	l := flock.New(path)
	ok, err := l.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("%s is still held: %v", path, err)
	}
	_ = l.Unlock()
}

// shutdownAndExit stops the daemon and waits until its process has exited
// (it gives its lock up before it closes the store, so the lock does not
// say the store is closed).
func shutdownAndExit(t *testing.T, ctx context.Context, cl *client.Client) {
	t.Helper()
	pid := cl.Info.PID
	shutdown(t, ctx, cl)
	if err := proc.WaitExit(ctx, pid, 30*time.Second); err != nil {
		t.Fatalf("the daemon: %v", err)
	}
}

// shutdown stops the daemon and waits until its connection closes.
func shutdown(t *testing.T, ctx context.Context, cl *client.Client) {
	t.Helper()
	_, _ = cl.Daemon().Shutdown(ctx, protocol.Empty{})
	select {
	case <-cl.DisconnectNotify():
	case <-ctx.Done():
		t.Fatal("the daemon did not go")
	}
}
