package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// nodeMCPDir is the npm workspace (relative to the repo root) holding the
// reference server: a minimal stdio MCP server on @modelcontextprotocol/sdk.
const nodeMCPDir = "bench/node-mcp"

// nodeMCPInstall installs that workspace's locked dependencies and nothing
// else. Not `npm ci`: ci empties the root node_modules first, so it would take
// the VS Code extension's dependencies with it. --no-save leaves package.json
// and package-lock.json as they are.
var nodeMCPInstall = []string{"install", "--workspace", nodeMCPDir, "--include-workspace-root=false", "--no-save", "--no-audit", "--no-fund"}

// nodeMCPServer returns the path of the reference server's server.mjs under
// root (the repository root), installing its dependencies with npm first if
// they are missing or not the pinned versions. Run it with
// stdioInit("node", path); it resolves its imports from its own directory,
// so the working directory does not matter.
func nodeMCPServer(root string) (string, error) {
	dir := filepath.Join(root, filepath.FromSlash(nodeMCPDir))
	server := filepath.Join(dir, "server.mjs")
	if _, err := os.Stat(server); err != nil {
		return "", fmt.Errorf("node MCP reference: %w", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("node MCP reference: node is not on PATH; install Node.js ≥ 20 (with npm)")
	}
	missing := nodeDepsMissing(root, dir)
	if missing == nil {
		return server, nil
	}
	how := fmt.Sprintf("`npm %s` in %s", strings.Join(nodeMCPInstall, " "), root)
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("node MCP reference: %v, and npm is not on PATH; install Node.js ≥ 20 with npm, then run %s", missing, how)
	}
	cmd := exec.Command(npm, nodeMCPInstall...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("node MCP reference: %s: %v\n%s", how, err, b)
	}
	if err := nodeDepsMissing(root, dir); err != nil {
		return "", fmt.Errorf("node MCP reference: after %s: %w", how, err)
	}
	return server, nil
}

// nodeDepsMissing reports the first dependency of the workspace in dir that
// node would not find at its pinned version: in dir's own node_modules, or
// hoisted to root's. The workspace pins exact versions, so a version is
// compared as a string.
func nodeDepsMissing(root, dir string) error {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		return err
	}
	for name, want := range pkg.Dependencies {
		got := ""
		for _, nm := range []string{filepath.Join(dir, "node_modules"), filepath.Join(root, "node_modules")} {
			var dep struct {
				Version string `json:"version"`
			}
			if b, err := os.ReadFile(filepath.Join(nm, filepath.FromSlash(name), "package.json")); err == nil && json.Unmarshal(b, &dep) == nil {
				got = dep.Version
				break
			}
		}
		switch {
		case got == "":
			return fmt.Errorf("%s is not installed", name)
		case got != want:
			return fmt.Errorf("%s is %s, not the pinned %s", name, got, want)
		}
	}
	return nil
}

// stdioTimeout bounds how long stdioInit waits for the answer.
const stdioTimeout = 30 * time.Second

// stdioInit spawns name with args (in the current directory, with the current
// environment), writes an MCP initialize request on its stdin as a client
// would, and times spawn → the first line on its stdout, which must be the
// JSON-RPC result for that request. The process is killed and reaped before
// it returns; one that has not answered within stdioTimeout is killed too.
func stdioInit(name string, args ...string) (time.Duration, error) {
	cmd := exec.Command(name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// A child it leaves behind (a daemon it starts) may hold stderr open:
	// don't let Wait block on it.
	cmd.WaitDelay = 200 * time.Millisecond
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	what := filepath.Base(name)
	if len(args) > 0 {
		what += " " + strings.Join(args, " ")
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	waited := false
	stop := func() {
		if !waited {
			waited = true
			in.Close()
			cmd.Process.Kill()
			cmd.Wait() // after this, stderr is complete
		}
	}
	defer stop()
	timer := time.AfterFunc(stdioTimeout, func() { cmd.Process.Kill() })
	defer timer.Stop()
	msg := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n"
	if _, err := io.WriteString(in, msg); err != nil {
		stop()
		return 0, fmt.Errorf("%s: writing initialize: %v; stderr: %s", what, err, strings.TrimSpace(stderr.String()))
	}
	line, err := bufio.NewReader(outp).ReadString('\n')
	d := time.Since(t0)
	if err != nil {
		stop()
		return 0, fmt.Errorf("%s: no answer to initialize (%v, within %v): %q; stderr: %s", what, err, stdioTimeout, line, strings.TrimSpace(stderr.String()))
	}
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}
	if json.Unmarshal([]byte(line), &resp) != nil || resp.JSONRPC != "2.0" || string(resp.ID) != "1" || len(resp.Result) == 0 || string(resp.Result) == "null" {
		return 0, fmt.Errorf("%s answered initialize with %q", what, strings.TrimSpace(line))
	}
	return d, nil
}
