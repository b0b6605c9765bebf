package daemon

import (
	"context"
	"os"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/protocol"
)

// Capabilities the daemon offers, reported by initialize.
var capabilities = []string{protocol.CapJobs, protocol.CapWait, protocol.CapEvents, protocol.CapSubscribe,
	protocol.CapCancel, protocol.CapFiles, protocol.CapMerge, protocol.CapLand, protocol.CapSummary, protocol.CapQuestions, protocol.CapTrace}

// Initialize opens a session: the daemon's version, protocol and capabilities.
func (s *Server) Initialize(context.Context, protocol.InitializeParams) (*protocol.InitializeResult, error) {
	return &protocol.InitializeResult{ServerVersion: s.o.Version, ProtocolVersion: protocol.Version,
		PID: os.Getpid(), Home: s.o.Paths.Home, Capabilities: capabilities, Settings: config.EnvSettings()}, nil
}
