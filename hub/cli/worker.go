package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/mcpserver"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// workerConn connects a worker to its job's shim (HUB_SOCKET, HUB_JOB).
func workerConn(ctx context.Context) (*rpc.Conn, string, error) {
	sock, id := os.Getenv("HUB_SOCKET"), os.Getenv("HUB_JOB")
	if sock == "" || id == "" {
		return nil, "", &usageError{fmt.Errorf("HUB_SOCKET and HUB_JOB are not set: this command runs inside a hub job")}
	}
	nc, err := rpc.Dial(ctx, sock)
	if err != nil {
		return nil, "", fmt.Errorf("cannot reach the job's shim at %s: %w", sock, err)
	}
	return rpc.NewConn(ctx, nc, nil, nil), id, nil
}

func newAskCmd(ios *IO) *cobra.Command {
	var context_, kind string
	cmd := &cobra.Command{
		Use:   "ask QUESTION",
		Short: "Inside a job: ask the supervisor and print the answer (blocks until reply or ask timeout)",
		Args:  exactArgs(1, "the question"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := workerConn(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := protocol.ShimClient{C: c}.WorkerAsk(cmd.Context(), protocol.AskParams{Job: id, Question: args[0], Context: context_, Kind: kind})
			if err != nil {
				return err
			}
			if ios.JSON {
				return ios.printJSON(res)
			}
			if res.TimedOut {
				fmt.Fprintln(ios.ErrOut, res.Instruction)
				return withCode(ExitPending, nil)
			}
			ios.printf("%s\n", res.Answer)
			return nil
		},
	}
	cmd.Flags().StringVar(&context_, "context", "", "what the supervisor needs to know to answer")
	cmd.Flags().StringVar(&kind, "kind", "question", "question or blocker")
	return cmd
}

func newProgressCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "progress NOTE",
		Short: "Inside a job: report progress; prints steering from the supervisor, if any",
		Args:  exactArgs(1, "the note (- reads stdin)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			note := args[0]
			if note == "-" {
				b, err := readAll(ios.In)
				if err != nil {
					return err
				}
				note = string(b)
			}
			c, id, err := workerConn(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := protocol.ShimClient{C: c}.WorkerProgress(cmd.Context(), protocol.ProgressParams{Job: id, Note: note})
			if err != nil {
				return err
			}
			if ios.JSON {
				return ios.printJSON(res)
			}
			for _, s := range res.Steer {
				ios.printf("SUPERVISOR STEERING (overrides earlier guidance): %s\n", s)
			}
			return nil
		},
	}
}

func readAll(r io.Reader) ([]byte, error) {
	const max = 16 << 20
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("input is larger than 16 MiB")
	}
	return b, nil
}

func newWorkerMCPCmd(ios *IO) *cobra.Command {
	return &cobra.Command{
		Use:    "worker-mcp",
		Short:  "Inside a job: the MCP server an agent CLI worker asks its supervisor through (stdio)",
		Hidden: true,
		Args:   exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sock, id := os.Getenv("HUB_SOCKET"), os.Getenv("HUB_JOB")
			if sock == "" || id == "" {
				return &usageError{fmt.Errorf("HUB_SOCKET and HUB_JOB are not set: this command runs inside a hub job")}
			}
			sh := &shimLine{sock: sock}
			defer sh.Close()
			srv := mcpserver.NewWorker(sh, id, mcpserver.Options{Version: Version,
				Logger: slog.New(zerolog.NewSlogHandler(logger(ios.ErrOut, nil, "worker-mcp")))})
			err := srv.Run(cmd.Context(), &mcp.StdioTransport{})
			if cmd.Context().Err() != nil {
				return nil
			}
			return err
		},
	}
}

// shimLine is a connection to the job's shim that dials again after a loss.
type shimLine struct {
	sock string
	mu   sync.Mutex
	c    *rpc.Conn
}

func (s *shimLine) conn(ctx context.Context) (*rpc.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		select {
		case <-s.c.DisconnectNotify():
			s.c = nil
		default:
			return s.c, nil
		}
	}
	nc, err := rpc.Dial(ctx, s.sock)
	if err != nil {
		return nil, err
	}
	s.c = rpc.NewConn(context.Background(), nc, nil, nil)
	return s.c, nil
}

func (s *shimLine) Call(ctx context.Context, method string, params, result any) error {
	c, err := s.conn(ctx)
	if err != nil {
		return err
	}
	err = c.Call(ctx, method, params, result)
	if errors.Is(err, rpc.ErrNotSent) {
		c.Close()
		if c, err = s.conn(ctx); err != nil {
			return err
		}
		return c.Call(ctx, method, params, result)
	}
	return err
}

func (s *shimLine) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		return s.c.Close()
	}
	return nil
}
