// Package job owns the rules of a job that both the daemon and the shim
// follow: validating a start request before anything exists, ids and branch
// names, the views (status, summary, evidence) built from a stored record,
// and redaction of what a worker printed. It never talks to a process or a
// socket.
package job
