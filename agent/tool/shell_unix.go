//go:build unix

package tool

// shellPath is the shell that runs the model's commands.
const shellPath = "/bin/sh"
