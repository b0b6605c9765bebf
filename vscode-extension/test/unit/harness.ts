// A real hub for the unit tests: a temp dir with HUB_HOME and HOME inside, a
// `hub serve` child in the foreground, a git repository with one commit, and
// the hub CLI run against them. No stubs: every test talks to the real binary.

import { execFile, spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { dial } from "../../src/protocol/client";
import { socketPath } from "../../src/protocol/paths";

/** HUB_BIN, or bin/hub of this repository. */
export const hubBin = process.env.HUB_BIN || path.resolve(__dirname, "../../../bin/hub");

/** requireHub fails loudly when the binary is missing: these tests never skip. */
export function requireHub(): void {
  if (!fs.existsSync(hubBin)) {
    throw new Error(`hub binary not found at ${hubBin}: build it (cd the repo root && go build -o bin/hub ./cmd/hub) or set HUB_BIN`);
  }
}

/** until polls cond every few ms until it holds, or fails after timeoutMs. */
export async function until<T>(what: string, cond: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) {
      return v;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

function run(file: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { ...opts, timeout: 30000 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`${path.basename(file)} ${args.join(" ")}: ${err.message}\n${stderr}`));
      } else {
        resolve(stdout);
      }
    });
  });
}

/** pidsWithEnv lists the processes whose environment holds KEY=value (Linux). */
function pidsWithEnv(entry: string): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) {
      continue;
    }
    try {
      const env = fs.readFileSync(`/proc/${name}/environ`, "utf8").split("\0");
      if (env.includes(entry)) {
        out.push(Number(name));
      }
    } catch {
      // gone, or not ours
    }
  }
  return out;
}

export class Sandbox {
  readonly home: string;
  readonly userHome: string;
  readonly repo: string;
  readonly env: NodeJS.ProcessEnv;
  private readonly daemons: ChildProcess[] = [];
  private serves = 0;

  private constructor(readonly dir: string) {
    this.home = path.join(dir, "hub");
    this.userHome = path.join(dir, "home");
    this.repo = path.join(dir, "repo");
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of Object.keys(env)) {
      if (k.startsWith("HUB_") || k.startsWith("GIT_") || k.startsWith("XDG_")) {
        delete env[k];
      }
    }
    this.env = {
      ...env,
      HUB_HOME: this.home,
      HOME: this.userHome,
      GIT_AUTHOR_NAME: "hub test",
      GIT_AUTHOR_EMAIL: "test@hub.invalid",
      GIT_COMMITTER_NAME: "hub test",
      GIT_COMMITTER_EMAIL: "test@hub.invalid",
      GIT_CONFIG_NOSYSTEM: "1",
    };
  }

  /** create makes the temp dir and a git repository with one commit. */
  static async create(): Promise<Sandbox> {
    requireHub();
    const s = new Sandbox(fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hub-vscode-"))));
    fs.mkdirSync(s.userHome, { recursive: true });
    fs.mkdirSync(s.repo, { recursive: true });
    fs.writeFileSync(path.join(s.repo, "README.md"), "# sample\n");
    fs.writeFileSync(path.join(s.repo, "keep.txt"), "one\ntwo\n");
    await s.git("init", "-q", "-b", "main");
    await s.git("add", ".");
    await s.git("commit", "-q", "-m", "first");
    return s;
  }

  get socket(): string {
    return socketPath(this.home);
  }

  git(...args: string[]): Promise<string> {
    return run("git", args, { cwd: this.repo, env: this.env });
  }

  /** hub runs the CLI in the repository and returns its stdout. */
  hub(...args: string[]): Promise<string> {
    return run(hubBin, args, { cwd: this.repo, env: this.env });
  }

  /** serve runs `hub serve` in the foreground as a child and waits for its socket. */
  async serve(): Promise<ChildProcess> {
    fs.mkdirSync(this.home, { recursive: true, mode: 0o700 });
    const log = fs.openSync(path.join(this.dir, `serve-${++this.serves}.log`), "a");
    const child = spawn(hubBin, ["serve"], { env: this.env, stdio: ["ignore", log, log] });
    fs.closeSync(log);
    this.daemons.push(child);
    let exited: number | null | undefined;
    child.on("exit", (code) => (exited = code));
    await until("hub serve to listen", async () => {
      if (exited !== undefined) {
        throw new Error(`hub serve exited with ${exited}; see ${this.dir}/serve-${this.serves}.log`);
      }
      try {
        (await dial(this.socket, 500)).destroy();
        return true;
      } catch {
        return false;
      }
    }, 10000);
    return child;
  }

  /** startJob starts an exec job from the CLI and returns its id. */
  async startJob(task: string, exec: string, ...extra: string[]): Promise<string> {
    const out = await this.hub("start", "--repo", this.repo, "--task", task, "--engine", "exec", "--exec", exec, ...extra);
    const id = out.trim().split(/\s+/)[0];
    if (!/^[a-z0-9]+$/.test(id)) {
      throw new Error(`hub start printed ${JSON.stringify(out)}`);
    }
    return id;
  }

  /** shutdown stops the daemon with `hub shutdown` and waits for the foreground ones to exit. */
  async shutdown(): Promise<void> {
    await this.hub("shutdown").catch(() => undefined);
    await Promise.all(this.daemons.map((d) => exitOf(d, 5000)));
  }

  /** waitJobsGone waits until no process of this HUB_HOME runs (shims included). */
  async waitJobsGone(timeoutMs = 15000): Promise<void> {
    const mark = `HUB_HOME=${this.home}`;
    await until("the processes of this HUB_HOME to exit", () => pidsWithEnv(mark).length === 0, timeoutMs);
  }

  /**
   * cleanup stops what is still running, waits for every job to end and every
   * process of this HUB_HOME (daemons, shims, workers) to exit, then removes the dir.
   */
  async cleanup(): Promise<void> {
    try {
      const out = await this.hub("jobs", "--json", "--limit", "1000").catch(() => "");
      const jobs: { id: string; state: string }[] = out ? (JSON.parse(out).jobs ?? []) : [];
      const ended = new Set(["succeeded", "failed", "cancelled", "timed_out"]);
      for (const j of jobs.filter((j) => !ended.has(j.state))) {
        await this.hub("stop", j.id).catch(() => undefined);
      }
      await until("every job to end", async () => {
        const o = await this.hub("jobs", "--json", "--limit", "1000");
        return (JSON.parse(o).jobs ?? []).every((j: { state: string }) => ended.has(j.state));
      }, 20000).catch(() => undefined);
      await this.shutdown();
    } finally {
      for (const d of this.daemons) {
        if (d.exitCode === null && d.signalCode === null) {
          d.kill("SIGKILL");
        }
      }
      // Shims and daemons the CLI started run detached: wait for them, by their environment.
      const mark = `HUB_HOME=${this.home}`;
      await until("the processes of this HUB_HOME to exit", () => pidsWithEnv(mark).length === 0, 10000).catch(() => {
        for (const pid of pidsWithEnv(mark)) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      });
      fs.rmSync(this.dir, { recursive: true, force: true, maxRetries: 5 });
    }
  }
}

function exitOf(c: ChildProcess, timeoutMs: number): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) {
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      c.kill("SIGKILL");
      resolve();
    }, timeoutMs);
    c.once("exit", () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** median of a list of numbers. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
