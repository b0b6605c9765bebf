package protocol

import "time"

// DUParams asks for hub's disk use; it has no fields yet.
type DUParams struct{}

// DUUsage is the disk use of one job, or a sum of jobs, in bytes (the
// apparent sizes of the files, as `du --apparent-size` counts them).
type DUUsage struct {
	WorktreeBytes int64 `json:"worktree_bytes"` // worktrees/<id> and worktrees/<id>.verify
	LogsBytes     int64 `json:"logs_bytes"`     // jobs/<id>/shim.log, worker.log and setup.log
	EngineBytes   int64 `json:"engine_bytes"`   // jobs/<id>/engine, the engine's scratch folder, with a sandboxed job's tools' caches (cache, setup-home)
	TotalBytes    int64 `json:"total_bytes"`    // the worktrees and all of jobs/<id>
}

// DUJob is one job's disk use.
type DUJob struct {
	ID      string    `json:"id"`
	State   State     `json:"state"`
	Repo    string    `json:"repo,omitempty"`
	EndedAt time.Time `json:"ended_at,omitzero"`
	DUUsage
}

// DUEnv is one entry of hub's environment cache (HUB_HOME/envs): an
// installed dependency tree jobs get a copy of.
type DUEnv struct {
	Key      string    `json:"key"`
	Manager  string    `json:"manager"`  // npm, pnpm, yarn, bun, pip, uv, custom
	Lockfile string    `json:"lockfile"` // what pins it
	Repo     string    `json:"repo"`     // the repository of the job that installed it
	Dirs     []string  `json:"dirs"`     // node_modules, .venv, …
	Files    int       `json:"files"`
	Bytes    int64     `json:"bytes"`     // the tree and its ready copies
	LastUsed time.Time `json:"last_used"` // when a job last got a copy of it (or it was made)
}

// DUResult is hub's disk use: each job, largest first, and HUB_HOME's totals.
type DUResult struct {
	Home      string  `json:"home"`
	Jobs      []DUJob `json:"jobs"`
	JobsTotal DUUsage `json:"jobs_total"`
	// Envs is hub's environment cache, most recently used first; EnvsBytes
	// all of HUB_HOME/envs (with what an interrupted install left).
	Envs      []DUEnv `json:"envs"`
	EnvsBytes int64   `json:"envs_bytes"`
	DBBytes   int64   `json:"db_bytes"`   // hub.db with its -wal and -shm files
	LogsBytes int64   `json:"logs_bytes"` // HUB_HOME/logs: the daemon's and hub mcp's logs, with what rotated out
	HomeBytes int64   `json:"home_bytes"` // everything under HUB_HOME
}

// GCParams collects what old ended jobs left behind. Without Apply it is a
// dry run that changes nothing.
type GCParams struct {
	// OlderThanS: collect jobs that ended at least this many seconds ago;
	// absent means the job_retention_days setting, 0 every ended job.
	OlderThanS *int64 `json:"older_than_s,omitempty"`
	Apply      bool   `json:"apply,omitempty"`
	// Force also deletes branches whose work is on no other branch. It never
	// removes a worktree with uncommitted changes, nor anything of a job
	// that has not ended.
	Force bool `json:"force,omitempty"`
}

// GC actions, for a job and for each thing it left.
const (
	GCRemove = "remove" // removed (with apply), or would be (dry run)
	GCKeep   = "keep"   // kept; Reason says why
	GCSkip   = "skip"   // not looked at: its repository moved or vanished
)

// Kinds of GCItem.
const (
	GCWorktree   = "worktree"    // worktrees/<id>
	GCVerifyTree = "verify_tree" // worktrees/<id>.verify
	GCBranch     = "branch"      // hub/<id> in the job's repository
	GCEngine     = "engine"      // jobs/<id>/engine
	GCLog        = "log"         // jobs/<id>/shim.log, worker.log, setup.log
	GCCache      = "cache"       // jobs/<id>/cache and setup-home: a sandboxed job's tools' caches and its setup's HOME
	GCEnv        = "env"         // an entry of hub's environment cache, HUB_HOME/envs/<key>
)

// GCItem is one thing a job left: what gc does with it and why.
type GCItem struct {
	Kind   string `json:"kind"`
	Path   string `json:"path,omitempty"`   // files and folders
	Branch string `json:"branch,omitempty"` // branches
	Bytes  int64  `json:"bytes,omitempty"`
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
	// Error: removing it failed (apply only); it is still there.
	Error string `json:"error,omitempty"`
}

// GCJob is one job as gc saw it. Action is GCRemove when at least one of its
// items is (or would be) removed, else GCKeep or GCSkip with the Reason.
// The record and the journal always stay.
type GCJob struct {
	ID      string    `json:"id"`
	State   State     `json:"state"`
	Repo    string    `json:"repo,omitempty"`
	EndedAt time.Time `json:"ended_at,omitzero"`
	Action  string    `json:"action"`
	Reason  string    `json:"reason,omitempty"`
	Items   []GCItem  `json:"items,omitempty"`
}

// GCResult lists every job that is kept or has something to remove, newest
// first; old ended jobs with nothing left are only counted in Clean.
type GCResult struct {
	Applied    bool    `json:"applied"`
	OlderThanS int64   `json:"older_than_s"`
	Force      bool    `json:"force,omitempty"`
	Jobs       []GCJob `json:"jobs"`
	Clean      int     `json:"clean"`
	// Envs are the entries of hub's environment cache no job used for as
	// long as the retention, and folders an interrupted install left; a
	// later job installs again what it needs.
	Envs []GCItem `json:"envs,omitempty"`
	// Logs are the previous generations of hub's own logs (daemon.log.1,
	// mcp.log.1): each log rotates at a size, and gc drops what rotated
	// out; the current logs stay.
	Logs []GCItem `json:"logs,omitempty"`
	// FreedBytes is what was removed (or would be, in a dry run).
	FreedBytes int64 `json:"freed_bytes"`
	// Failed counts items whose removal failed.
	Failed int `json:"failed,omitempty"`
}
