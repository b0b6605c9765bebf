// Package faults is hub's fault suite (`make faults`): every case is a real
// run — a real daemon, real shims, real git and real processes — with a
// fault injected at a chosen moment: kill -9 of the daemon, a shim or the
// process hub runs for the step (preparing, running, needs_input,
// committing, verifying), SIGTERM of the daemon with jobs running, a full
// disk during a commit, corrupted and truncated worker logs, and a
// store locked by another process. After each case it checks that no work
// was lost, every record is readable, every reservation was closed exactly
// once and no process of the run was left behind.
//
// The package holds only tests. With HUB_FAULTS_REPORT set to a path, the
// run writes the fault matrix and its figures there (docs/reliability.md);
// HUB_FAULTS_REPEAT runs every case that many times.
package faults
