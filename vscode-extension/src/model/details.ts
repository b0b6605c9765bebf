// A job's details: what the details view shows, built from the job's status,
// its job/result (with the evidence), its job/files, its job/trace and the
// question events of its journal, and rendered as one HTML page themed by
// the editor's CSS variables. Pure (no vscode import): the unit tests cover
// both halves.

import type { Event, FileChange, FilesResult, JobStatus, Question, ResultResult, Rubric, TraceEntry, TraceResult } from "../protocol/generated";
import * as fmt from "./format";
import { isTerminal } from "./jobs";

/** QuestionEntry is one question of a job's history, with how it was settled. */
export interface QuestionEntry {
  id: string;
  kind: string;
  text: string;
  context?: string;
  askedAt: string;
  /** When it was answered or expired; undefined while pending. */
  settledAt?: string;
  /** true: nobody answered in time and the worker went on. */
  expired?: boolean;
}

/**
 * QuestionHistory folds a job's journal events into its questions, in the
 * order asked. Feed it pages of job/events; it keeps the cursor to read on from.
 */
export class QuestionHistory {
  private readonly byId = new Map<string, QuestionEntry>();
  /** The cursor of the last event taken. */
  cursor = 0;

  /** take folds events (any kinds, any order of pages) into the history. */
  take(events: readonly Event[]): void {
    for (const ev of events) {
      this.cursor = Math.max(this.cursor, ev.cursor);
      const d = (ev.data ?? {}) as Record<string, unknown>;
      if (ev.kind === "question") {
        const q = d as unknown as Partial<Question>;
        if (typeof q.id !== "string") {
          continue;
        }
        const old = this.byId.get(q.id);
        this.byId.set(q.id, {
          ...old,
          id: q.id,
          kind: typeof q.kind === "string" && q.kind ? q.kind : "question",
          text: typeof q.text === "string" ? q.text : ev.text ?? "",
          context: typeof q.context === "string" && q.context ? q.context : undefined,
          askedAt: typeof q.asked_at === "string" ? q.asked_at : ev.at,
        });
      } else if (ev.kind === "answer" && typeof d.question_id === "string") {
        const old = this.byId.get(d.question_id);
        this.byId.set(d.question_id, {
          id: d.question_id,
          kind: old?.kind ?? "question",
          text: old?.text ?? "",
          context: old?.context,
          askedAt: old?.askedAt ?? ev.at,
          settledAt: ev.at,
          expired: d.expired === true,
        });
      }
    }
  }

  /** entries lists the questions, oldest first. */
  entries(): QuestionEntry[] {
    return [...this.byId.values()].sort((a, b) => Date.parse(a.askedAt) - Date.parse(b.askedAt));
  }
}

/** What the details view is built from; everything but the status may be missing. */
export interface DetailsInput {
  status: JobStatus;
  result?: ResultResult;
  files?: FilesResult;
  questions?: QuestionEntry[];
  /** Its trace (job/trace), or its first page. */
  trace?: TraceResult;
  /** Why a read failed, shown instead of what it would have given. */
  problem?: string;
  /** The daemon lands jobs (its "land" capability): the page offers Land. */
  canLand?: boolean;
}

export type Tone = "ok" | "bad" | "warn" | "plain";

/** Details is the view's content, section by section. */
export interface Details {
  id: string;
  title: string;
  task: string;
  /** "succeeded · verified", "running", … */
  headline: string;
  tone: Tone;
  /** id, branch, engine, model, repo, base, head, isolation */
  facts: [string, string][];
  summary?: string;
  error?: string;
  /** What the job did beyond its branch, a line each with the command that puts it back. */
  alerts: string[];
  files: FileChange[];
  verify?: { command: string; outcome: string; tone: Tone; duration: string; commit: string; outputTail: string };
  rubric?: { verdict: string; line: string; tone: Tone; graderError?: string; criteria: { id: string; status: string; tone: Tone; text: string; kind: string; by: string; evidence: string }[] };
  cost: [string, string][];
  timings: [string, string][];
  questions: { text: string; kind: string; context?: string; asked: string; settled: string; tone: Tone }[];
  /** The trace: hub's phases and the engine's steps, a row each, with its sums. */
  trace?: { rows: TraceRow[]; sums: string; more?: string };
  report?: string;
  notes: string[];
  problem?: string;
  /**
   * Landing: where the job's work would land and what hub predicts of it
   * (its forecast), or where it landed.
   */
  landing?: {
    /** "landed on main", "2 conflicts predicted", "no conflicts predicted" */
    headline: string;
    tone: Tone;
    rows: [string, string][];
    conflicts: { line: string; files: string[] }[];
  };
  ended: boolean;
  merge: boolean;
  /** The page offers Land: an ended write job with a branch, not landed, and a daemon that lands. */
  land: boolean;
  /** Its work landed: only the clean-up is left. */
  landed: boolean;
  /** A question waits for an answer. */
  answer: boolean;
}

function toneOfState(j: Pick<JobStatus, "state" | "verify_exit">): Tone {
  switch (j.state) {
    case "succeeded":
      return j.verify_exit !== undefined && j.verify_exit !== null && j.verify_exit !== 0 ? "bad" : "ok";
    case "failed":
    case "timed_out":
      return "bad";
    case "needs_input":
    case "cancelled":
      return "warn";
    default:
      return "plain";
  }
}

function statusTone(s: string): Tone {
  return s === "pass" || s === "satisfied" ? "ok" : s === "fail" || s === "failed" ? "bad" : s === "unknown" || s === "needs_revision" ? "warn" : "plain";
}

/** clock is an ISO time as HH:MM:SS (UTC), or the text itself when it is not one. */
export function clock(at: string | undefined): string {
  if (!at) {
    return "";
  }
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? at : `${d.toISOString().slice(11, 19)} UTC`;
}

/** ms formats a phase's milliseconds: "12 ms" under a second, "1.5s" under 10 s, else as elapsed does. */
export function ms(v: number): string {
  if (!Number.isFinite(v) || v < 0) {
    return "?";
  }
  if (v < 1000) {
    return `${Math.round(v)} ms`;
  }
  return v < 10_000 ? `${(v / 1000).toFixed(1)}s` : fmt.elapsed(v);
}

/** us formats a trace's microseconds as hub trace does: "0.85ms" under 10 ms, "12ms", "1.4s", "2m05s". */
export function us(v: number): string {
  if (!Number.isFinite(v) || v < 0) {
    return "?";
  }
  if (v === 0) {
    return "0ms";
  }
  if (v < 10_000) {
    return `${(v / 1000).toFixed(2)}ms`;
  }
  if (v < 1_000_000) {
    return `${Math.floor(v / 1000)}ms`;
  }
  if (v < 60_000_000) {
    return `${(v / 1_000_000).toFixed(1)}s`;
  }
  const s = Math.floor(v / 1_000_000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

/** TraceRow is one step of the trace table. */
export interface TraceRow {
  step: number;
  kind: string;
  name: string;
  /** How deep it nests: 0 for a phase, 1 for the run's steps, 2 for a role's. */
  depth: number;
  /** When it started, from the job's start: "+1.2s". */
  start: string;
  /** How long it took, with the gap its children left: "1.5s (gap 12ms)". */
  took: string;
  /** A model call's tokens in and out: "1000/50". */
  tokens: string;
  cost: string;
  /** Its arguments and result in one line, as hub bounded and redacted them. */
  summary: string;
  tone: Tone;
}

/** traceSummary is a step's arguments and result in one line, its exit code and failure first. */
function traceSummary(e: TraceEntry): string {
  const parts: string[] = [];
  if (e.failed) {
    parts.push("FAILED");
  }
  if (e.exit_code !== undefined && e.exit_code !== null) {
    parts.push(`exit ${e.exit_code}`);
  }
  const io = [e.args, e.result].filter((x) => x).join(" ⇒ ");
  if (io) {
    parts.push(io);
  }
  return parts.join(" · ");
}

/** traceOf turns a job/trace result into the table's rows and its sums. */
export function traceOf(t: TraceResult): NonNullable<Details["trace"]> {
  const entries = t.entries ?? [];
  const parent = new Map(entries.map((e) => [e.id, e.parent ?? ""]));
  const depth = (e: TraceEntry): number => {
    let n = 0;
    for (let p = e.parent ?? ""; p && n < entries.length; p = parent.get(p) ?? "") {
      n++;
    }
    return n;
  };
  const origin = Date.parse(t.started ?? entries[0]?.start ?? "");
  const rows = entries.map((e): TraceRow => {
    const offset = (Date.parse(e.start) - origin) * 1000;
    const isModel = e.kind === "model";
    return {
      step: e.step ?? 0,
      kind: e.kind,
      name: e.name,
      depth: depth(e),
      start: Number.isFinite(offset) ? `+${us(Math.max(offset, 0))}` : "",
      took: us(e.duration_us) + (e.gap_us ? ` (gap ${us(e.gap_us)})` : ""),
      tokens: isModel ? `${e.tokens_in ?? 0}/${e.tokens_out ?? 0}` : "",
      cost: isModel ? (e.cost_unknown ? "?" : `$${(e.usd ?? 0).toFixed(4)}`) : "",
      summary: traceSummary(e),
      tone: e.failed ? "bad" : "plain",
    };
  });
  const count = (kind: string) => entries.filter((e) => e.kind === kind).length;
  const sums = [`${count("model")} model calls, ${count("tool")} tool calls, ${count("command")} commands`];
  if (t.started) {
    sums.unshift(`running ${us(t.running_us)}, phases cover ${us(t.running_us - t.phase_gap_us)} (gap ${us(t.phase_gap_us)})`);
  }
  const more = t.next ? `steps ${entries[0]?.step ?? 1}–${t.next - 1} of ${t.total}; the rest: hub trace ${t.id} --from ${t.next}` : undefined;
  return { rows, sums: sums.join(" · "), more };
}

function rubricOf(r: Rubric): NonNullable<Details["rubric"]> {
  return {
    verdict: r.verdict.replace(/_/g, " "),
    line: r.line,
    tone: statusTone(r.verdict),
    graderError: r.grader_error || undefined,
    criteria: (r.criteria ?? []).map((c) => ({
      id: c.id,
      status: c.status,
      tone: statusTone(c.status),
      text: c.text,
      kind: c.kind,
      by: c.by ?? "",
      evidence: c.evidence ?? "",
    })),
  };
}

/** landingOf is the Landing section: the landing record, else the forecast; undefined when there is neither. */
function landingOf(j: JobStatus): Details["landing"] {
  const l = j.landed;
  if (l) {
    const rows: [string, string][] = [["into", l.into], ["commit", l.commit.slice(0, 12)], ["was", l.from.slice(0, 12)], ["job's commit", l.head.slice(0, 12)]];
    rows.push(["mode", l.mode], ["at", clock(l.at)]);
    if (l.verified) {
      rows.push(["checked", l.verified]);
    }
    return { headline: `landed on ${l.into}`, tone: "ok", rows, conflicts: [] };
  }
  const f = j.forecast;
  if (!f) {
    return j.target ? { headline: "not forecast yet", tone: "plain", rows: [["target", j.target]], conflicts: [] } : undefined;
  }
  const rows: [string, string][] = [["target", f.target || j.target || "none (a detached base)"]];
  const behind = f.behind ?? 0;
  rows.push(["behind", behind > 0 ? `${behind} commit${behind === 1 ? "" : "s"}: landing merges onto the new tip` : "no: the target has not moved"]);
  rows.push(["touched", `${(f.touched ?? []).length} file${(f.touched ?? []).length === 1 ? "" : "s"}`]);
  rows.push(["forecast at", clock(f.at)]);
  const conflicts = (f.conflicts ?? []).map((c) => ({ line: fmt.conflictText(c), files: c.files ?? [] }));
  const n = conflicts.length;
  return {
    headline: n > 0 ? `${n} conflict${n === 1 ? "" : "s"} predicted` : "no conflicts predicted",
    tone: n > 0 ? "warn" : "ok",
    rows,
    conflicts,
  };
}

/** buildDetails puts together what the details view shows of one job. */
export function buildDetails(input: DetailsInput): Details {
  const j = input.status;
  const ev = input.result?.evidence;
  const ended = isTerminal(j.state);
  const facts: [string, string][] = [["id", j.id]];
  const push = (k: string, v: string | undefined) => {
    if (v) {
      facts.push([k, v]);
    }
  };
  push("branch", ev?.branch || j.branch);
  push("engine", j.engine);
  push("model", ev?.model || j.model);
  push("kind", j.kind);
  push("isolation", ev?.isolation);
  push("repo", ev?.repo || j.repo);
  push("base", (ev?.base || j.base)?.slice(0, 12));
  push("head", (ev?.head || j.head)?.slice(0, 12));
  push("started", clock(j.created_at));
  push("ended", clock(j.ended_at));

  const c = ev?.cost ?? j.cost;
  const cost: [string, string][] = [
    ["cost", c.known ? fmt.usd(c.usd) : `${fmt.usd(c.usd)} (unknown: the whole reservation is charged)`],
    ["reserved", fmt.usd(c.reserved_usd)],
    ["tokens", String(c.tokens)],
  ];
  if (c.calls !== undefined) {
    cost.push(["model calls", String(c.calls)]);
  }
  if ((c.models ?? []).length > 0) {
    cost.push(["models", (c.models ?? []).join(", ")]);
  }

  const timings: [string, string][] = [];
  if (ev?.timings) {
    const t = ev.timings;
    timings.push(["queued", ms(t.queued_ms)], ["preparing", ms(t.preparing_ms)]);
    if (t.setup_ms > 0) {
      timings.push(["of which setup", ms(t.setup_ms)]);
    }
    timings.push(["running", ms(t.running_ms)]);
    if (t.needs_input_ms > 0) {
      timings.push(["of which waiting for answers", ms(t.needs_input_ms)]);
    }
    timings.push(["verifying", ms(t.verifying_ms)], ["total", ms(t.total_ms)]);
  } else {
    timings.push([ended ? "total" : "elapsed", fmt.elapsed(j.elapsed_ms)]);
  }

  let verify: Details["verify"];
  if (ev?.verify) {
    const v = ev.verify;
    verify = {
      command: v.command,
      outcome: v.timed_out ? `timed out (exit ${v.exit_code})` : v.exit_code === 0 ? "passed (exit 0)" : `failed (exit ${v.exit_code})`,
      tone: v.exit_code === 0 && !v.timed_out ? "ok" : "bad",
      duration: ms(v.duration_ms),
      commit: v.commit ? v.commit.slice(0, 12) : "",
      outputTail: v.output_tail ?? "",
    };
  } else if (j.verify_exit !== undefined && j.verify_exit !== null) {
    verify = {
      command: "",
      outcome: j.verify_exit === 0 ? "passed (exit 0)" : `failed (exit ${j.verify_exit})`,
      tone: j.verify_exit === 0 ? "ok" : "bad",
      duration: "",
      commit: "",
      outputTail: "",
    };
  }

  const files = ev?.files ?? input.files?.files ?? [];
  const questions = (input.questions ?? []).map((q) => ({
    text: q.text,
    kind: q.kind,
    context: q.context,
    asked: clock(q.askedAt),
    settled: q.settledAt === undefined ? "waiting for an answer" : q.expired ? `expired at ${clock(q.settledAt)}: the worker went on` : `answered at ${clock(q.settledAt)}`,
    tone: (q.settledAt === undefined ? "warn" : q.expired ? "bad" : "ok") as Tone,
  }));

  const error = ev?.error || j.error;
  const category = ev?.category || j.category;
  return {
    id: j.id,
    title: `Hub: ${j.id}`,
    task: j.task,
    headline: fmt.outcome(j),
    tone: toneOfState(j),
    facts,
    summary: input.result?.summary || undefined,
    error: error ? (category ? `${error} (${category})` : error) : undefined,
    alerts: j.alerts ?? [],
    files,
    verify,
    rubric: ev?.rubric ? rubricOf(ev.rubric) : undefined,
    cost,
    timings,
    questions,
    trace: input.trace ? traceOf(input.trace) : undefined,
    report: ev?.claimed?.report || undefined,
    notes: ev?.notes ?? [],
    problem: input.problem,
    landing: landingOf(j),
    ended,
    merge: ended && j.kind !== "read" && !!(ev?.branch || j.branch),
    land: ended && j.kind !== "read" && !!(ev?.branch || j.branch) && !j.landed && !!input.canLand,
    landed: !!j.landed,
    answer: j.state === "needs_input",
  };
}

/** esc escapes text for HTML. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);
}

/** commandLink is an <a> running a command (the webview allows command URIs) with JSON args. */
export function commandLink(command: string, args: unknown[], label: string, cls = ""): string {
  const href = `command:${command}?${encodeURIComponent(JSON.stringify(args))}`;
  return `<a${cls ? ` class="${cls}"` : ""} href="${esc(href)}">${esc(label)}</a>`;
}

/** The commands the page links to (the webview's allow list). */
export const DetailsCommands = ["hub.openDiff", "hub.openAllChanges", "hub.land", "hub.merge", "hub.cleanup", "hub.showLog", "hub.answer", "hub.stop"] as const;

/** grid lays key-value pairs out in as many columns as fit. */
function grid(rows: [string, string][]): string {
  return `<dl class="grid">${rows.map(([k, v]) => `<div><dt>${esc(k)}</dt><dd>${esc(v)}</dd></div>`).join("")}</dl>`;
}

function table(rows: [string, string][], cls = "kv"): string {
  return `<table class="${cls}">${rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join("")}</table>`;
}

function section(title: string, body: string, id: string): string {
  return `<section id="${id}"><h2>${esc(title)}</h2>${body}</section>`;
}

/** renderDetails is the whole page; cspSource is the webview's (webview.cspSource). */
export function renderDetails(d: Details, cspSource: string): string {
  const out: string[] = [];
  out.push(`<header><h1>${esc(fmt.taskLabel(d.task, 120))}</h1>`);
  out.push(`<p class="headline"><span class="badge ${d.tone}">${esc(d.headline)}</span> <span class="muted">job ${esc(d.id)}</span></p>`);
  const actions: string[] = [];
  if (d.merge) {
    if (d.land) {
      actions.push(commandLink("hub.land", [d.id], "Land", "button primary"));
    }
    if (!d.landed) {
      actions.push(commandLink("hub.merge", [d.id], "Merge", "button"));
    }
    actions.push(commandLink("hub.cleanup", [d.id], "Clean up", "button"));
  } else if (!d.ended) {
    if (d.answer) {
      actions.push(commandLink("hub.answer", [d.id], "Answer", "button"));
    }
    actions.push(commandLink("hub.stop", [d.id], "Stop", "button"));
  }
  if (d.files.length > 0) {
    actions.push(commandLink("hub.openAllChanges", [d.id], "All changes", "button"));
  }
  actions.push(commandLink("hub.showLog", [d.id], "Log", "button"));
  out.push(`<nav>${actions.join(" ")}</nav></header>`);
  if (d.problem) {
    out.push(`<p class="problem">${esc(d.problem)}</p>`);
  }
  if (d.error) {
    out.push(`<p class="error">${esc(d.error)}</p>`);
  }
  if (d.alerts.length) {
    // Before anything else of the job: what it did outside its branch, and how to put it back.
    out.push(section(`Beyond its branch (${d.alerts.length})`, `<ul class="alerts">${d.alerts.map((a) => `<li><span class="tone-warn">⚠ ${esc(a)}</span></li>`).join("")}</ul>`, "alerts"));
  }
  if (d.task.trim() !== fmt.taskLabel(d.task, 120)) {
    out.push(section("Task", `<pre>${esc(d.task.trim())}</pre>`, "task"));
  }
  if (d.summary) {
    out.push(section("Summary", `<pre class="summary">${esc(d.summary)}</pre>`, "summary"));
  }
  out.push(section("Job", grid(d.facts), "job"));
  if (d.landing) {
    const l = d.landing;
    const cs = l.conflicts.length
      ? `<ul class="conflicts">${l.conflicts.map((c) => `<li><span class="tone-warn">${esc(c.line)}</span>${c.files.length ? `<div class="muted">${esc(c.files.join(", "))}</div>` : ""}</li>`).join("")}</ul>`
      : "";
    out.push(section("Landing", `<p><span class="badge ${l.tone}">${esc(l.headline)}</span></p>${table(l.rows)}${cs}`, "landing"));
  }
  const files = d.files.length
    ? `<table class="files">${d.files
        .map((f) => {
          const name = f.old_path ? `${f.old_path} → ${f.path}` : f.path;
          return `<tr><td>${commandLink("hub.openDiff", [d.id, f], name)}</td><td class="muted">${esc(f.change)}</td><td class="stat">${esc(fmt.diffstat(f))}</td></tr>`;
        })
        .join("")}</table>`
    : `<p class="muted">${d.ended ? "No changes." : "Nothing committed yet."}</p>`;
  out.push(section(`Files (${d.files.length})`, files, "files"));
  if (d.verify) {
    const v = d.verify;
    const rows: [string, string][] = [];
    if (v.command) {
      rows.push(["command", v.command]);
    }
    if (v.duration) {
      rows.push(["took", v.duration]);
    }
    if (v.commit) {
      rows.push(["on commit", v.commit]);
    }
    const tail = v.outputTail.trim() ? `<h3>Output (tail)</h3><pre class="output">${esc(v.outputTail.trimEnd())}</pre>` : "";
    out.push(section("Verify", `<p><span class="badge ${v.tone}">${esc(v.outcome)}</span></p>${table(rows)}${tail}`, "verify"));
  }
  if (d.rubric) {
    const r = d.rubric;
    const rows = r.criteria
      .map((c) => `<tr><td><span class="badge ${c.tone}">${esc(c.status)}</span></td><td>${esc(c.id)}</td><td>${esc(c.text)}<div class="muted">${esc(c.kind)}${c.by ? ` · by ${esc(c.by)}` : ""}${c.evidence ? ` · ${esc(c.evidence)}` : ""}</div></td></tr>`)
      .join("");
    const grader = r.graderError ? `<p class="muted">grader: ${esc(r.graderError)}</p>` : "";
    out.push(section("Rubric", `<p><span class="badge ${r.tone}">${esc(r.verdict)}</span> ${esc(r.line)}</p><table class="rubric">${rows}</table>${grader}`, "rubric"));
  }
  const qs = d.questions.length
    ? `<ol class="questions">${d.questions
        .map((q) => `<li><div>${q.kind !== "question" ? `<b>${esc(q.kind)}:</b> ` : ""}${esc(q.text)}</div>${q.context ? `<div class="muted">${esc(q.context)}</div>` : ""}<div class="muted">asked at ${esc(q.asked)} · <span class="tone-${q.tone}">${esc(q.settled)}</span></div></li>`)
        .join("")}</ol>`
    : `<p class="muted">The worker asked nothing.</p>`;
  out.push(section(`Questions (${d.questions.length})`, qs, "questions"));
  out.push(`<div class="columns">${section("Cost", table(d.cost), "cost")}${section("Timings", table(d.timings), "timings")}</div>`);
  if (d.trace) {
    const t = d.trace;
    const head = ["step", "kind", "name", "start", "took", "tokens in/out", "cost", "summary"].map((h) => `<th>${esc(h)}</th>`).join("");
    const rows = t.rows
      .map((r) => `<tr class="tone-${r.tone === "bad" ? "bad" : "plain"}"><td class="num">${r.step}</td><td class="muted">${esc(r.kind)}</td><td style="padding-left: ${r.depth * 14}px">${esc(r.name)}</td>` +
        `<td class="num">${esc(r.start)}</td><td class="num">${esc(r.took)}</td><td class="num">${esc(r.tokens)}</td><td class="num">${esc(r.cost)}</td><td class="summary">${esc(r.summary)}</td></tr>`)
      .join("");
    const body = t.rows.length
      ? `<table class="trace"><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table><p class="muted">${esc(t.sums)}</p>${t.more ? `<p class="muted">${esc(t.more)}</p>` : ""}`
      : `<p class="muted">No steps yet.</p>`;
    out.push(section(`Trace (${t.rows.length}${t.more ? "+" : ""} steps)`, body, "trace"));
  }
  if (d.report) {
    out.push(section("The worker's report (unverified)", `<pre>${esc(d.report)}</pre>`, "report"));
  }
  if (d.notes.length) {
    out.push(section("Notes", `<ul>${d.notes.map((n) => `<li>${esc(n)}</li>`).join("")}</ul>`, "notes"));
  }
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'unsafe-inline';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${esc(d.title)}</title>
<style>${css}</style></head>
<body>${out.join("\n")}</body></html>`;
}

/** The pages' style sheet: the editor's colors and fonts. */
export const css = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); background: var(--vscode-editor-background); padding: 0 20px 20px; line-height: 1.45; }
h1 { font-size: 1.5em; font-weight: 600; margin: 16px 0 4px; }
h2 { font-size: 1.05em; font-weight: 600; margin: 18px 0 6px; padding-bottom: 3px; border-bottom: 1px solid var(--vscode-panel-border, rgba(128,128,128,.35)); }
h3 { font-size: 1em; font-weight: 600; margin: 10px 0 4px; }
.muted { color: var(--vscode-descriptionForeground); }
.headline { margin: 4px 0 8px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 600; border: 1px solid currentColor; }
.badge.ok, .tone-ok { color: var(--vscode-testing-iconPassed, #388a34); }
.badge.bad, .tone-bad { color: var(--vscode-testing-iconFailed, #e51400); }
.badge.warn, .tone-warn { color: var(--vscode-editorWarning-foreground, #bf8803); }
.badge.plain { color: var(--vscode-foreground); }
nav { margin: 6px 0 4px; }
a { color: var(--vscode-textLink-foreground); text-decoration: none; }
a:hover { text-decoration: underline; }
a.button { display: inline-block; padding: 2px 10px; margin-right: 4px; border-radius: 2px; background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground); }
table { border-collapse: collapse; }
th, td { text-align: left; vertical-align: top; padding: 2px 14px 2px 0; }
table.kv th { font-weight: normal; color: var(--vscode-descriptionForeground); white-space: nowrap; }
td.stat { font-family: var(--vscode-editor-font-family); white-space: nowrap; }
pre { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); background: var(--vscode-textCodeBlock-background); padding: 8px 10px; border-radius: 3px; white-space: pre-wrap; word-break: break-word; margin: 4px 0; }
dl.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(240px, 1fr)); gap: 2px 18px; margin: 4px 0; }
dl.grid div { display: flex; gap: 10px; min-width: 0; }
dl.grid dt { color: var(--vscode-descriptionForeground); min-width: 64px; }
dl.grid dd { margin: 0; overflow-wrap: anywhere; }
.columns { display: flex; flex-wrap: wrap; column-gap: 48px; }
.columns section { min-width: 220px; }
a.button.primary { background: var(--vscode-button-background); color: var(--vscode-button-foreground); }
.error, .problem { color: var(--vscode-errorForeground); }
ul.conflicts { padding-left: 20px; margin: 4px 0; }
ol.questions { padding-left: 20px; }
ol.questions li { margin-bottom: 6px; }
table.trace th { font-weight: normal; color: var(--vscode-descriptionForeground); white-space: nowrap; }
table.trace td { white-space: nowrap; }
table.trace td.num { font-family: var(--vscode-editor-font-family); text-align: right; }
table.trace td.summary { white-space: normal; overflow-wrap: anywhere; font-family: var(--vscode-editor-font-family); }
table.trace tr.tone-bad td { color: var(--vscode-testing-iconFailed, #e51400); }
`;
