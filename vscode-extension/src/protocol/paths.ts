// Where hub lives: its home folder, its socket, its daemon log and the binary
// that starts it. Plain Node (no vscode import), so unit tests cover it.

import * as os from "node:os";
import * as path from "node:path";

/** The environment variables the resolution reads. */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * hubHome resolves hub's home folder as hub itself does: the `hub.home`
 * setting when set, else $HUB_HOME, else $XDG_DATA_HOME/hub, else
 * ~/.local/share/hub. A leading `~/` in the setting is expanded.
 */
export function hubHome(setting: string | undefined, env: Env = process.env): string {
  const home = env.HOME || os.homedir();
  const s = (setting ?? "").trim();
  if (s !== "") {
    return s === "~" ? home : s.startsWith("~/") ? path.join(home, s.slice(2)) : path.resolve(s);
  }
  if (env.HUB_HOME) {
    return path.resolve(env.HUB_HOME);
  }
  if (env.XDG_DATA_HOME) {
    return path.join(env.XDG_DATA_HOME, "hub");
  }
  return path.join(home, ".local", "share", "hub");
}

/** socketPath is the daemon's unix socket inside a home folder. */
export function socketPath(home: string): string {
  return path.join(home, "hub.sock");
}

/** daemonLog is where a daemon started by the extension writes. */
export function daemonLog(home: string): string {
  return path.join(home, "logs", "daemon.log");
}

/**
 * hubBinary resolves the binary that runs `hub serve`: the `hub.binary`
 * setting, else $HUB_BIN, else `hub` (found on PATH when spawned).
 */
export function hubBinary(setting: string | undefined, env: Env = process.env): string {
  const s = (setting ?? "").trim();
  if (s !== "") {
    return s;
  }
  return env.HUB_BIN || "hub";
}
