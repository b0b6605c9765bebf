package config

import "path/filepath"

// The git side of a job's folder. The worker's git never names these:
// hub derives them from HUB_HOME and the job's id, and only the private
// git dir is ever the worker's to write (at the isolated levels).

// JobGitDir is the private git dir of a job's checkout at the isolated
// levels (the worker's; hub writes it anew after the run).
func (p Paths) JobGitDir(id string) string { return filepath.Join(p.JobDir(id), "git") }

// HubIndex is hub's own index of the job's worktree.
func (p Paths) HubIndex(id string) string { return filepath.Join(p.JobDir(id), "index") }

// ImportDir is where hub copies a private checkout's objects before it
// reads them.
func (p Paths) ImportDir(id string) string { return filepath.Join(p.JobDir(id), "import") }

// VerifyGitDir and VerifyIndex belong to the clean checkout verify runs in
// (VerifyTree); VerifyHome is verify's HOME inside the sandbox.
func (p Paths) VerifyGitDir(id string) string { return filepath.Join(p.JobDir(id), "verify.git") }
func (p Paths) VerifyIndex(id string) string  { return filepath.Join(p.JobDir(id), "verify.index") }
func (p Paths) VerifyHome(id string) string   { return filepath.Join(p.JobDir(id), "verify-home") }
