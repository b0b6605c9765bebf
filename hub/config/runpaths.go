package config

import "path/filepath"

// What a job's processes get of their own besides the worktree: a port
// range (held by a lock file under PortsDir while the job's shim lives)
// and a temporary folder.

// PortsDir holds a lock file per port range a live job holds.
func (p Paths) PortsDir() string { return filepath.Join(p.Home, "ports") }

// JobTmp is the TMPDIR of a job's worker and verify at isolation worktree
// (a sandbox gives them a /tmp of their own instead).
func (p Paths) JobTmp(id string) string { return filepath.Join(p.JobDir(id), "tmp") }

// JobCache holds a sandboxed job's tools' caches (Go's, npm's, pip's):
// its setup fills them, its worker and verify read them.
func (p Paths) JobCache(id string) string { return filepath.Join(p.JobDir(id), "cache") }

// EnvsDir is hub's environment cache: installed dependency trees, one
// folder per key (see hub/deps).
func (p Paths) EnvsDir() string { return filepath.Join(p.Home, "envs") }

// EnvToolsDir holds the tools' caches (npm's, pip's, Go's) of the installs
// hub runs itself, in private checkouts, to fill the environment cache of
// a job at the isolated levels: written by those installs only, never by
// a worker (whose sandbox gets the job's own JobCache instead).
func (p Paths) EnvToolsDir() string { return filepath.Join(p.Home, "envs-tools") }

// SharedDir holds, per repository, what its jobs in linked worktrees
// share of it as it was before them: its git config and hooks folder
// (see gitx.WatchShared).
func (p Paths) SharedDir() string { return filepath.Join(p.Home, "shared") }

// SharedKeep is where job id keeps what it found changed in its
// repository's shared config and hooks, once hub put them back.
func (p Paths) SharedKeep(id string) string { return filepath.Join(p.JobDir(id), "shared") }

// SetupLog is the output of job id's setup: its installs and setup command.
func (p Paths) SetupLog(id string) string { return filepath.Join(p.JobDir(id), "setup.log") }

// SetupHome is the private HOME of a sandboxed job's setup.
func (p Paths) SetupHome(id string) string { return filepath.Join(p.JobDir(id), "setup-home") }
