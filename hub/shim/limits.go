package shim

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/limit"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/sandbox"
)

// A job at isolated or untrusted runs every command in hub's sandbox, and
// every one of them joins the job's limits (hub/limit) before it runs: a
// cap on its processes and memory together (a cgroup, where hub can make
// one; rlimits otherwise), no file larger than its disk cap (RLIMIT_FSIZE),
// and its folders' use of the disk, which the shim checks every
// diskEvery. A job that hits one is stopped and ends failed, category
// limit, naming it;
// the daemon and other jobs go on. Its TCP ports are fenced the same way
// (sandbox.Spec.Ports): at isolated it can bind only its own range.

// How often a sandboxed job's limits are read (hitEvery: two small files)
// and its use of the disk measured (diskEvery: a walk of its folders).
const (
	hitEvery  = time.Second
	diskEvery = 5 * time.Second
)

// jobLimits are the job's limits: its own, else (a job stored before it
// had any) the defaults.
func (s *core) jobLimits() protocol.Limits {
	if s.params.Limits != nil {
		return *s.params.Limits
	}
	d := config.Defaults()
	return protocol.Limits{Processes: d.LimitProcesses, MemoryMB: d.LimitMemoryMB, DiskMB: d.LimitDiskMB, FileMB: d.MaxFileMB}
}

// startLimits makes the job's limits, at the sandboxed levels, before its
// first command; name is the group's (the job's id, or a landing's). It
// measures the job's disk until stopLimits.
func (s *core) startLimits(ctx context.Context, name string) {
	if !engine.Sandboxed(s.params.Isolation) {
		return
	}
	l := s.jobLimits()
	g, err := limit.New(limit.Scope(s.o.Paths.Home), name, limit.Limits{Processes: l.Processes,
		MemoryBytes: int64(l.MemoryMB) << 20, DiskBytes: int64(l.DiskMB) << 20})
	if err != nil {
		s.record(ctx, protocol.EventNote, "the job's limits could not be set ("+err.Error()+"): its processes and memory are not capped", nil)
		s.o.Log.Warn().Err(err).Msg("limits")
	}
	s.limits = g
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.diskStop, s.watchDone = cancel, make(chan struct{})
	go func() {
		defer close(s.watchDone)
		s.watchLimits(dctx, int64(l.DiskMB)<<20)
	}()
}

// limitPlan and portRange are what each sandboxed command of the job gets.
func (s *core) limitPlan() limit.Plan {
	if s.limits == nil {
		return limit.Plan{}
	}
	return s.limits.Plan()
}

func (s *core) portRange() sandbox.PortRange {
	s.portsMu.Lock()
	defer s.portsMu.Unlock()
	if s.ports == nil {
		return sandbox.PortRange{}
	}
	return sandbox.PortRange{First: s.ports.first, Last: s.ports.first + PortCount - 1}
}

// hitLimit records the first limit the job hit (a later one adds
// nothing); it reports whether why was the first.
func (s *core) hitLimit(why string) bool {
	s.limitMu.Lock()
	defer s.limitMu.Unlock()
	if s.limitHit != "" {
		return false
	}
	s.limitHit = why
	return true
}

// limitHitText is the limit the job hit, "" for none.
func (s *core) limitHitText() string {
	s.limitMu.Lock()
	defer s.limitMu.Unlock()
	return s.limitHit
}

// checkLimits reads whether the job's commands hit its process or memory
// cap so far, after a command of it ended.
func (s *core) checkLimits(ctx context.Context) {
	if s.limits == nil {
		return
	}
	h, err := s.limits.Hit()
	if err != nil || !h.Any() {
		return
	}
	why := fmt.Sprintf("the job hit %s; its limits are %s (limit_processes, limit_memory_mb)", h.String(), s.limits.Limits().String())
	if s.hitLimit(why) {
		s.record(ctx, protocol.EventNote, why, nil)
	}
}

// signalHit notes a command the kernel ended for writing a file past the
// job's disk cap (RLIMIT_FSIZE).
func (s *core) signalHit(ctx context.Context, signal string) {
	if s.limits == nil || signal != "file size limit exceeded" {
		return
	}
	s.hitLimit(fmt.Sprintf("the job hit its disk limit: a file grew past %s (limit_disk_mb), and the kernel ended the process writing it",
		s.limits.Limits().String()))
}

// watchLimits reads every hitEvery whether the job's commands hit its
// process or memory cap, and measures its folders every diskEvery: at the
// first limit hit it stops the job, which then ends failed naming it (a
// fork bomb at its cap never ends by itself).
func (s *core) watchLimits(ctx context.Context, maxDisk int64) {
	t := time.NewTicker(hitEvery)
	defer t.Stop()
	lastDisk := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.limits != nil {
			if h, err := s.limits.Hit(); err == nil && h.Any() {
				s.checkLimits(ctx)
				s.requestStop(s.limitHitText() + "; stopped")
				return
			}
		}
		if time.Since(lastDisk) < diskEvery {
			continue
		}
		lastDisk = time.Now()
		dirs := []string{s.o.Paths.JobDir(s.job.ID), s.o.Paths.Worktree(s.job.ID), s.o.Paths.VerifyTree(s.job.ID)}
		var present []string
		for _, d := range dirs {
			if _, err := os.Lstat(d); err == nil {
				present = append(present, d)
			}
		}
		used, _ := limit.Usage(present...) // an error still counts what was seen
		if used > maxDisk {
			why := fmt.Sprintf("the job hit its disk limit: its checkout, caches and scratch folders held %s, over %s (limit_disk_mb)",
				mibText(used), mibText(maxDisk))
			s.hitLimit(why)
			s.requestStop(why + "; stopped")
			return
		}
	}
}

func mibText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

// endWorkerProcesses ends whatever of the job's sandboxed commands is
// still alive in its group (a fork bomb's children outrun a walk of the
// process tree; the group holds them all), after the worker.
func (s *core) endWorkerProcesses() {
	if s.limits != nil {
		_ = s.limits.Kill()
	}
}

// stopLimits stops measuring the disk and removes the job's group, with
// anything still in it.
func (s *core) stopLimits() {
	if s.diskStop != nil {
		s.diskStop()
		<-s.watchDone // nothing of the watch writes to the job after this
	}
	if s.limits != nil {
		if err := s.limits.Kill(); err != nil {
			s.o.Log.Warn().Err(err).Msg("end the job's group")
		}
		if err := s.limits.Remove(); err != nil {
			s.o.Log.Warn().Err(err).Msg("remove the job's group")
		}
	}
}

// limitEnding makes end the job's failure at the limit it hit, if it hit
// one: the limit first, then what the hit made of the run.
func (s *core) limitEnding(end *ending) {
	why := s.limitHitText()
	if why == "" {
		return
	}
	if end.err != "" && !strings.Contains(end.err, why) {
		why += "; " + end.err
	}
	end.state, end.err, end.category = protocol.StateFailed, why, protocol.CategoryLimit
}
