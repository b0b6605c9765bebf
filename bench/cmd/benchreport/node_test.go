package main

import (
	"path/filepath"
	"testing"
)

// TestNodeMCPColdStart resolves the reference Node MCP server (installing its
// dependencies with npm if they are missing) and checks it answers initialize
// through stdioInit, three times.
func TestNodeMCPColdStart(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns node, may run npm")
	}
	root, err := filepath.Abs("../../..") // the test runs in bench/cmd/benchreport
	if err != nil {
		t.Fatal(err)
	}
	server, err := nodeMCPServer(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		d, err := stdioInit("node", server)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		t.Logf("run %d: initialize answered in %.1f ms", i, ms(d))
	}
}

// TestNodeStdioInitRejects checks stdioInit fails, with the line, on an answer
// that is not a result for id 1, and on a process that exits without one.
func TestNodeStdioInitRejects(t *testing.T) {
	if _, err := stdioInit("sh", "-c", `read l; echo '{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}'`); err == nil {
		t.Error("an error answer was taken for a result")
	} else {
		t.Log(err)
	}
	if _, err := stdioInit("sh", "-c", `read l; echo '{"jsonrpc":"2.0","id":2,"result":{}}'`); err == nil {
		t.Error("a result for id 2 was taken for id 1's")
	}
	if _, err := stdioInit("sh", "-c", `read l; echo oops >&2; exit 3`); err == nil {
		t.Error("a process that exited without answering was taken for an answer")
	} else {
		t.Log(err)
	}
	if _, err := stdioInit("sh", "-c", `read l; echo '{"jsonrpc":"2.0","id":1,"result":{}}'`); err != nil {
		t.Error(err)
	}
}
