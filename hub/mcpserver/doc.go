// Package mcpserver is hub's MCP face: the tools a supervisor agent calls
// (start, start_many, wait, status, result, reply, steer, stop, cleanup,
// engines), each a thin forward to one daemon method, plus the streamable
// HTTP handler that guards them with a bearer token.
//
// It owns the tool schemas, the short texts the supervisor reads, the
// progress notifications sent while wait blocks, and the mapping of daemon
// errors to tool results. It holds no job state and never decides anything
// about a job: that belongs to the daemon. It never writes to stdout, which
// is the MCP stream when served over stdio.
package mcpserver
