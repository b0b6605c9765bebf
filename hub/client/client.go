// Package client connects a front end (the CLI, `hub mcp`, a worker's
// `hub ask`) to the daemon, starting `hub serve` when none answers, as gopls
// does with -remote=auto. It must never start a second daemon for one
// HUB_HOME: the daemon's own lock decides, and losers just connect.
package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
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

// Client is a connection to the daemon.
type Client struct {
	*rpc.Conn
	Info protocol.InitializeResult
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
		// daemon dying as we dialled): start one; its lock keeps it single.
		if err := startDaemon(paths, o); err != nil {
			return nil, err
		}
		c, err = waitDial(ctx, paths, o)
	}
	if err != nil {
		return nil, err
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
	var je *jsonrpc2.Error
	if errors.As(err, &je) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // a daemon answered, or the caller gave up
	}
	return true
}

func dial(ctx context.Context, paths config.Paths, o Options) (*Client, error) {
	nc, err := rpc.Dial(ctx, paths.Socket())
	if err != nil {
		return nil, err
	}
	conn := rpc.NewConn(context.Background(), nc, o.Handler, nil)
	c := &Client{Conn: conn}
	name := o.ClientName
	if name == "" {
		name = "hub"
	}
	if err := conn.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ClientName: name, ProtocolVersion: protocol.Version}, &c.Info); err != nil {
		conn.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

func waitDial(ctx context.Context, paths config.Paths, o Options) (*Client, error) {
	limit := o.StartTimeout
	if limit == 0 {
		limit = 15 * time.Second
	}
	deadline := time.Now().Add(limit)
	delay := 2 * time.Millisecond
	for {
		c, err := dial(ctx, paths, o)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the hub daemon did not answer within %s (%v); see %s", limit, err, paths.DaemonLog())
		}
		// The daemon is starting; there is nothing to wait on but the socket.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

// startDaemon launches `hub serve` detached, logging to HUB_HOME/logs.
func startDaemon(paths config.Paths, o Options) error {
	if err := paths.Ensure(); err != nil {
		return err
	}
	bin := o.HubBinary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return err
		}
	}
	logf, err := os.OpenFile(paths.DaemonLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "HUB_HOME="+paths.Home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the hub daemon: %w", err)
	}
	go cmd.Wait() // reap it if it exits (it loses the race to another daemon, or stops)
	return nil
}

// Code returns the protocol error code of err, or 0.
func Code(err error) int64 {
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}
