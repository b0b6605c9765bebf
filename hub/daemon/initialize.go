package daemon

import (
	"context"
	"os"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
)

// Capabilities the daemon offers, reported by initialize.
var capabilities = []string{protocol.CapJobs, protocol.CapWait, protocol.CapEvents, protocol.CapSubscribe,
	protocol.CapCancel, protocol.CapFiles, protocol.CapMerge, protocol.CapSummary, protocol.CapQuestions}

func (s *Server) initialize(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	var p protocol.InitializeParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	return protocol.InitializeResult{ServerVersion: s.o.Version, ProtocolVersion: protocol.Version,
		PID: os.Getpid(), Home: s.o.Paths.Home, Capabilities: capabilities, Settings: config.EnvSettings()}, nil
}
