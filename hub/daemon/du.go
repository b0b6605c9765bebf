package daemon

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/hub-agents/hub/hub/deps"
	"github.com/hub-agents/hub/hub/gc"
	"github.com/hub-agents/hub/hub/protocol"
)

// DU measures hub's disk use: each job's worktrees, journal, logs and
// engine folder, largest first, and HUB_HOME's totals. It only reads.
func (s *Server) DU(ctx context.Context, _ protocol.DUParams) (*protocol.DUResult, error) {
	jobs, err := s.st.ListJobs(ctx, nil, "", 0)
	if err != nil {
		return nil, internal(err)
	}
	p := s.o.Paths
	res := &protocol.DUResult{Home: p.Home, Jobs: make([]protocol.DUJob, 0, len(jobs))}
	for _, j := range jobs {
		u := s.jobUsage(ctx, j.ID)
		res.Jobs = append(res.Jobs, protocol.DUJob{ID: j.ID, State: j.State, Repo: j.Repo, EndedAt: j.EndedAt, DUUsage: u})
		res.JobsTotal.WorktreeBytes += u.WorktreeBytes
		res.JobsTotal.LogsBytes += u.LogsBytes
		res.JobsTotal.EngineBytes += u.EngineBytes
		res.JobsTotal.TotalBytes += u.TotalBytes
	}
	slices.SortStableFunc(res.Jobs, func(a, b protocol.DUJob) int {
		if c := cmp.Compare(b.TotalBytes, a.TotalBytes); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, f := range []string{p.DB(), p.DB() + "-wal", p.DB() + "-shm"} {
		res.DBBytes += gc.DiskUse(ctx, f)
	}
	ents, _, err := deps.Cache{Dir: p.EnvsDir()}.List()
	if err != nil {
		return nil, internal(err)
	}
	res.Envs = make([]protocol.DUEnv, 0, len(ents))
	for _, e := range ents {
		res.Envs = append(res.Envs, protocol.DUEnv{Key: e.Key, Manager: e.Manager, Lockfile: e.Lockfile, Repo: e.Repo, Dirs: e.Dirs,
			Files: e.Files, Bytes: gc.DiskUse(ctx, e.Path), LastUsed: e.LastUsed.UTC()})
	}
	res.EnvsBytes = gc.DiskUse(ctx, p.EnvsDir())
	res.LogsBytes = gc.DiskUse(ctx, p.LogsDir())
	res.HomeBytes = gc.DiskUse(ctx, p.Home)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// jobUsage measures what job id keeps on disk.
func (s *Server) jobUsage(ctx context.Context, id string) protocol.DUUsage {
	p := s.o.Paths
	trees := gc.DiskUse(ctx, p.Worktree(id)) + gc.DiskUse(ctx, p.VerifyTree(id))
	u := protocol.DUUsage{
		// The checkouts' git side (hub's index, a private git dir) lives
		// in the job's folder and counts with them.
		WorktreeBytes: trees + gc.DiskUse(ctx, p.HubIndex(id)) + gc.DiskUse(ctx, p.JobGitDir(id)) +
			gc.DiskUse(ctx, p.VerifyIndex(id)) + gc.DiskUse(ctx, p.VerifyGitDir(id)),
		LogsBytes:   gc.DiskUse(ctx, p.ShimLog(id)) + gc.DiskUse(ctx, p.WorkerLog(id)) + gc.DiskUse(ctx, p.SetupLog(id)),
		EngineBytes: gc.DiskUse(ctx, p.EngineHome(id)) + gc.DiskUse(ctx, p.JobCache(id)) + gc.DiskUse(ctx, p.SetupHome(id)),
	}
	u.TotalBytes = trees + gc.DiskUse(ctx, p.JobDir(id))
	return u
}
