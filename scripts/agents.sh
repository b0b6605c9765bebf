#!/usr/bin/env bash
# Installs the real agent CLIs the end-to-end tests run, at pinned versions,
# from npm into a cache folder (once; later runs reuse it), and prints that
# folder. Each package gets its own prefix, so versions never mix.
#
#   HUB_AGENTS_DIR  where to install (default ${XDG_CACHE_HOME:-$HOME/.cache}/hub/agents)
set -euo pipefail

dir="${HUB_AGENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hub/agents}"
pins=(
	"claude @anthropic-ai/claude-code@2.1.328"
	"codex @openai/codex@0.169.0"
	"opencode opencode-ai@1.18.33"
	"gemini @google/gemini-cli@0.61.0"
	"qwen @qwen-code/qwen-code@0.24.4"
	"mcp-inspector @modelcontextprotocol/inspector@2.12.0"
)
command -v npm >/dev/null 2>&1 || { echo "agents: npm is needed (Node 20+) to install the agent CLIs the tests run" >&2; exit 1; }
mkdir -p "$dir"
pids=()
for pin in "${pins[@]}"; do
	bin=${pin%% *}; pkg=${pin#* }
	prefix="$dir/$(echo "$pkg" | tr '/@' '__')"
	[ -x "$prefix/node_modules/.bin/$bin" ] && continue
	echo "agents: installing $pkg into $prefix" >&2
	(
		mkdir -p "$prefix" && cd "$prefix" &&
			{ [ -f package.json ] || echo '{"private":true}' > package.json; } &&
			npm install --no-save --no-audit --no-fund --loglevel=error "$pkg" > install.log 2>&1 ||
			{ echo "agents: npm install $pkg failed; see $prefix/install.log" >&2; tail -20 "$prefix/install.log" >&2; exit 1; }
	) &
	pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" = 0 ] || exit 1
for pin in "${pins[@]}"; do
	bin=${pin%% *}; pkg=${pin#* }
	prefix="$dir/$(echo "$pkg" | tr '/@' '__')"
	[ -x "$prefix/node_modules/.bin/$bin" ] || { echo "agents: $pkg installed no $bin" >&2; exit 1; }
done
echo "$dir"
