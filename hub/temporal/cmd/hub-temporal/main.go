// Command hub-temporal is hub with its Temporal runner: `relay <id>` (what
// the hub daemon starts for a job on a remote queue), `worker` (what a
// worker machine runs), `health <queue>` (the queue's live workers, for
// the hub's router) and `dev-server` (a Temporal server on SQLite, to try
// it on one machine); every other command is hub's own.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/hub-agents/hub/hub/cli"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/temporal"
	"github.com/hub-agents/hub/hub/temporal/devserver"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "relay":
			os.Exit(relay(os.Args[2:]))
		case "worker":
			os.Exit(work(os.Args[2:]))
		case "dev-server":
			os.Exit(devServer(os.Args[2:]))
		case "health":
			os.Exit(health(os.Args[2:]))
		}
	}
	os.Exit(cli.Main(os.Args[1:]))
}

func logger() zerolog.Logger {
	zerolog.TimeFieldFormat = time.RFC3339Nano
	lvl, err := zerolog.ParseLevel(os.Getenv("HUB_LOG_LEVEL"))
	if err != nil || os.Getenv("HUB_LOG_LEVEL") == "" {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000", NoColor: true}).
		Level(lvl).With().Timestamp().Int("pid", os.Getpid()).Logger()
}

func relay(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: hub-temporal relay <job id> (the hub daemon runs it for a job on a remote queue)")
		return 2
	}
	paths, err := config.Resolve()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hub-temporal:", err)
		return 1
	}
	log := logger().With().Str("component", "relay").Str("job", args[0]).Logger()
	r := &temporal.Relay{Paths: paths, JobID: args[0], Log: log}
	if err := r.Run(context.Background()); err != nil {
		log.Error().Err(err).Msg("relay")
		return 1
	}
	return 0
}

func work(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	var q config.Queue
	var name, identity string
	fs.StringVar(&q.Address, "temporal", "", "the Temporal frontend, host:port (required)")
	fs.StringVar(&q.Namespace, "namespace", "default", "the Temporal namespace")
	fs.StringVar(&name, "queue", "", "the task queue to take jobs from (required): a queue's task_queue, or its name")
	fs.IntVar(&q.Slots, "slots", config.QueueSlots, "how many jobs this worker runs at once")
	every := fs.Duration("checkpoint-every", 30*time.Second, "how often a running job's work is pushed to the remote as a checkpoint")
	fs.StringVar(&identity, "identity", "", "who this worker is, in the jobs' evidence (default host:pid)")
	fs.StringVar(&q.TLSCert, "tls-cert", "", "a client certificate for Temporal")
	fs.StringVar(&q.TLSKey, "tls-key", "", "its key")
	fs.StringVar(&q.TLSCA, "tls-ca", "", "the CA to check Temporal's certificate with")
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if q.Address == "" || name == "" {
		fmt.Fprintln(os.Stderr, "hub-temporal worker: pass --temporal host:port and --queue NAME")
		return 2
	}
	if q.Slots < 1 {
		fmt.Fprintln(os.Stderr, "hub-temporal worker: --slots must be at least 1")
		return 2
	}
	if identity == "" {
		host, _ := os.Hostname()
		identity = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	paths, err := config.Resolve()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hub-temporal:", err)
		return 1
	}
	log := logger().With().Str("component", "worker").Str("worker", identity).Logger()
	c, err := temporal.Dial(q, identity, log)
	if err != nil {
		log.Error().Err(err).Msg("worker")
		return 1
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *every < time.Second {
		fmt.Fprintln(os.Stderr, "hub-temporal worker: --checkpoint-every must be at least 1s")
		return 2
	}
	w := &temporal.Worker{Paths: paths, Client: c, Engines: cli.Engines(log), Identity: identity, Log: log, CheckpointEvery: *every}
	if err := w.Serve(ctx, name, q.Slots); err != nil {
		log.Error().Err(err).Msg("worker")
		return 1
	}
	return 0
}

func devServer(args []string) int {
	fs := flag.NewFlagSet("dev-server", flag.ContinueOnError)
	db := fs.String("db", "", "the SQLite file it keeps its workflows in (default: in memory, gone when it stops)")
	port := fs.Int("port", 7233, "the frontend's port on 127.0.0.1")
	ns := fs.String("namespace", "default", "the namespace to make")
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := logger().With().Str("component", "dev-server").Logger()
	srv, err := devserver.Start(devserver.Options{DB: *db, Port: *port, Namespaces: []string{*ns}})
	if err != nil {
		log.Error().Err(err).Msg("dev server")
		return 1
	}
	log.Info().Str("address", srv.Address()).Str("namespace", *ns).Str("db", *db).Msg("Temporal dev server ready")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	if err := srv.Stop(); err != nil {
		log.Error().Err(err).Msg("stop")
		return 1
	}
	return 0
}

// health prints a queue's health as one JSON object (temporal.Health), for
// the hub daemon's router; exit 1 when it cannot be read.
func health(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: hub-temporal health <queue> (a queue of config.json)")
		return 2
	}
	out := func(h temporal.Health) int {
		b, _ := json.Marshal(h)
		fmt.Println(string(b))
		if h.Error != "" {
			return 1
		}
		return 0
	}
	set, err := config.Load()
	if err != nil {
		return out(temporal.Health{Error: err.Error()})
	}
	q, ok := set.Queues[args[0]]
	if !ok {
		return out(temporal.Health{Error: fmt.Sprintf("there is no queue %q in config.json", args[0])})
	}
	q = q.Defaulted(args[0])
	log := logger().Level(zerolog.WarnLevel)
	c, err := temporal.Dial(q, "hub-health", log)
	if err != nil {
		return out(temporal.Health{Error: err.Error()})
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return out(temporal.QueueHealth(ctx, c, q.TaskQueue))
}
