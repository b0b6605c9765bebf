// The review packet of the ended jobs (job/review): what the review view
// shows of each job, and the page it renders, with a Land link per job that
// can land. Pure (no vscode import): the unit tests cover it.

import type { ReviewItem, ReviewResult } from "../protocol/generated";
import { commandLink, css, esc, type Tone } from "./details";
import * as fmt from "./format";
import { isTerminal } from "./jobs";

/** ReviewRow is one job of the packet as the view shows it. */
export interface ReviewRow {
  id: string;
  task: string;
  state: string;
  /** "3 files +40 −2" */
  change: string;
  /** "verify pass", "verify fail", "" */
  verify: string;
  verifyTone: Tone;
  rubric: string;
  cost: string;
  conflicts: string[];
  risks: string[];
  next: string;
  /** The job is ready: the daemon's advice is to land it. */
  ready: boolean;
  /** The view offers Land for it. */
  land: boolean;
  landed?: string;
}

/** Review is the view's content. */
export interface Review {
  /** The packet's first line: "4 jobs: 2 ready to land, 1 with conflicts, …". */
  headline: string;
  rows: ReviewRow[];
  /** The packet as the daemon wrote it (what a supervisor reads). */
  text: string;
  /** How many jobs Land all ended would try. */
  landable: number;
}

/**
 * reviewRow puts together one job's row. A job can land when it ended,
 * changed files and has not landed: Land is offered for it (the daemon
 * checks it again on the integrated commit); it is ready when the
 * daemon's advice is to land it as it is.
 */
export function reviewRow(it: ReviewItem, canLand: boolean): ReviewRow {
  const files = `${it.files} file${it.files === 1 ? "" : "s"} +${it.added} −${it.deleted}`;
  const verify = it.verify && it.verify !== "none" ? `verify ${it.verify}` : "";
  const landable = isTerminal(it.state) && it.files > 0 && !it.landed;
  return {
    id: it.id,
    task: it.task,
    state: it.state.replace(/_/g, " "),
    change: files,
    verify,
    verifyTone: it.verify === "pass" ? "ok" : it.verify === "fail" ? "bad" : "plain",
    rubric: it.rubric ? it.rubric.replace(/_/g, " ") : "",
    cost: fmt.usd(it.cost_usd),
    conflicts: (it.conflicts ?? []).map((c) => fmt.conflictText(c)),
    risks: it.risks ?? [],
    next: it.next,
    ready: it.next === "land",
    land: canLand && landable,
    landed: it.landed ? `landed on ${it.landed.into} as ${fmt.sha7(it.landed.commit)}` : undefined,
  };
}

/** buildReview puts together what the review view shows of a packet. */
export function buildReview(r: ReviewResult, canLand: boolean): Review {
  const rows = (r.jobs ?? []).map((it) => reviewRow(it, canLand));
  const headline = (r.text ?? "").split("\n")[0] || `${rows.length} jobs`;
  return { headline, rows, text: r.text ?? "", landable: rows.filter((x) => x.land && x.state === "succeeded").length };
}

/** The commands the review page links to (the webview's allow list). */
export const ReviewCommands = ["hub.land", "hub.landAll", "hub.showDetails", "hub.review"] as const;

/** renderReview is the whole page; cspSource is the webview's (webview.cspSource). */
export function renderReview(v: Review, cspSource: string, problem?: string): string {
  const out: string[] = [];
  out.push(`<header><h1>Review: ended jobs</h1><p class="headline">${esc(v.headline)}</p>`);
  const actions = [commandLink("hub.review", [], "Refresh", "button")];
  if (v.landable > 0) {
    actions.unshift(commandLink("hub.landAll", [], `Land all ended (${v.landable})`, "button primary"));
  }
  out.push(`<nav>${actions.join(" ")}</nav></header>`);
  if (problem) {
    out.push(`<p class="problem">${esc(problem)}</p>`);
  }
  if (v.rows.length === 0) {
    out.push(`<p class="muted">No ended job waits to land.</p>`);
  } else {
    const rows = v.rows.map((x) => {
      const notes: string[] = [];
      for (const c of x.conflicts) {
        notes.push(`<div class="tone-warn">${esc(c)}</div>`);
      }
      if (x.risks.length) {
        notes.push(`<div class="tone-warn">risks: ${esc(x.risks.join(", "))}</div>`);
      }
      if (x.landed) {
        notes.push(`<div class="tone-ok">${esc(x.landed)}</div>`);
      }
      const checks = [x.verify ? `<span class="tone-${x.verifyTone}">${esc(x.verify)}</span>` : "", x.rubric ? esc(`rubric ${x.rubric}`) : ""].filter(Boolean).join(" · ");
      const land = x.land ? commandLink("hub.land", [x.id], "Land", x.ready ? "button primary" : "button") : "";
      return `<tr id="job-${esc(x.id)}"><td>${commandLink("hub.showDetails", [x.id], x.id)}</td>` +
        `<td>${esc(x.task)}<div class="muted">${esc(x.state)} · ${esc(x.change)} · ${esc(x.cost)}${checks ? ` · ${checks}` : ""}</div>${notes.join("")}</td>` +
        `<td class="next">${esc(x.next)}</td><td>${land}</td></tr>`;
    });
    out.push(`<table class="review"><tr><th>job</th><th>task</th><th>next</th><th></th></tr>${rows.join("")}</table>`);
  }
  if (v.text) {
    out.push(`<details><summary>The packet as text</summary><pre>${esc(v.text)}</pre></details>`);
  }
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'unsafe-inline';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Hub: Review</title>
<style>${css}${reviewCss}</style></head>
<body>${out.join("\n")}</body></html>`;
}

const reviewCss = `
table.review { width: 100%; margin-top: 8px; }
table.review th { color: var(--vscode-descriptionForeground); font-weight: normal; border-bottom: 1px solid var(--vscode-panel-border, rgba(128,128,128,.35)); }
table.review td { padding: 6px 14px 6px 0; border-bottom: 1px solid var(--vscode-panel-border, rgba(128,128,128,.15)); }
td.next { white-space: nowrap; }
`;
