// The hub.* commands: what the palette, the view's title bar and the job
// context menu run. Each takes the node it was invoked on, a job id, or
// nothing (then it asks which job).

import * as vscode from "vscode";

import { diffTitle, landReport, mergeError, taskLabel, transientMs } from "../model/format";
import { isTerminal, landable, landBatches } from "../model/jobs";
import type { Session } from "../model/session";
import { errorText, isHubError } from "../protocol/errors";
import { Capabilities, Methods, type FileChange, type JobStatus, type LandParams, type StartParams } from "../protocol/generated";
import type { JobDetails } from "./details";
import type { JobLogs } from "./logs";
import type { Questions } from "./questions";
import type { ReviewPanel } from "./review";
import { FileNode, type JobsTree } from "./tree";
import { baseAtHeadPath, jobFileUri } from "./uris";

export interface CommandDeps {
  session: Session;
  tree: JobsTree;
  questions: Questions;
  logs: JobLogs;
  details: JobDetails;
  review: ReviewPanel;
  log(line: string): void;
}

/** jobIdOf takes the job id out of a command argument. */
function jobIdOf(arg: unknown): string | undefined {
  if (typeof arg === "string") {
    return arg;
  }
  if (arg && typeof arg === "object" && "jobId" in arg && typeof (arg as { jobId: unknown }).jobId === "string") {
    return (arg as { jobId: string }).jobId;
  }
  return undefined;
}

export function registerCommands(d: CommandDeps): vscode.Disposable[] {
  const { session } = d;

  /** pickJob resolves the job a command acts on, asking when the argument does not say. */
  async function pickJob(arg: unknown, title: string, want: (j: JobStatus) => boolean): Promise<string | undefined> {
    const id = jobIdOf(arg);
    if (id) {
      return id;
    }
    const jobs = session.model.all().filter(want);
    if (jobs.length === 0) {
      void vscode.window.showInformationMessage(`Hub: no job to ${title.toLowerCase()}.`);
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(
      jobs.map((j) => ({ label: taskLabel(j.task), description: `${j.id} · ${j.state}`, id: j.id })),
      { placeHolder: `${title}: which job?` },
    );
    return pick?.id;
  }

  /** run calls fn and shows its failure, message and hint, as an error. */
  async function run(what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      d.log(`${what}: ${errorText(err)}`);
      void vscode.window.showErrorMessage(`Hub: ${what} failed: ${errorText(err)}`);
    }
  }

  async function openDiff(jobId: string, f: FileChange): Promise<void> {
    const base = jobFileUri(jobId, "base", f.old_path || f.path);
    const head = jobFileUri(jobId, "head", f.path);
    await vscode.commands.executeCommand("vscode.diff", base, head, diffTitle(jobId, f.path), { preview: true });
  }

  /**
   * land calls job/land (once it knows the daemon lands jobs) while the
   * window shows progress (the checks may take minutes), then shows the
   * result's line as a transient message and each job that did not land as
   * an error with its reason.
   */
  async function land(p: LandParams, what: string): Promise<void> {
    try {
      await session.need(Capabilities.Land, "land jobs");
      const r = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: `Hub: landing ${what}…` },
        () => session.act(Methods.JobLand, p),
      );
      const { line, failures } = landReport(r);
      d.log(`land ${p.ids.join(" ")}: ${r.line}`);
      vscode.window.setStatusBarMessage(line, transientMs);
      for (const f of failures) {
        d.log(f);
        void vscode.window.showErrorMessage(f);
      }
    } catch (err) {
      d.log(`land ${p.ids.join(" ")}: ${errorText(err)}`);
      void vscode.window.showErrorMessage(`Hub: cannot land ${what}: ${errorText(err)}`);
    }
  }

  const active = (j: JobStatus) => !isTerminal(j.state);
  const ended = (j: JobStatus) => isTerminal(j.state);
  const any = () => true;

  const commands: Record<string, (...args: unknown[]) => unknown> = {
    "hub.refresh": () =>
      run("refresh", async () => {
        d.tree.refresh();
        await session.refresh();
      }),

    "hub.answer": (arg) => d.questions.answer(jobIdOf(arg)),

    "hub.showDetails": async (arg) => {
      const id = await pickJob(arg, "Show the details of", any);
      if (id) {
        await run("show details", () => d.details.show(id));
      }
    },

    "hub.startHub": () =>
      run("start hub", async () => {
        await session.startHub();
        vscode.window.setStatusBarMessage("Hub: connected", transientMs);
      }),

    "hub.startJob": () =>
      run("start job", async () => {
        const repo = await pickRepo();
        if (!repo) {
          return;
        }
        const task = await vscode.window.showInputBox({
          title: "Hub: Start Job (1/3)",
          prompt: "What should the worker do?",
          placeHolder: "Task",
          ignoreFocusOut: true,
          validateInput: (v) => (v.trim() === "" ? "A task is required" : undefined),
        });
        if (task === undefined) {
          return;
        }
        const verify = await vscode.window.showInputBox({
          title: "Hub: Start Job (2/3)",
          prompt: "Shell command that checks the result on the job's commit (empty: none)",
          placeHolder: "e.g. go test ./...",
          ignoreFocusOut: true,
        });
        if (verify === undefined) {
          return;
        }
        const engines = await session.act(Methods.EngineList, {});
        const items: (vscode.QuickPickItem & { engine: string })[] = [
          { label: "auto", description: "the router picks an engine that can take the job", engine: "auto" },
          ...(engines.engines ?? []).map((e) => ({
            label: e.name,
            description: e.available ? e.capacity || "" : `unavailable: ${e.reason ?? ""}`,
            engine: e.name,
          })),
        ];
        const pick = await vscode.window.showQuickPick(items, { title: "Hub: Start Job (3/3)", placeHolder: "Engine" });
        if (!pick) {
          return;
        }
        const p: StartParams = { task, repo };
        if (verify.trim() !== "") {
          p.verify = verify.trim();
        }
        if (pick.engine !== "auto") {
          p.engine = pick.engine;
        }
        if (pick.engine === "exec") {
          const exec = await vscode.window.showInputBox({
            prompt: "Shell command the exec engine runs as the worker",
            ignoreFocusOut: true,
          });
          if (exec === undefined) {
            return;
          }
          p.exec = exec;
        }
        const r = await session.act(Methods.JobStart, p);
        const notes = (r.notes ?? []).length ? ` ${(r.notes ?? []).join(" ")}` : "";
        void vscode.window.showInformationMessage(
          `Hub: started job ${r.id}${r.branch ? ` on ${r.branch}` : ""} (${r.engine}).${notes}`,
        );
      }),

    "hub.steer": async (arg) => {
      const id = await pickJob(arg, "Steer", active);
      if (!id) {
        return;
      }
      const text = await vscode.window.showInputBox({
        prompt: `Message for job ${id}; it reaches the worker at its next step`,
        placeHolder: `Steer job ${id}`,
        ignoreFocusOut: true,
      });
      if (!text) {
        return;
      }
      await run("steer", async () => {
        await session.act(Methods.JobSteer, { id, text });
        vscode.window.setStatusBarMessage(`Hub: steering queued for job ${id}`, transientMs);
      });
    },

    "hub.stop": async (arg) => {
      const id = await pickJob(arg, "Stop", active);
      if (id) {
        await run("stop", async () => {
          const st = await session.act(Methods.JobStop, { id });
          session.model.apply(st);
        });
      }
    },

    "hub.cleanup": async (arg) => {
      const id = await pickJob(arg, "Clean up", ended);
      if (id) {
        await run("clean up", async () => {
          const r = await session.act(Methods.JobCleanup, { id });
          const kept = r.branch && !r.branch_deleted ? ` Branch ${r.branch} kept.` : "";
          void vscode.window.showInformationMessage(
            `Hub: job ${id} cleaned up${r.worktree_removed ? ": worktree removed." : " (no worktree left)."}${kept}`,
          );
        });
      }
    },

    "hub.merge": async (arg) => {
      const id = await pickJob(arg, "Merge", ended);
      if (!id) {
        return;
      }
      try {
        const r = await session.act(Methods.JobMerge, { id });
        const msg = r.already_merged
          ? `Hub: ${r.branch} is already merged into ${r.into}.`
          : `Hub: merged ${r.branch} into ${r.into} (${r.commit.slice(0, 7)}).`;
        void vscode.window.showInformationMessage(msg);
      } catch (err) {
        void vscode.window.showErrorMessage(mergeError(id, err));
        d.log(`merge ${id}: ${errorText(err)}${isHubError(err) && err.files.length ? `\n  ${err.files.join("\n  ")}` : ""}`);
      }
    },

    "hub.land": async (arg) => {
      const id = await pickJob(arg, "Land", (j) => isTerminal(j.state) && j.kind !== "read" && !!j.branch && !j.landed);
      if (id) {
        await land({ ids: [id] }, `job ${id}`);
      }
    },

    "hub.landAll": async () => {
      // Every ended job that succeeded and has work to land; failed and
      // cancelled ones are landed one by one, on purpose.
      const jobs = session.model.all().filter((j) => landable(j) && j.state === "succeeded").reverse();
      if (jobs.length === 0) {
        void vscode.window.showInformationMessage("Hub: no ended job waits to land.");
        return;
      }
      for (const batch of landBatches(jobs)) {
        await land({ ids: batch.map((j) => j.id), order: "auto" }, batch.length === 1 ? `job ${batch[0].id}` : `${batch.length} jobs`);
      }
    },

    "hub.review": () => run("review", () => d.review.show()),

    "hub.openDiff": (arg, file) =>
      run("open diff", async () => {
        if (arg instanceof FileNode) {
          await openDiff(arg.jobId, arg.file);
          return;
        }
        const id = jobIdOf(arg);
        if (id && file && typeof file === "object" && "path" in file) {
          await openDiff(id, file as FileChange);
          return;
        }
        throw new Error("pick a file of a job in the Hub view");
      }),

    "hub.openAllChanges": async (arg) => {
      const id = await pickJob(arg, "Open changes of", any);
      if (!id) {
        return;
      }
      await run("open all changes", async () => {
        const r = await session.act(Methods.JobFiles, { id });
        const files = r.files ?? [];
        if (files.length === 0) {
          void vscode.window.showInformationMessage(`Hub: job ${id} changed no files.`);
          return;
        }
        const resources = files.map((f) => {
          const head = jobFileUri(id, "head", f.path);
          return [head, baseAtHeadPath(id, f.old_path || f.path), head];
        });
        await vscode.commands.executeCommand("vscode.changes", `Hub ${id}: base ↔ head`, resources);
      });
    },

    "hub.showLog": async (arg) => {
      const id = await pickJob(arg, "Show the log of", any);
      if (id) {
        await run("show log", () => d.logs.show(id));
      }
    },
  };

  return Object.entries(commands).map(([name, fn]) => vscode.commands.registerCommand(name, fn));
}

async function pickRepo(): Promise<string | undefined> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length === 1) {
    return folders[0].uri.fsPath;
  }
  if (folders.length > 1) {
    const pick = await vscode.window.showWorkspaceFolderPick({ placeHolder: "Repository for the job" });
    return pick?.uri.fsPath;
  }
  return vscode.window.showInputBox({
    prompt: "Git repository for the job (no folder is open)",
    placeHolder: "/path/to/repo",
    ignoreFocusOut: true,
  });
}
