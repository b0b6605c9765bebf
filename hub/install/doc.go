// Package install sets hub up in the agent CLIs that supervise with it
// (Claude Code, Codex, OpenCode, Gemini CLI, Qwen Code), takes it out
// again, and checks it.
//
// What it owns: where each client keeps its user-wide MCP servers and its
// instructions, the entry that makes a client start `hub mcp`, the
// delegation skill (one text, written as a skill file for Claude Code,
// Gemini CLI and Qwen Code and as a marked block in Codex's and OpenCode's
// AGENTS.md, and checked in as the Claude Code plugin's skill), the editors
// that change those files, and doctor's checks, down to a real MCP
// handshake with the configured server.
//
// What it must never do: write a file before the whole plan is made and
// shown; change anything in a client's file but hub's own entry or block
// (every other byte stays as it was: comments, order, formatting, mode);
// write over a file it cannot parse; overwrite the backup of a file as it
// was before hub first changed it; run a client with the user's home (a
// version check gets a scratch one).
package install
