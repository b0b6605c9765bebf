// Starting `hub serve` when no daemon answers, as hub's own client does:
// detached in its own session, its output appended to $HUB_HOME/logs/daemon.log,
// then waiting for its socket. The daemon's lock keeps it single: a second
// one started by a race just exits, and the socket answers all the same.

import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

import { dial } from "./client";
import { ClientErrorCodes, HubError, notRunningHint } from "./errors";
import { daemonLog, socketPath } from "./paths";

export interface StartOptions {
  /** The hub binary (a path, or a name looked up on PATH). */
  binary: string;
  /** HUB_HOME of the daemon. */
  home: string;
  /** The environment the daemon gets, HUB_HOME set on top (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the socket (default 5000 ms). */
  timeoutMs?: number;
}

function tail(file: string, lines = 5): string {
  try {
    return fs.readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/**
 * startDaemon runs `<binary> serve` detached and resolves once its socket
 * accepts a connection. It rejects with a StartFailed HubError when the
 * binary cannot be run, or the socket does not answer in time (the hint
 * quotes the end of the daemon's log).
 */
export async function startDaemon(o: StartOptions): Promise<void> {
  const logFile = daemonLog(o.home);
  fs.mkdirSync(o.home, { recursive: true, mode: 0o700 });
  fs.mkdirSync(path.dirname(logFile), { recursive: true, mode: 0o700 });
  const fd = fs.openSync(logFile, "a", 0o600);
  let spawnError: Error | undefined;
  let exited: number | null | undefined;
  let exitedAt = 0;
  try {
    const child = spawn(o.binary, ["serve"], {
      detached: true,
      stdio: ["ignore", fd, fd],
      env: { ...(o.env ?? process.env), HUB_HOME: o.home },
    });
    child.on("error", (err) => (spawnError = err));
    child.on("exit", (code) => {
      exited = code;
      exitedAt = Date.now();
    });
    child.unref();
  } finally {
    fs.closeSync(fd);
  }

  const sock = socketPath(o.home);
  const limit = o.timeoutMs ?? 5000;
  const deadline = Date.now() + limit;
  let delay = 10;
  for (;;) {
    if (spawnError) {
      throw new HubError(ClientErrorCodes.StartFailed, `cannot run ${o.binary}: ${spawnError.message}`, {
        hint: "Set hub.binary (or HUB_BIN) to the hub binary, or put hub on PATH.",
      });
    }
    try {
      const s = await dial(sock, Math.max(100, deadline - Date.now()));
      s.destroy();
      return;
    } catch {
      // not yet listening
    }
    // A daemon that lost the race to another exits at once while the winner
    // comes up; give the socket a moment after an exit before giving up.
    if (Date.now() >= deadline || (exited !== undefined && Date.now() - exitedAt > 1000)) {
      const why = exited !== undefined ? `\`${o.binary} serve\` exited with ${exited}` : `the hub daemon did not answer within ${limit} ms`;
      const t = tail(logFile);
      throw new HubError(ClientErrorCodes.StartFailed, why, {
        hint: `See ${logFile}${t ? `:\n${t}` : "."}`,
      });
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 100);
  }
}

export interface EnsureOptions extends StartOptions {
  /** Start the daemon when none answers. */
  autoStart: boolean;
}

/**
 * daemonUp makes sure a daemon answers on home's socket: it dials, and when
 * nothing answers starts one (autoStart) or rejects with notRunning's
 * DaemonAbsent.
 */
export async function daemonUp(o: EnsureOptions): Promise<void> {
  try {
    const s = await dial(socketPath(o.home), 1000);
    s.destroy();
    return;
  } catch (err) {
    if (!(err instanceof HubError) || err.code !== ClientErrorCodes.DaemonAbsent) {
      throw err;
    }
  }
  if (!o.autoStart) {
    throw notRunning();
  }
  await startDaemon(o);
}

/**
 * notRunning is the error shown when no daemon answers and none is started
 * (autoStart off, or a daemon stopped on purpose). It says what is true: any
 * hub command starts the daemon; `hub serve` is not needed.
 */
export function notRunning(): HubError {
  return new HubError(ClientErrorCodes.DaemonAbsent, "hub is not running", { hint: notRunningHint });
}
