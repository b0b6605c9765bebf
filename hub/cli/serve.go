package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/client"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/daemon"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/engine/acp"
	"github.com/hub-agents/hub/hub/engine/builtin"
	"github.com/hub-agents/hub/hub/engine/claude"
	"github.com/hub-agents/hub/hub/engine/codex"
	"github.com/hub-agents/hub/hub/engine/execengine"
	"github.com/hub-agents/hub/hub/engine/gemini"
	"github.com/hub-agents/hub/hub/engine/opencode"
	"github.com/hub-agents/hub/hub/engine/qwen"
	"github.com/hub-agents/hub/hub/mcpserver"
	"github.com/hub-agents/hub/hub/proc"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
	"github.com/hub-agents/hub/hub/shim"
	"github.com/hub-agents/hub/internal/atomicfile"
	"github.com/hub-agents/hub/internal/logfile"
)

// Engines is every engine this build of hub has, and the ACP agents the
// user defined in config.json (read when the daemon, or a job's shim,
// starts; a config.json that does not read adds none, and says why).
func Engines(log zerolog.Logger) *engine.Registry {
	dir := config.ConfigDir()
	all := []engine.Engine{builtin.New(builtin.Options{ConfigDir: dir, Log: log}), builtin.NewStep(builtin.Options{ConfigDir: dir, Log: log}), execengine.New(),
		claude.New(claude.Options{ConfigDir: dir}), codex.New(codex.Options{ConfigDir: dir}),
		opencode.New(opencode.Options{ConfigDir: dir}), gemini.New(dir), qwen.New(dir)}
	s, err := config.Load()
	if err != nil {
		log.Warn().Err(err).Msg("the agents of config.json are not available")
	}
	for name, a := range s.Agents {
		all = append(all, acp.New(name, acp.FromConfig(name, a), acp.Options{ConfigDir: dir}))
	}
	return engine.NewRegistry(all...)
}

// logger writes to stderr (never stdout: stdio protocols live there) and,
// when file is set, to it as JSON lines. Its level is the process's
// (HUB_LOG_LEVEL, --log-level).
func logger(stderr io.Writer, file io.Writer, component string) zerolog.Logger {
	zerolog.TimeFieldFormat = time.RFC3339Nano
	var w io.Writer = zerolog.ConsoleWriter{Out: stderr, TimeFormat: "15:04:05.000", NoColor: true}
	if file != nil {
		w = zerolog.MultiLevelWriter(w, file)
	}
	return zerolog.New(w).With().Timestamp().Int("pid", os.Getpid()).Str("component", component).Logger()
}

// ownLog is where a process hub started writes its log: stderr, which its
// starter pointed at path (the daemon's log, a job's shim log), kept to a
// size by rotating it. A process run by hand logs to its terminal as is.
func ownLog(stderr io.Writer, path string) io.Writer {
	if lf, err := logfile.Adopt(path, logfile.DefaultCap, 1, 2); err == nil && lf != nil {
		return lf
	}
	return stderr
}

// Log levels, as HUB_LOG_LEVEL and --log-level take them.
var logLevels = []string{"debug", "info", "warn", "error"}

// setLogLevel sets the process's log level from --log-level, else
// HUB_LOG_LEVEL, else info. A level given by flag is put in the
// environment too, so a daemon this command starts logs at it.
func setLogLevel(flag string) error {
	v, from := flag, "--log-level"
	if v == "" {
		v, from = os.Getenv("HUB_LOG_LEVEL"), "HUB_LOG_LEVEL"
	}
	if v == "" {
		zerolog.SetGlobalLevel(zerolog.InfoLevel)
		return nil
	}
	if !slices.Contains(logLevels, v) {
		return &usageError{&hintError{fmt.Errorf("%s %q is not a log level", from, v), "use one of " + strings.Join(logLevels, ", ")}}
	}
	l, _ := zerolog.ParseLevel(v)
	zerolog.SetGlobalLevel(l)
	if flag != "" {
		return os.Setenv("HUB_LOG_LEVEL", v)
	}
	return nil
}

func newServeCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the hub daemon for HUB_HOME (clients start it when needed)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if id := os.Getenv(client.JobEnv); id != "" {
				// A daemon started by a worker would run below the job's
				// shim, and die with the job.
				return fmt.Errorf("inside a hub job (%s=%s) hub does not start a daemon: start it from outside the job", client.JobEnv, id)
			}
			paths, err := config.Resolve()
			if err != nil {
				return err
			}
			if err := paths.Ensure(); err != nil {
				return err
			}
			log := logger(ownLog(ios.ErrOut, paths.DaemonLog()), nil, "daemon")
			err = daemon.Serve(cmd.Context(), daemon.Options{Paths: paths, Engines: Engines(log), Log: log, Version: Version})
			if errors.Is(err, daemon.ErrRunning) {
				fmt.Fprintf(ios.ErrOut, "hub: a daemon already serves %s\n", paths.Home)
				return nil
			}
			return err
		},
	}
}

func newShutdownCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "shutdown",
		Short: "Stop the daemon of HUB_HOME; running jobs go on in their shims, and the next command starts a new daemon",
		Long: `Stop the daemon of HUB_HOME. It lets the requests it took finish, refuses new ones
(clients send them again to the next daemon), and exits; shutdown returns once it
is gone, so the next command starts a new daemon. Running jobs go on in their shims.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := config.Resolve()
			if err != nil {
				return err
			}
			c, err := client.Connect(cmd.Context(), paths, client.Options{ClientName: "hub-cli"})
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || client.Code(err) == protocol.CodeShuttingDown {
				if ios.JSON {
					return ios.printJSON(shutdownResult{Home: paths.Home})
				}
				ios.printf("no daemon is running for %s\n", paths.Home)
				return nil
			}
			if err != nil {
				return err
			}
			defer c.Close()
			pid := c.Info.PID
			// The daemon may close the connection before its answer is out:
			// either way it is going, which is what was asked.
			if _, err := (protocol.DaemonClient{C: c.Conn}).Shutdown(cmd.Context(), protocol.Empty{}); err != nil &&
				!errors.Is(err, jsonrpc2.ErrClosed) && client.Code(err) != protocol.CodeShuttingDown {
				return err
			}
			// Return once it is gone (its lock with it), not when it said yes.
			if err := proc.WaitExit(cmd.Context(), pid, shutdownWait); err != nil {
				return fmt.Errorf("daemon %d was asked to stop but is still running after %s; see %s", pid, shutdownWait, paths.DaemonLog())
			}
			if ios.JSON {
				return ios.printJSON(shutdownResult{Home: paths.Home, Stopped: pid})
			}
			ios.printf("daemon %d stopped\n", pid)
			return nil
		},
	}
}

// shutdownResult is what `hub shutdown --json` prints.
type shutdownResult struct {
	Home    string `json:"home"`              // the HUB_HOME whose daemon was asked
	Stopped int    `json:"stopped,omitempty"` // the pid of the daemon that stopped; absent when none ran
}

// shutdownWait bounds how long shutdown waits for the daemon to exit: its
// drain of the requests in flight, and a little more.
const shutdownWait = 20 * time.Second

func newShimCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:    "shim ID",
		Short:  "Run one job (started by the daemon)",
		Hidden: true,
		Args:   exactArgs(1, "a job id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := config.Resolve()
			if err != nil {
				return err
			}
			log := logger(ownLog(ios.ErrOut, paths.ShimLog(args[0])), nil, "shim").With().Str("job", args[0]).Logger()
			err = shim.Run(cmd.Context(), shim.Options{Paths: paths, JobID: args[0], Engines: Engines(log), Log: log})
			if errors.Is(err, shim.ErrOwned) {
				return nil
			}
			return err
		},
	}
}

type mcpOptions struct {
	http  string
	token string
}

func newMCPCmd(ios *IO) *cobra.Command {
	o := &mcpOptions{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP on stdio for an agent client (or --http on loopback)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMCP(cmd.Context(), ios, o)
		},
	}
	cmd.Flags().StringVar(&o.http, "http", "", "serve streamable HTTP on this loopback address (e.g. 127.0.0.1:7410) instead of stdio")
	cmd.Flags().StringVar(&o.token, "token", "", "bearer token for --http (default: HUB_HOME/mcp-token, made on first use)")
	return cmd
}

func runMCP(ctx context.Context, ios *IO, o *mcpOptions) error {
	paths, err := config.Resolve()
	if err != nil {
		return err
	}
	if err := paths.Ensure(); err != nil {
		return err
	}
	var file io.Writer
	if lf, err := logfile.Open(paths.MCPLog(), logfile.DefaultCap); err == nil {
		defer lf.Close()
		file = lf
	}
	log := logger(ios.ErrOut, file, "mcp")
	// Notifications may arrive before the server exists: the pointer is set once it does.
	var srvp atomic.Pointer[mcpserver.Server]
	h := func(ctx context.Context, c *rpc.Conn, req *jsonrpc2.Request) (any, error) {
		if srv := srvp.Load(); req.Notif && srv != nil && req.Params != nil {
			srv.Notify(req.Method, json.RawMessage(*req.Params))
		}
		return nil, nil
	}
	c, err := client.NewSession(ctx, paths, client.Options{AutoStart: true, ClientName: "hub-mcp", Handler: h}, true)
	if err != nil {
		return err
	}
	defer c.Close()
	srv := mcpserver.New(c, mcpserver.Options{Version: Version, Logger: slog.New(zerolog.NewSlogHandler(log))})
	srvp.Store(srv)
	if o.http == "" {
		err := srv.MCP().Run(ctx, &mcp.StdioTransport{})
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	host, _, err := net.SplitHostPort(o.http)
	if err != nil {
		return &usageError{fmt.Errorf("--http %q: %v", o.http, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return &usageError{fmt.Errorf("--http must bind a loopback address (127.0.0.1, ::1 or localhost), not %q", host)}
	}
	token := o.token
	if token == "" {
		if token, err = loadToken(paths.MCPToken()); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return err
	}
	fmt.Fprintf(ios.ErrOut, "hub: MCP on http://%s/ (bearer token in %s)\n", ln.Addr(), paths.MCPToken())
	hs := newMCPHTTPServer(mcpserver.HTTPHandler(srv, token))
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// The timeouts of hub mcp --http's server. There is no WriteTimeout: a
// streamable-HTTP response (an SSE stream on GET, or on a POST whose tool
// call runs for many minutes) lives as long as it must, and a write
// deadline would cut it. Nor a ReadTimeout: ReadHeaderTimeout bounds what a
// request sends before its handler runs, and a deadline on its body would
// only fail a slow client's call.
const (
	// mcpReadHeaderTimeout bounds a request's headers.
	mcpReadHeaderTimeout = 10 * time.Second
	// mcpIdleTimeout closes a keep-alive connection left idle between
	// requests (after a 401 too); a client opens another when it needs one.
	mcpIdleTimeout = 60 * time.Second
)

// newMCPHTTPServer is the server of hub mcp --http, serving h.
func newMCPHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: mcpReadHeaderTimeout, IdleTimeout: mcpIdleTimeout}
}

// loadToken reads the bearer token, making a random one (mode 0600) when absent.
func loadToken(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	}
	var r [24]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	t := hex.EncodeToString(r[:])
	return t, atomicfile.Write(path, []byte(t+"\n"), 0o600)
}
