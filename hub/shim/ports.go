package shim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/protocol"
)

// A job's port range: PortCount consecutive ports from a block of the
// range [portLow, portLow+portBlocks*PortCount), which no other live job
// of this HUB_HOME holds and nothing listened on when the job took it, so
// parallel jobs' dev servers and test databases do not collide. The shim
// holds the block's lock file for its life: the range is free again the
// moment the shim exits or dies.
const (
	PortCount  = 10
	portLow    = 20000
	portBlocks = 1000 // 20000–29999
)

// ports is a range a job holds.
type ports struct {
	first int
	lock  *flock.Flock
}

// env is what a job's processes are told of their range: HUB_PORT (the
// first port), HUB_PORTS (first-last), and PORT (the Conductor convention;
// a worker never inherits a PORT of the user's, so it is always hub's).
func (p *ports) env() []string {
	if p == nil {
		return nil
	}
	f := strconv.Itoa(p.first)
	return []string{"HUB_PORT=" + f, "HUB_PORTS=" + f + "-" + strconv.Itoa(p.first+PortCount-1), "PORT=" + f}
}

// release lets the range go (the shim's exit does too).
func (p *ports) release() {
	if p != nil {
		_ = p.lock.Unlock()
	}
}

// errNoPorts means every block is held or in use.
var errNoPorts = errors.New("no port range is free")

// reservePorts takes a free block for job id, starting from one derived
// from its id so that jobs spread out and a job that restarts tends to get
// its range again.
func reservePorts(paths config.Paths, id string) (*ports, error) {
	dir := paths.PortsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	start := int(h.Sum32() % portBlocks)
	for i := range portBlocks {
		first := portLow + ((start+i)%portBlocks)*PortCount
		lock := flock.New(filepath.Join(dir, strconv.Itoa(first)+".lock"))
		ok, err := lock.TryLock()
		if err != nil {
			return nil, fmt.Errorf("port range %d: %w", first, err)
		}
		if !ok {
			continue // another job's
		}
		if bindable(first, PortCount) {
			return &ports{first: first, lock: lock}, nil
		}
		_ = lock.Unlock() // something else listens there
	}
	return nil, errNoPorts
}

// bindable reports whether each of n ports from first can be listened on,
// on loopback, now.
func bindable(first, n int) bool {
	for p := first; p < first+n; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// cacheDir is the job's tools' cache folder at the isolated levels ("" at
// the others, where the user's own caches stay shared and warm).
func (s *core) cacheDir() string {
	if !engine.Sandboxed(s.params.Isolation) {
		return ""
	}
	return s.o.Paths.JobCache(s.job.ID)
}

// ownEnv is what a job's worker and verify get of their own: its port
// range (taken at the first ask and held until the shim exits) and a
// TMPDIR (a sandbox gives them its own /tmp instead, and says so last).
// A job for which no range is free runs without one, and the journal
// says so.
func (s *core) ownEnv(ctx context.Context) []string { return s.envFor(ctx, s.cacheDir()) }

// envFor is ownEnv with the tools' caches in cacheDir ("": the user's own).
func (s *core) envFor(ctx context.Context, cacheDir string) []string {
	s.portsMu.Lock()
	if !s.portsAsked {
		s.portsAsked = true
		p, err := reservePorts(s.o.Paths, s.job.ID)
		if err != nil {
			s.record(ctx, protocol.EventNote, "no port range for this job ("+err.Error()+"): HUB_PORT and PORT are not set", nil)
		}
		s.ports = p
	}
	env := s.ports.env()
	s.portsMu.Unlock()
	tmp := s.o.Paths.JobTmp(s.job.ID)
	if err := os.MkdirAll(tmp, 0o700); err == nil {
		env = append(env, "TMPDIR="+tmp)
	}
	if c := cacheDir; c != "" {
		// A sandbox hides the user's caches: the job's own, shared by its
		// setup, worker and verify, so what setup downloaded is there.
		env = append(env, "GOMODCACHE="+filepath.Join(c, "go", "mod"), "GOCACHE="+filepath.Join(c, "go", "build"),
			"NPM_CONFIG_CACHE="+filepath.Join(c, "npm"), "PIP_CACHE_DIR="+filepath.Join(c, "pip"))
	}
	return env
}
