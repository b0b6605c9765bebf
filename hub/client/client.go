// Package client connects a front end (the CLI, `hub mcp`, a worker's
// `hub ask`) to the daemon, starting `hub serve` when none answers, as gopls
// does with -remote=auto. It must never start a second daemon for one
// HUB_HOME: the daemon's own lock decides, and losers just connect.
package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/internal/pgroup"
)

// JobEnv names the variable that is set inside a hub job (its id): a
// worker's commands run with it, and then a client never starts a daemon.
const JobEnv = "HUB_JOB"

// ErrNoDaemonInJob means no daemon answered a client running inside a hub
// job, where it does not start one.
var ErrNoDaemonInJob = errors.New("no hub daemon answers, and inside a hub job hub does not start one")

// Options for Connect.
type Options struct {
	// AutoStart starts `hub serve` when no daemon answers, except inside a
	// hub job (JobEnv is set): a worker's `hub` reaches the daemon of its
	// HUB_HOME, or fails; it never starts a stray daemon of its own.
	AutoStart bool
	// HubBinary runs the daemon; default os.Executable.
	HubBinary string
	// ClientName is reported in initialize.
	ClientName string
	// Handler receives notifications (nil: ignored).
	Handler rpc.Handler
	// StartTimeout bounds how long to wait for a started daemon (default 15s).
	StartTimeout time.Duration
}

// Client is a connection to the daemon. Its Call sends a request again on a
// new connection (a new daemon, started if need be) when the daemon was
// shutting down and did not act on it, or when a read-only request was cut
// off; everything else about the connection is the *rpc.Conn's.
type Client struct {
	*rpc.Conn
	Info protocol.InitializeResult

	paths config.Paths
	o     Options
	// noRetry: a Client that subscribed does not send calls again on a
	// new connection, where its subscription would not be (a Session
	// sends again itself, and resubscribes).
	noRetry bool
}

// handOver bounds how long Call keeps sending a request again while
// daemons hand over.
const handOver = 20 * time.Second

// Call makes one call, sending it again while a daemon hands over (see
// Client). A subscription does not move to the new connection, so a
// Client that subscribed does not retry.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if method == protocol.MethodSubscribe {
		c.noRetry = true
	}
	return sendAgain(ctx, c.paths, method, func() error { return c.Conn.Call(ctx, method, params, result) }, func() error {
		if c.noRetry {
			return errNoRetry
		}
		nc, err := Connect(ctx, c.paths, c.o)
		if err != nil {
			return err
		}
		c.Conn.Close()
		c.Conn, c.Info = nc.Conn, nc.Info
		return nil
	})
}

// Daemon is the daemon's typed client over c: its calls are c's, sent
// again as Call sends them.
func (c *Client) Daemon() protocol.DaemonClient { return protocol.DaemonClient{C: c} }

// errNoRetry is a reconnect that may not be made: sendAgain returns the
// call's own error.
var errNoRetry = errors.New("no retry")

// sendAgain makes a call with send and, while Again says it may be sent
// again, connects anew with reconnect and sends it again, for up to
// handOver. The error it returns says what to do (explain).
func sendAgain(ctx context.Context, paths config.Paths, method string, send, reconnect func() error) error {
	deadline := time.Now().Add(handOver)
	for {
		err := send()
		if !Again(method, err) || time.Now().After(deadline) || ctx.Err() != nil {
			return explain(paths, method, err)
		}
		if rerr := reconnect(); errors.Is(rerr, errNoRetry) {
			return explain(paths, method, err)
		} else if rerr != nil {
			return rerr
		}
	}
}

// Again reports whether a call of method that failed with err may be sent
// again on a new connection: it never left, the daemon refused it while
// shutting down (having done nothing), or it changes nothing and was cut off.
func Again(method string, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, rpc.ErrNotSent), errors.Is(err, rpc.ErrDropped), Code(err) == protocol.CodeShuttingDown:
		return true
	}
	return readOnly(method) && errors.Is(err, jsonrpc2.ErrClosed)
}

// readOnly reports whether method, a request to the daemon, changes
// nothing (its Spec says so): safe to send again whatever happened to the
// first attempt.
func readOnly(method string) bool {
	sp, ok := protocol.SpecOf(method)
	return ok && sp.ReadOnly && sp.To == protocol.PartyDaemon && !sp.Notification
}

// CutOffError is a request the daemon's connection closed under before it
// answered: whether it took effect is not known.
type CutOffError struct {
	Method string
	Log    string
	Err    error
}

func (e *CutOffError) Error() string {
	return fmt.Sprintf("the hub daemon's connection closed before it answered %s (it stopped or died): %v", e.Method, e.Err)
}

func (e *CutOffError) Unwrap() error { return e.Err }

// Hint says how to find out what happened.
func (e *CutOffError) Hint() string {
	return "check whether it took effect (hub jobs), then run the command again if it did not; the daemon's log: " + e.Log
}

// explain gives a cut-off call an error that says what to do.
func explain(paths config.Paths, method string, err error) error {
	if err != nil && Code(err) == 0 && errors.Is(err, jsonrpc2.ErrClosed) && !errors.Is(err, rpc.ErrDropped) {
		return &CutOffError{Method: method, Log: paths.DaemonLog(), Err: err}
	}
	return err
}

// Connect dials the daemon of paths, starting it if asked and needed, and
// runs initialize.
func Connect(ctx context.Context, paths config.Paths, o Options) (*Client, error) {
	c, err := dial(ctx, paths, o)
	if err != nil && o.AutoStart && daemonAbsent(err) {
		if id := os.Getenv(JobEnv); id != "" {
			return nil, inJob(paths, id, err)
		}
		// Nothing answers, or what answered went away mid-handshake (a
		// daemon dying as we dialled), or is shutting down: start one; its
		// lock keeps it single, and it waits for the old one to let go.
		d, serr := startDaemon(paths, o)
		if serr != nil {
			return nil, serr
		}
		c, err = waitDial(ctx, paths, o, d)
	}
	if err != nil {
		return nil, unreachable(paths, err)
	}
	return c, nil
}

// inJob is the error of a client inside job id that found no daemon.
func inJob(paths config.Paths, id string, err error) error {
	return fmt.Errorf("%w (%s=%s; %v). Inside a sandboxed job the daemon's socket is out of reach: "+
		"`hub ask` and `hub progress` work there, through HUB_SOCKET. Otherwise HUB_HOME (%s) is not the home of the daemon that runs this job, "+
		"or that daemon has stopped: start it from outside the job (`hub serve`, or any hub command there)",
		ErrNoDaemonInJob, JobEnv, id, err, paths.Home)
}

func daemonAbsent(err error) bool {
	if Code(err) == protocol.CodeShuttingDown {
		return true // it is going: the next one answers
	}
	var je *jsonrpc2.Error
	if errors.As(err, &je) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // a daemon answered, or the caller gave up
	}
	return true
}

// UnreachableError is a daemon that could not be reached (and, when the
// client starts daemons, could not be started).
type UnreachableError struct {
	Home string
	Log  string
	Err  error
}

func (e *UnreachableError) Error() string {
	var started *DaemonStartError
	if errors.As(e.Err, &started) {
		return started.Error() // it says it all: the daemon said why it could not start
	}
	return fmt.Sprintf("cannot reach the hub daemon of %s: %v", e.Home, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Hint says what to do about it, by cause.
func (e *UnreachableError) Hint() string {
	if h := rpc.HintOf(e.Err); h != "" {
		return h
	}
	switch {
	case errors.Is(e.Err, fs.ErrNotExist), errors.Is(e.Err, syscall.ECONNREFUSED):
		return "no daemon runs for this HUB_HOME: any hub command that needs one starts it (hub jobs), or run hub serve to see it start"
	case errors.Is(e.Err, fs.ErrPermission):
		return "the socket belongs to another user or is not readable: check HUB_HOME (" + e.Home + ") and its owner"
	}
	return "run hub serve to see why the daemon does not start; its log: " + e.Log
}

// unreachable wraps a connection error with its hint, leaving protocol
// errors (the daemon answered) and the caller's own cancellation alone.
func unreachable(paths config.Paths, err error) error {
	var je *jsonrpc2.Error
	var ue *UnreachableError
	if errors.As(err, &je) || errors.As(err, &ue) || errors.Is(err, ErrNoDaemonInJob) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &UnreachableError{Home: paths.Home, Log: paths.DaemonLog(), Err: err}
}

func dial(ctx context.Context, paths config.Paths, o Options) (*Client, error) {
	nc, err := rpc.Dial(ctx, paths.Socket())
	if err != nil {
		return nil, err
	}
	conn := rpc.NewConn(context.Background(), nc, o.Handler, nil)
	c := &Client{Conn: conn, paths: paths, o: o}
	name := o.ClientName
	if name == "" {
		name = "hub"
	}
	info, err := protocol.DaemonClient{C: conn}.Initialize(ctx, protocol.InitializeParams{ClientName: name, ProtocolVersion: protocol.Version})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	c.Info = *info
	return c, nil
}

// waitDial waits for the daemon d was started to answer, or for another
// daemon to (d lost the race for the lock to it); it gives up at once when
// d exited with an error, saying what d said. When d lost the race and the
// daemon it lost to is gone too (it was shutting down), it starts another:
// a client waits out any number of hand-overs, up to its limit.
func waitDial(ctx context.Context, paths config.Paths, o Options, d *started) (*Client, error) {
	limit := o.StartTimeout
	if limit == 0 {
		limit = 15 * time.Second
	}
	deadline := time.Now().Add(limit)
	delay := 2 * time.Millisecond
	lost := false // d exited because another daemon held the lock
	for {
		c, err := dial(ctx, paths, o)
		if err == nil {
			return c, nil
		}
		if Code(err) != 0 && Code(err) != protocol.CodeShuttingDown {
			return nil, err // a daemon answered, with an error of its own
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the hub daemon did not answer within %s (%v); see %s", limit, err, paths.DaemonLog())
		}
		if lost {
			// Nobody of ours is starting, and nobody answers: the daemon d
			// lost to has gone since. Start one again.
			if d, err = startDaemon(paths, o); err != nil {
				return nil, err
			}
			lost = false
		}
		// The daemon is starting; there is nothing to wait on but the
		// socket, and the process we started.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-d.exited:
			if d.err != nil {
				// It may have lost to a daemon that is serving by now.
				if c, err := dial(ctx, paths, o); err == nil {
					return c, nil
				}
				return nil, d.failure()
			}
			// It found a daemon serving (or starting): dial that one, and
			// start another if it is gone by then.
			lost = true
		case <-time.After(delay):
		}
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

// started is a `hub serve` this client started.
type started struct {
	exited chan struct{} // closed when it exited
	err    error         // its exit error, set before exited is closed
	log    string        // where it writes
	offset int64         // the log's size when it started: its own lines follow
}

// DaemonStartError is a daemon that exited as it started, with what it said.
type DaemonStartError struct {
	Said   []string // its error lines ("hub: …"), from the daemon log
	Advice string   // its hint line, if it gave one
	Log    string
	Err    error
}

func (e *DaemonStartError) Error() string {
	if len(e.Said) == 0 {
		return fmt.Sprintf("the hub daemon exited as it started (%v); see %s", e.Err, e.Log)
	}
	return "the hub daemon could not start: " + strings.Join(e.Said, "; ")
}

func (e *DaemonStartError) Unwrap() error { return e.Err }

// Hint passes on the daemon's own hint, else points at its log.
func (e *DaemonStartError) Hint() string {
	if e.Advice != "" {
		return e.Advice
	}
	return "run hub serve to see it start in the foreground; its log: " + e.Log
}

// failure reads what the daemon wrote before it exited.
func (d *started) failure() error {
	e := &DaemonStartError{Log: d.log, Err: d.err}
	f, err := os.Open(d.log)
	if err != nil {
		return e
	}
	defer f.Close()
	from := d.offset
	if fi, err := f.Stat(); err == nil && fi.Size() < from {
		from = 0 // the log rotated (logfile) since: its lines start the new one
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, from, 1<<20))
	for _, line := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(line, "hub: "); ok {
			e.Said = append(e.Said, m)
		} else if h, ok := strings.CutPrefix(line, "hint: "); ok {
			e.Advice = h
		}
	}
	return e
}

// startDaemon launches `hub serve` detached, logging to HUB_HOME/logs.
func startDaemon(paths config.Paths, o Options) (*started, error) {
	if err := paths.Ensure(); err != nil {
		return nil, err
	}
	bin := o.HubBinary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	logf, err := os.OpenFile(paths.DaemonLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	d := &started{exited: make(chan struct{}), log: paths.DaemonLog()}
	if fi, err := logf.Stat(); err == nil {
		d.offset = fi.Size()
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "HUB_HOME="+paths.Home)
	cmd.Stdout, cmd.Stderr = logf, logf
	pgroup.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the hub daemon: %w", err)
	}
	go func() {
		// Reap it if it exits (it loses the race to another daemon, or
		// cannot start), and say so to the one waiting on it.
		d.err = cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

// Code returns the protocol error code of err, or 0.
func Code(err error) int64 {
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}
