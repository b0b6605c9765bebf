#!/usr/bin/env bash
# The test command: installs what the tests need when it is missing, then
# runs every test. Used by `make test` and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
apt_install() {
	if need apt-get; then
		echo "test: installing $* with apt-get" >&2
		SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
		$SUDO apt-get update -qq && $SUDO apt-get install -y -qq "$@" >/dev/null
	else
		echo "test: $* is missing and there is no apt-get here; install it and run again" >&2
		exit 1
	fi
}
need git || apt_install git
need go || { echo "test: Go 1.26 or newer is needed (https://go.dev/dl)" >&2; exit 1; }

need node && need npm || apt_install nodejs npm
# bubblewrap: the isolated and untrusted levels, and the hostile-worker tests.
need bwrap || apt_install bubblewrap
# The real agent CLIs (Claude Code, Codex, OpenCode, the MCP Inspector) at
# pinned versions, for the tests that run them against the scripted model.
HUB_TEST_AGENTS="$(./scripts/agents.sh)"
export HUB_TEST_AGENTS
# Real open-source projects (two npm packages with their tests, two whose
# installs set up git hooks, one Go module) and warm npm and Go module
# caches for them, for the tests that run jobs on real projects.
HUB_TEST_SUBJECTS="$(./scripts/subjects.sh)"
export HUB_TEST_SUBJECTS
# code-server (with the Node 24 it needs) and Chromium for the extension's UI
# tests: installed in the background while the Go tests run (minutes, once).
codeserver_out="$(mktemp)"
./scripts/codeserver.sh > "$codeserver_out" &
codeserver_pid=$!

# npm packages of the workspace: the extension's, and bench/node-mcp's (the
# Node MCP server the cold-start benchmark and its test spawn).
npm install --no-audit --no-fund --loglevel=error
go mod download
go vet ./...
# macOS and Windows: the core module cross-built and vetted (not run).
make cross
# -p 2: this suite spawns real daemons, shims and git; keep the machine responsive.
go test -count=1 -p 2 -timeout 20m ./...
# Again with the race detector: the unit packages, then the end-to-end suite
# with the daemon, shims and CLI themselves built with -race (a race stops them).
go test -count=1 -race ./hub/rpc ./hub/store ./hub/mcpserver ./hub/client ./hub/job ./hub/daemon ./hub/engine/... ./agent/... ./rubric
HUB_TEST_RACE=1 GORACE=halt_on_error=1 go test -count=1 -timeout 20m ./hub/e2e ./hub/cli

# The Temporal runner, a module of its own (hub's core never links Temporal):
# its tests run jobs on real worker processes through Temporal's in-process
# test server. Then again with the race detector in the test, the worker, the
# relay, the daemon and the shims (a race stops them).
(cd hub/temporal && go mod download && go vet ./... && go test -count=1 -p 2 -timeout 20m ./... &&
	HUB_TEST_RACE=1 GORACE=halt_on_error=1 go test -count=1 -race -timeout 30m .)

make build
# The official MCP conformance suite against a real `hub mcp --http` (the
# suite and the Node 24 it needs are installed once, into ~/.cache/hub).
HUB_BIN="$PWD/bin/hub" ./scripts/conformance.sh

# The VS Code extension: type check, unit tests against a real daemon running
# real jobs, the .vsix, then the UI tests in a real code-server driven by
# Chromium (screenshots under vscode-extension/test/ui/out/).
npm run typecheck -w vscode-extension
HUB_BIN="$PWD/bin/hub" npm run test:unit -w vscode-extension
npm run package -w vscode-extension
wait "$codeserver_pid" || { echo "test: installing code-server failed (see above)" >&2; exit 1; }
HUB_CODESERVER_DIR="$(cat "$codeserver_out")"; rm -f "$codeserver_out"
HUB_BIN="$PWD/bin/hub" HUB_CODESERVER_DIR="$HUB_CODESERVER_DIR" node vscode-extension/test/ui/run.mjs
