// Package e2e holds hub's end-to-end tests: the real hub binary, a real
// daemon on a unix socket, real shims and exec workers, real git, and the
// real MCP SDK client. It has no code of its own beyond test helpers.
package e2e
