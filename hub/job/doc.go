// Package job owns the rules of a job that both the daemon and the shim
// follow: validating a start request before anything exists (routing it
// included), ids and branch names, the job's checkout as hub made it, what
// it changed (base..head), and its one ending (Close: the evidence and the
// record, however the job ended). What hub shows of a job is package view's.
// It never talks to a process or a socket.
package job
