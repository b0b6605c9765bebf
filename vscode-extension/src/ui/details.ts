// The job details view: one webview panel ("Hub: <id>") showing a job's
// summary, files, verify, rubric, cost, timings, questions and trace. It
// reads job/result (with the evidence), job/files, job/trace (its first
// traceLimit steps, from a daemon that has it) and the job's journal (for the
// questions, from the last cursor read on), and reads them again when the job
// changes. Clicking a job in the tree, or Hub: Show Job Details, opens it;
// the panel follows the job it was last pointed at.

import * as vscode from "vscode";

import { buildDetails, DetailsCommands, QuestionHistory, renderDetails, type DetailsInput } from "../model/details";
import { Coalesce } from "../model/coalesce";
import type { Session } from "../model/session";
import { errorText } from "../protocol/errors";
import { Capabilities, Methods } from "../protocol/generated";

/** How long to wait after a change before reading again (changes come in bursts). */
const settleMs = 150;

/** How many trace steps the page shows; the rest are for hub trace. */
const traceLimit = 500;

export class JobDetails implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private jobId: string | undefined;
  private history = new QuestionHistory();
  /** The last job/result and job/files read for the job, shown when a read fails (disconnected). */
  private last: Pick<DetailsInput, "result" | "files" | "trace"> = {};
  private readonly reread = new Coalesce(settleMs, () => void this.read());
  private reading: Promise<void> | undefined;
  private again = false;
  private readonly subscriptions: { dispose(): void }[];

  constructor(private readonly session: Session, private readonly log: (line: string) => void) {
    this.subscriptions = [
      session.model.onDidChange((e) => {
        if (this.jobId && (e.changed.includes(this.jobId) || e.connection)) {
          this.reread.ask();
        }
      }),
    ];
  }

  dispose(): void {
    this.reread.dispose();
    this.subscriptions.forEach((s) => s.dispose());
    this.panel?.dispose();
  }

  /** show opens (or reveals) the panel on a job and reads it now. */
  async show(jobId: string, preserveFocus = false): Promise<void> {
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(
        "hub.details",
        `Hub: ${jobId}`,
        { viewColumn: vscode.ViewColumn.Active, preserveFocus },
        { enableScripts: false, enableFindWidget: true, enableCommandUris: [...DetailsCommands] },
      );
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.jobId = undefined;
      });
    } else {
      this.panel.reveal(undefined, preserveFocus);
    }
    if (this.jobId !== jobId) {
      this.jobId = jobId;
      this.history = new QuestionHistory();
      this.last = {};
      this.panel.title = `Hub: ${jobId}`;
    }
    await this.read();
  }

  /** read reads the job and renders it; reads never overlap (one more follows if asked meanwhile). */
  private read(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = this.readOnce().finally(() => {
      this.reading = undefined;
      if (this.again) {
        this.again = false;
        this.reread.ask();
      }
    });
    return this.reading;
  }

  private async readOnce(): Promise<void> {
    const id = this.jobId;
    const panel = this.panel;
    if (!id || !panel) {
      return;
    }
    const status = this.session.model.get(id);
    if (!status) {
      panel.webview.html = page(`Job ${id} is not in hub's list.`);
      return;
    }
    const input: DetailsInput = { status };
    const problems: string[] = [];
    const history = this.history;
    const last = this.last;
    await Promise.all([
      this.session.request(Methods.JobResult, { id, evidence: true }).then(
        (r) => (input.result = r),
        (err: unknown) => problems.push(`job/result: ${errorText(err)}`),
      ),
      status.kind === "read"
        ? undefined
        : this.session.request(Methods.JobFiles, { id }).then(
            (r) => (input.files = r),
            (err: unknown) => problems.push(`job/files: ${errorText(err)}`),
          ),
      this.readQuestions(id, history).catch((err: unknown) => problems.push(`job/events: ${errorText(err)}`)),
      !this.session.supports(Capabilities.Trace)
        ? undefined
        : this.session.request(Methods.JobTrace, { id, limit: traceLimit }).then(
            (r) => (input.trace = r),
            (err: unknown) => problems.push(`job/trace: ${errorText(err)}`),
          ),
    ]);
    if (this.jobId !== id || this.panel !== panel) {
      return; // pointed at another job meanwhile
    }
    // The freshest status: the job may have moved while we read.
    input.status = this.session.model.get(id) ?? status;
    input.canLand = this.session.supports(Capabilities.Land);
    input.questions = history.entries();
    // What failed to read shows as it was last read.
    input.result ??= last.result;
    input.files ??= last.files;
    input.trace ??= last.trace;
    this.last = { result: input.result, files: input.files, trace: input.trace };
    if (problems.length) {
      const connected = this.session.model.connected;
      input.problem = connected ? `Could not read everything: ${problems.join("; ")}` : "Disconnected: this is what was last read.";
      this.log(`details ${id}: ${problems.join("; ")}`);
    }
    panel.webview.html = renderDetails(buildDetails(input), panel.webview.cspSource);
  }

  /** readQuestions reads the job's journal on from the history's cursor. */
  private async readQuestions(id: string, history: QuestionHistory): Promise<void> {
    for (let page = 0; page < 50; page++) {
      const r = await this.session.request(Methods.JobEvents, { id, since: history.cursor, limit: 500 });
      history.take(r.events ?? []);
      history.cursor = Math.max(history.cursor, r.cursor);
      if ((r.events ?? []).length < 500) {
        return;
      }
    }
  }
}

function page(text: string): string {
  return `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline';"></head><body style="font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 20px">${text.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]!)}</body></html>`;
}
