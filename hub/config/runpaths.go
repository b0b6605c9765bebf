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
