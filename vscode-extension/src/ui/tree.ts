// The Jobs tree: groups by state, jobs, and under each job its question, its
// verify outcome, its changed files and its commits (read with job/files when
// the job is expanded). Reads the JobModel; never holds job state itself.

import * as vscode from "vscode";

import { Coalesce } from "../model/coalesce";
import * as fmt from "../model/format";
import { contextValue, isTerminal, type GroupName } from "../model/jobs";
import type { Session } from "../model/session";
import { errorText } from "../protocol/errors";
import { Methods, type Commit, type Conflict, type FileChange, type FilesResult, type JobStatus, type Landing } from "../protocol/generated";
import { jobFileUri } from "./uris";

export class GroupNode {
  readonly kind = "group";
  constructor(readonly name: GroupName) {}
}

export class JobNode {
  readonly kind = "job";
  constructor(readonly jobId: string) {}
}

export class QuestionNode {
  readonly kind = "question";
  constructor(readonly jobId: string, readonly text: string) {}
}

export class VerifyNode {
  readonly kind = "verify";
  constructor(readonly jobId: string, readonly exit: number) {}
}

/** ConflictNode is one conflict hub predicts for landing the job. */
export class ConflictNode {
  readonly kind = "conflict";
  constructor(readonly jobId: string, readonly conflict: Conflict, readonly index: number) {}
}

/** LandedNode says where the job's work landed. */
export class LandedNode {
  readonly kind = "landed";
  constructor(readonly jobId: string, readonly landed: Landing) {}
}

export class FileNode {
  readonly kind = "file";
  constructor(readonly jobId: string, readonly file: FileChange) {}
}

export class CommitsNode {
  readonly kind = "commits";
  constructor(readonly jobId: string, readonly commits: Commit[]) {}
}

export class CommitNode {
  readonly kind = "commit";
  constructor(readonly jobId: string, readonly commit: Commit) {}
}

export class InfoNode {
  readonly kind = "info";
  constructor(readonly jobId: string, readonly text: string, readonly icon = "info") {}
}

export type Node = GroupNode | JobNode | QuestionNode | VerifyNode | ConflictNode | LandedNode | FileNode | CommitsNode | CommitNode | InfoNode;

const warningColor = () => new vscode.ThemeColor("notificationsWarningIcon.foreground");

function stateIcon(j: JobStatus): vscode.ThemeIcon {
  // Landing outranks the state word for an ended job: landed, or a
  // success that would not land cleanly.
  if (j.landed) {
    return new vscode.ThemeIcon("git-merge", new vscode.ThemeColor("testing.iconPassed"));
  }
  if (j.state === "succeeded" && fmt.conflicts(j).length > 0) {
    return new vscode.ThemeIcon("warning", warningColor());
  }
  switch (j.state) {
    case "needs_input":
      return new vscode.ThemeIcon("question", warningColor());
    case "queued":
      return new vscode.ThemeIcon("clock");
    case "preparing":
    case "running":
    case "verifying":
      return new vscode.ThemeIcon("sync~spin");
    case "succeeded":
      return new vscode.ThemeIcon("pass", new vscode.ThemeColor("testing.iconPassed"));
    case "cancelled":
      return new vscode.ThemeIcon("circle-slash");
    default:
      return new vscode.ThemeIcon("error", new vscode.ThemeColor("testing.iconFailed"));
  }
}

export class JobsTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<Node | Node[] | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;

  private readonly groupNodes = new Map<string, GroupNode>();
  private readonly jobNodes = new Map<string, JobNode>();
  /** job/files answers by job, with the job cursor they were read at. */
  private readonly files = new Map<string, { cursor: number; result: Promise<FilesResult> }>();
  /** The last job/files answer that arrived, by job. */
  private readonly lastFiles = new Map<string, FilesResult>();
  private readonly disposables: { dispose(): void }[] = [];
  private readonly redraw = new Coalesce(30, () => this.changeEmitter.fire(undefined));
  private readonly ticker: NodeJS.Timeout;

  constructor(private readonly session: Session) {
    this.disposables.push(session.model.onDidChange(() => this.redraw.ask()));
    // Elapsed times of active jobs tick once a second.
    this.ticker = setInterval(() => this.tick(), 1000);
  }

  dispose(): void {
    clearInterval(this.ticker);
    this.redraw.dispose();
    this.disposables.forEach((d) => d.dispose());
    this.changeEmitter.dispose();
  }

  /** refresh redraws the whole tree and forgets the files read. */
  refresh(): void {
    this.files.clear();
    this.changeEmitter.fire(undefined);
  }

  /** filesOf returns a job's job/files answer, read once per job cursor. */
  filesOf(jobId: string): Promise<FilesResult> {
    const cursor = this.session.model.get(jobId)?.cursor ?? -1;
    const hit = this.files.get(jobId);
    if (hit && hit.cursor === cursor) {
      return hit.result;
    }
    const last = this.lastFiles.get(jobId);
    const result = this.session.request(Methods.JobFiles, { id: jobId }).then(
      (r) => {
        this.lastFiles.set(jobId, r);
        return r;
      },
      (err: unknown) => {
        this.files.delete(jobId);
        // Disconnected: keep showing what was last read.
        if (last && !this.session.model.connected) {
          return last;
        }
        throw err;
      },
    );
    this.files.set(jobId, { cursor, result });
    return result;
  }

  getTreeItem(n: Node): vscode.TreeItem {
    switch (n.kind) {
      case "group": {
        const g = this.session.model.groups().find((g) => g.name === n.name);
        const item = new vscode.TreeItem(n.name, vscode.TreeItemCollapsibleState.Expanded);
        item.id = `group:${n.name}`;
        item.description = String(g?.jobs.length ?? 0);
        item.contextValue = "group";
        return item;
      }
      case "job": {
        const j = this.session.model.get(n.jobId);
        if (!j) {
          return new vscode.TreeItem(n.jobId);
        }
        const item = new vscode.TreeItem(fmt.taskLabel(j.task), vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `job:${j.id}`;
        item.description = fmt.description(j, this.session.model.elapsedMs(j.id));
        item.tooltip = fmt.tooltip(j);
        item.contextValue = contextValue(j);
        item.iconPath = stateIcon(j);
        // A click shows the details; the twistie expands the row.
        item.command = { command: "hub.showDetails", title: "Show Job Details", arguments: [n] };
        return item;
      }
      case "question": {
        const item = new vscode.TreeItem(fmt.questionLabel(n.text), vscode.TreeItemCollapsibleState.None);
        item.id = `question:${n.jobId}`;
        item.tooltip = n.text;
        item.contextValue = "question";
        item.iconPath = new vscode.ThemeIcon("comment-discussion");
        item.command = { command: "hub.answer", title: "Answer", arguments: [n] };
        return item;
      }
      case "verify": {
        const item = new vscode.TreeItem(fmt.verifyLabel(n.exit), vscode.TreeItemCollapsibleState.None);
        item.id = `verify:${n.jobId}`;
        item.contextValue = "verify";
        item.iconPath = new vscode.ThemeIcon(n.exit === 0 ? "check" : "x");
        return item;
      }
      case "conflict": {
        const c = n.conflict;
        const item = new vscode.TreeItem(fmt.conflictText(c), vscode.TreeItemCollapsibleState.None);
        item.id = `conflict:${n.jobId}:${n.index}`;
        const at = this.session.model.get(n.jobId)?.forecast?.at;
        item.tooltip = `Predicted: landing this job ${c.with === "target" ? `onto ${c.branch}` : `together with ${c.branch}`} would leave these files in conflict:\n${(c.files ?? []).join("\n")}${at ? `\n(hub's forecast at ${at})` : ""}`;
        item.contextValue = "conflict";
        item.iconPath = new vscode.ThemeIcon("warning", warningColor());
        return item;
      }
      case "landed": {
        const l = n.landed;
        const item = new vscode.TreeItem(`Landed on ${l.into}`, vscode.TreeItemCollapsibleState.None);
        item.id = `landed:${n.jobId}`;
        // How it was checked is a command line: the tooltip has it, the row has no room.
        item.description = `${fmt.sha7(l.commit)} · ${l.mode}`;
        item.tooltip = `${l.into}: ${fmt.sha7(l.from)} → ${fmt.sha7(l.commit)} (the job's ${fmt.sha7(l.head)}, ${l.mode}) at ${l.at}${l.verified ? `\nchecked: ${l.verified}` : ""}`;
        item.contextValue = "landed";
        item.iconPath = new vscode.ThemeIcon("git-merge", new vscode.ThemeColor("testing.iconPassed"));
        return item;
      }
      case "file": {
        const f = n.file;
        const item = new vscode.TreeItem(f.path, vscode.TreeItemCollapsibleState.None);
        item.id = `file:${n.jobId}:${f.path}`;
        item.description = fmt.diffstat(f);
        item.tooltip = f.old_path ? `${f.change}: ${f.old_path} → ${f.path}` : `${f.change}: ${f.path}`;
        item.contextValue = "file";
        item.resourceUri = jobFileUri(n.jobId, "head", f.path);
        item.command = { command: "hub.openDiff", title: "Open Diff", arguments: [n] };
        return item;
      }
      case "commits": {
        const item = new vscode.TreeItem(`Commits (${n.commits.length})`, vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `commits:${n.jobId}`;
        item.contextValue = "commits";
        item.iconPath = new vscode.ThemeIcon("git-commit");
        return item;
      }
      case "commit": {
        const c = n.commit;
        const item = new vscode.TreeItem(fmt.commitLabel(c.sha, c.subject), vscode.TreeItemCollapsibleState.None);
        item.id = `commit:${n.jobId}:${c.sha}`;
        item.tooltip = `${c.sha}\n${c.author}${c.by_hub ? "\ncommitted by hub" : ""}${c.salvage ? " (salvage)" : ""}`;
        item.contextValue = "commit";
        return item;
      }
      case "info": {
        const item = new vscode.TreeItem(n.text, vscode.TreeItemCollapsibleState.None);
        item.contextValue = "info";
        item.iconPath = new vscode.ThemeIcon(n.icon);
        return item;
      }
    }
  }

  async getChildren(n?: Node): Promise<Node[]> {
    if (!n) {
      return this.session.model.groups().map((g) => this.group(g.name));
    }
    switch (n.kind) {
      case "group":
        return (this.session.model.groups().find((g) => g.name === n.name)?.jobs ?? []).map((j) => this.job(j.id));
      case "job":
        return this.jobChildren(n.jobId);
      case "commits":
        return n.commits.map((c) => new CommitNode(n.jobId, c));
      default:
        return [];
    }
  }

  getParent(n: Node): Node | undefined {
    switch (n.kind) {
      case "group":
        return undefined;
      case "job": {
        const j = this.session.model.get(n.jobId);
        const g = j && this.session.model.groups().find((g) => g.jobs.some((x) => x.id === j.id));
        return g ? this.group(g.name) : undefined;
      }
      case "commit":
        return undefined;
      default:
        return this.job(n.jobId);
    }
  }

  private async jobChildren(id: string): Promise<Node[]> {
    const j = this.session.model.get(id);
    if (!j) {
      return [];
    }
    const out: Node[] = [];
    const q = this.session.model.question(id);
    if (q) {
      out.push(new QuestionNode(id, q.text));
    }
    if (j.verify_exit !== undefined && j.verify_exit !== null) {
      out.push(new VerifyNode(id, j.verify_exit));
    }
    if (j.landed) {
      out.push(new LandedNode(id, j.landed));
    }
    fmt.conflicts(j).forEach((c, i) => out.push(new ConflictNode(id, c, i)));
    if (j.kind === "read") {
      return out;
    }
    try {
      const r = await this.filesOf(id);
      out.push(...(r.files ?? []).map((f) => new FileNode(id, f)));
      if ((r.commits ?? []).length > 0) {
        out.push(new CommitsNode(id, r.commits));
      }
      if ((r.files ?? []).length === 0 && (r.commits ?? []).length === 0 && isTerminal(j.state)) {
        out.push(new InfoNode(id, "No changes"));
      }
    } catch (err) {
      out.push(new InfoNode(id, errorText(err), "warning"));
    }
    return out;
  }

  private group(name: GroupName): GroupNode {
    let g = this.groupNodes.get(name);
    if (!g) {
      g = new GroupNode(name);
      this.groupNodes.set(name, g);
    }
    return g;
  }

  private job(id: string): JobNode {
    let n = this.jobNodes.get(id);
    if (!n) {
      n = new JobNode(id);
      this.jobNodes.set(id, n);
    }
    return n;
  }

  private tick(): void {
    if (!this.session.model.connected || this.redraw.pending) {
      return;
    }
    const active: Node[] = [];
    for (const j of this.session.model.all()) {
      const n = this.jobNodes.get(j.id);
      if (n && !isTerminal(j.state) && j.state !== "queued") {
        active.push(n);
      }
    }
    if (active.length > 0) {
      this.changeEmitter.fire(active);
    }
  }
}
