// Package shim runs one job: `hub shim <id>` is a process of its own (the
// containerd-shim pattern) that outlives the daemon. It prepares the job's
// worktree, owns the engine's process group, serves the job's mailbox on its
// own socket (questions, progress, steering, stop), watches the timeouts,
// commits whatever the worker left, runs verify on that commit, builds the
// evidence and closes the job (job.Close), reservation and slot included.
// In the daemon's own process it runs as a goroutine (Options.Lock and
// InProcess: the in-process test world).
//
// It also knows how to settle a job whose shim died (Settle), so the daemon
// can end such a job the same way. It must never lose work: every ending
// commits the worktree before the record says the job ended.
package shim
