#!/usr/bin/env bash
# Fetches the real open-source projects the end-to-end tests use as subjects
# (jobs run in their worktrees, install their dependencies and run their
# tests), at pinned versions, from the npm registry and the Go module proxy
# into a cache folder (once; later runs reuse it), and prints that folder on
# stdout; everything else goes to stderr.
#
#   HUB_SUBJECTS_DIR  where to fetch (default ${XDG_CACHE_HOME:-$HOME/.cache}/hub/subjects)
#
# Layout: <dir>/npm-cache            the npm cache every install used: pass it as
#                                    npm_config_cache, and `npm ci --prefer-offline`
#                                    of a subject installs warm from it
#         <dir>/<slug>/src           the project's source: for npm the published
#                                    tarball (tests included) with a package-lock.json
#                                    and no node_modules; for Go the module's source,
#                                    writable, with its go.sum (its modules are in
#                                    <dir>/gomod: pass it as GOMODCACHE)
#         <dir>/<slug>/node_modules  (npm) what `npm install` made of src's lockfile
#         <dir>/<slug>/TEST          one line: the command that runs its tests in src
#         <dir>/<slug>/KIND          npm or go
#         <dir>/<slug>/.done         written last; a subject without it is fetched again
#         <dir>/<slug>/fetch.log     what the fetch printed
#         <dir>/gomod                the Go module cache the Go subjects' modules are in
#         <dir>/gocache              a Go build cache their tests were compiled into once
set -euo pipefail

dir="${HUB_SUBJECTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hub/subjects}"
# slug|kind|package@version (npm) or module@version (go)|test command[|npm install flags]
pins=(
	# big: tape + nyc + eslint devDependencies, 535 packages, ~150 MB of node_modules
	"object-inspect|npm|object-inspect@1.13.4|npm run tests-only"
	# small: mocha + eslint devDependencies, 146 packages
	"hash.js|npm|hash.js@1.1.7|npm test"
	# Go, with dependencies of its own (toml, go-md2man, smetrics, yaml.v3)
	"urfave-cli|go|github.com/urfave/cli/v2@v2.27.7|go test ./..."
	# Git hooks on install, for the tests that hold hub's fence around the
	# user's repository: husky 9 from its "prepare" (sets core.hooksPath),
	# 221 packages; lefthook from its "prepare" (writes into .git/hooks),
	# 240 packages. Their tarballs hold no tests. Fetched with
	# --ignore-scripts: those scripts write into whatever git repository
	# encloses the folder, and only a job's own install is meant to run them.
	"json-server-husky|npm|json-server@1.0.0-beta.3|true|--ignore-scripts"
	"runmd-lefthook|npm|runmd@2.1.1|true|--ignore-scripts"
)

say() { echo "subjects: $*" >&2; }
die() { say "$*"; exit 1; }

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
export npm_config_cache="$dir/npm-cache"
export GOMODCACHE="$dir/gomod" GOFLAGS=-modcacherw
# One fetch at a time: a second run waits here, then finds the subjects done.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$dir/.lock"
	flock 9
fi
# An install that hangs (a dependency fetched from git, where only the
# registries are reachable) is stopped rather than waited on for ever.
limit=()
command -v timeout >/dev/null 2>&1 && limit=(timeout 900)

# fetch_npm SLUG SPEC [FLAGS]: the published tarball into src, and its lockfile.
fetch_npm() {
	local slug=$1 spec=$2 flags=${3:-} d="$dir/$1" tgz
	mkdir -p "$d/pack"
	(cd "$d/pack" && npm pack --silent --loglevel=error "$spec") || return 1
	tgz=$(ls "$d"/pack/*.tgz) && tar -xzf "$tgz" -C "$d/pack" && mv "$d/pack/package" "$d/src" && rm -rf "$d/pack" || return 1
	# shellcheck disable=SC2086 # flags are words
	(cd "$d/src" && "${limit[@]}" npm install --no-audit --no-fund --loglevel=error $flags) || return 1
	[ -f "$d/src/package-lock.json" ] || { echo "npm install wrote no package-lock.json" ; return 1; }
	# The installed tree is kept beside the source, not in it: a test copies
	# it in to make a checkout with its dependencies installed.
	mv "$d/src/node_modules" "$d/node_modules"
}

# fetch_go SLUG MODULE@VERSION: the module's source, writable, and its modules.
fetch_go() {
	local slug=$1 spec=$2 d="$dir/$1" mod
	# From the subject's own folder, so that no go.mod around the caller is used.
	mod=$(cd "$d" && GOWORK=off go mod download -json "$spec" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[ -n "$mod" ] && [ -d "$mod" ] || { echo "go mod download $spec gave no Dir"; return 1; }
	cp -r "$mod" "$d/src" && chmod -R u+w "$d/src" || return 1
	(cd "$d/src" && "${limit[@]}" go mod download) || return 1
	# Its tests compiled once, into <dir>/gocache: a user's build cache is warm.
	(cd "$d/src" && GOCACHE="$dir/gocache" "${limit[@]}" go test -count=1 -run '^$' ./...) || return 1
}

pids=()
for pin in "${pins[@]}"; do
	IFS='|' read -r slug kind spec test flags <<<"$pin"
	d="$dir/$slug"
	[ -f "$d/.done" ] && continue
	case "$kind" in
	npm) command -v npm >/dev/null 2>&1 || die "npm is needed (Node 20+) to fetch $spec" ;;
	go) command -v go >/dev/null 2>&1 || die "go is needed to fetch $spec" ;;
	esac
	rm -rf "$d" && mkdir -p "$d"
	say "fetching $spec into $d/src"
	(
		start=$SECONDS
		"fetch_$kind" "$slug" "$spec" $flags > "$d/fetch.log" 2>&1 ||
			{ say "fetching $spec failed; see $d/fetch.log:"; tail -20 "$d/fetch.log" >&2; exit 1; }
		echo "$test" > "$d/TEST"
		echo "$kind" > "$d/KIND"
		touch "$d/.done"
		say "fetched $spec in $((SECONDS - start))s"
	) &
	pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" = 0 ] || exit 1
for pin in "${pins[@]}"; do
	IFS='|' read -r slug kind spec test _ <<<"$pin"
	[ -f "$dir/$slug/.done" ] && [ -s "$dir/$slug/TEST" ] || die "$spec was not fetched into $dir/$slug"
done
echo "$dir"
