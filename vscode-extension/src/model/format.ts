// The text the extension shows for jobs: labels, descriptions, the status
// bar. Pure functions; the UI tests rely on these strings.

import { errorText, isHubError } from "../protocol/errors";
import {
  ErrorCodes,
  type FileChange,
  type Forecast,
  type JobStatus,
  type LandItem,
  type LandResult,
  type SummaryResult,
} from "../protocol/generated";
import { isTerminal } from "./jobs";

/** elapsed formats milliseconds as "12s", "3m 04s" or "1h 02m". */
export function elapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) {
    return `${s}s`;
  }
  const m = Math.floor(s / 60);
  if (m < 60) {
    return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  }
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

/** usd formats dollars with two decimals: "$0.42". */
export function usd(v: number): string {
  return `$${(Number.isFinite(v) ? v : 0).toFixed(2)}`;
}

/** cost is a job's cost, "$?" when the engine could not report it. */
export function cost(j: Pick<JobStatus, "cost">): string {
  return j.cost.known ? usd(j.cost.usd) : "$?";
}

/** taskLabel is the first line of the task, at most 60 characters. */
export function taskLabel(task: string, max = 60): string {
  const first = (task.split(/\r?\n/).find((l) => l.trim() !== "") ?? "").trim();
  const chars = [...first];
  return chars.length <= max ? first : chars.slice(0, max - 1).join("") + "…";
}

/** stateWord is a state as a user reads it: "needs input", "timed out". */
export function stateWord(s: JobStatus["state"]): string {
  return s.replace(/_/g, " ");
}

/**
 * verifyOutcome is what verify said, as a few words: "verified",
 * "verify failed (exit 1)"; "" when verify has not run.
 */
export function verifyOutcome(exit: number | null | undefined): string {
  if (exit === undefined || exit === null) {
    return "";
  }
  return exit === 0 ? "verified" : `verify failed (exit ${exit})`;
}

/**
 * outcome is a job's state word, and once it has ended what verify said:
 * "running", "succeeded · verified", "failed · verify failed (exit 1)".
 */
export function outcome(j: Pick<JobStatus, "state" | "verify_exit" | "rubric">): string {
  const parts = [stateWord(j.state)];
  const v = isTerminal(j.state) ? verifyOutcome(j.verify_exit) : "";
  if (v) {
    parts.push(v);
  }
  // A success whose definition of done has a criterion failing or unchecked
  // says so beside it, as `hub status` does.
  if (j.state === "succeeded" && (j.rubric === "needs_revision" || j.rubric === "unknown")) {
    parts.push(`rubric ${j.rubric.replace(/_/g, " ")}`);
  }
  return parts.join(" · ");
}

/**
 * alertWord counts what the job did beyond its branch (refs it moved in the
 * user's repository, a stash, files of the base it deleted): "⚠ 2 alerts",
 * or "" when nothing.
 */
export function alertWord(j: Pick<JobStatus, "alerts">): string {
  const n = j.alerts?.length ?? 0;
  return n === 0 ? "" : `⚠ ${n} ${n === 1 ? "alert" : "alerts"}`;
}

/** ref names a job where the user meets it: its branch (hub/<id>, which holds the id), else its id. */
export function ref(j: Pick<JobStatus, "id" | "branch">): string {
  return j.branch || j.id;
}

/**
 * description is the grey text of a job's row, what matters first (a narrow
 * side bar cuts the end): `<engine> · <elapsed> · $<cost> · <progress> ·
 * <branch or id>` while it runs, and `<outcome> · <engine> · <elapsed> ·
 * $<cost> · <branch or id>` once it has ended (its last progress note is
 * stale by then).
 */
export function description(j: JobStatus, elapsedMs = j.elapsed_ms): string {
  const landing = landingWord(j);
  if (isTerminal(j.state)) {
    const alerts = alertWord(j);
    return [outcome(j), ...(alerts ? [alerts] : []), ...(landing ? [landing] : []), j.engine || "?", elapsed(elapsedMs), cost(j), ref(j)].join(" · ");
  }
  const parts = [j.engine || "?", elapsed(elapsedMs), cost(j)];
  if (landing) {
    parts.push(landing);
  }
  const progress = oneLine(j.progress ?? "");
  if (progress) {
    parts.push(progress);
  }
  parts.push(ref(j));
  return parts.join(" · ");
}

/**
 * conflictText is one predicted conflict in a line: the daemon's line
 * ("conflicts with hub/ab12cd34 in src/a.go"), or one made of its parts
 * when the daemon gave none.
 */
export function conflictText(c: NonNullable<Forecast["conflicts"]>[number]): string {
  return c.line || `conflicts with ${c.branch || c.with} in ${pathList(c.files ?? [], 3)}`;
}

/**
 * conflictLine is a forecast's predicted conflicts in one line, as `hub
 * status` shows them: the first, then how many more ("" when none).
 */
export function conflictLine(f: Forecast | undefined): string {
  const cs = f?.conflicts ?? [];
  if (cs.length === 0) {
    return "";
  }
  const more = cs.length > 1 ? ` (+${cs.length - 1} more conflict${cs.length > 2 ? "s" : ""})` : "";
  return conflictText(cs[0]) + more;
}

/** conflicts are a job's predicted conflicts; none once it landed (its forecast is stale then). */
export function conflicts(j: Pick<JobStatus, "forecast" | "landed">): NonNullable<Forecast["conflicts"]> {
  return j.landed ? [] : j.forecast?.conflicts ?? [];
}

/**
 * landingWord is what the row says of landing: "landed on main" once it
 * landed, else the predicted conflicts in a line ("" when none).
 */
export function landingWord(j: Pick<JobStatus, "forecast" | "landed">): string {
  if (j.landed) {
    return `landed on ${j.landed.into}`;
  }
  return conflictLine(j.forecast);
}

/** pathList is "a, b, c" and "(+N more)" past max. */
export function pathList(files: readonly string[], max: number): string {
  const shown = files.slice(0, max).join(", ");
  return files.length > max ? `${shown} (+${files.length - max} more)` : shown;
}

/** sha7 is a commit's short form. */
export function sha7(sha: string | undefined): string {
  return (sha ?? "").slice(0, 7);
}

/** oneLine squeezes whitespace so a note fits a tree row. */
export function oneLine(s: string): string {
  return s.replace(/\s+/g, " ").trim();
}

/** tooltip holds the id, outcome, branch and error of a job. */
export function tooltip(j: JobStatus): string {
  const lines = [`job ${j.id} · ${outcome(j)}`, j.task.trim()];
  if (j.branch) {
    lines.push(`branch: ${j.branch}`);
  }
  if (j.repo) {
    lines.push(`repo: ${j.repo}`);
  }
  if (j.question) {
    lines.push(`question: ${j.question.text}`);
  }
  if (j.verify_exit !== undefined && j.verify_exit !== null) {
    lines.push(verifyLabel(j.verify_exit));
  }
  if (j.salvaged) {
    lines.push("salvaged: hub committed what the worker left");
  }
  if (j.landed) {
    lines.push(`landed on ${j.landed.into} as ${sha7(j.landed.commit)}${j.landed.verified ? ` (${j.landed.verified})` : ""}`);
  }
  for (const c of conflicts(j)) {
    lines.push(`predicted: ${conflictText(c)}`);
  }
  if (j.error) {
    lines.push(`error: ${j.error}`);
  }
  for (const a of j.alerts ?? []) {
    lines.push(`⚠ ${a}`);
  }
  lines.push("Click for the job's details.");
  return lines.join("\n");
}

/** verifyLabel is "Verify: passed (exit 0)" or "Verify: failed (exit N)". */
export function verifyLabel(exit: number): string {
  return exit === 0 ? "Verify: passed (exit 0)" : `Verify: failed (exit ${exit})`;
}

/** questionLabel is the label of a pending question's node. */
export function questionLabel(text: string): string {
  return `Question: ${oneLine(text)}`;
}

/** diffstat is "+A −D", or "binary". */
export function diffstat(f: Pick<FileChange, "added" | "deleted">): string {
  return f.added < 0 ? "binary" : `+${f.added} −${f.deleted}`;
}

/** commitLabel is "<sha7> <subject>". */
export function commitLabel(sha: string, subject: string): string {
  return `${sha.slice(0, 7)} ${subject}`;
}

/** diffTitle is the title of a file's diff editor. */
export function diffTitle(id: string, path: string): string {
  return `${path} (${id}: base ↔ head)`;
}

export interface BarCounts {
  running: number;
  needsInput: number;
}

/** statusText is the status-bar text while connected. */
export function statusText(c: BarCounts, spentUSD: number): string {
  return `$(pulse) hub: ${c.running} running · ${c.needsInput} needs input · ${usd(spentUSD)}`;
}

/** How long a transient status-bar message stays (ms). */
export const transientMs = 5000;

/** answerSent is the transient status-bar message after a reply went out. */
export function answerSent(id: string): string {
  return `Hub: answer sent to job ${id}`;
}

/** The status-bar text while no daemon answers. */
export const disconnectedText = "$(debug-disconnect) hub: disconnected";

/** statusTooltip lists the counts and the month's money. */
export function statusTooltip(c: BarCounts & { queued: number }, s?: SummaryResult): string {
  const lines = [`${c.running} running`, `${c.needsInput} need input`, `${c.queued} queued`];
  if (s) {
    const cap = s.monthly_cap_usd > 0 ? ` of ${usd(s.monthly_cap_usd)}` : "";
    lines.push(`${s.month}: ${usd(s.spent_usd)} spent${cap}, ${usd(s.reserved_usd)} reserved`);
  }
  return lines.join("\n");
}

/** badgeTooltip is the view badge's tooltip. */
export function badgeTooltip(n: number): string {
  return `${n} job(s) need input`;
}

/**
 * mergeError is the message shown when job/merge is refused: for a
 * conflict, the daemon's message, the conflicting files and the hint.
 */
export function mergeError(id: string, err: unknown): string {
  if (isHubError(err, ErrorCodes.Conflict)) {
    const shown = err.files.slice(0, 10).join(", ");
    const more = err.files.length > 10 ? ` and ${err.files.length - 10} more` : "";
    const files = err.files.length ? ` Conflicting files: ${shown}${more}.` : "";
    return `Hub: cannot merge job ${id}: ${err.message.replace(/\.$/, "")}.${files}${err.hint ? ` ${err.hint}` : ""}`;
  }
  return `Hub: cannot merge job ${id}: ${errorText(err)}`;
}


/** The land outcomes that leave a job where it was, for a reason the user must read. */
const landStopped: ReadonlySet<string> = new Set(["conflict", "red", "skipped"]);

/**
 * landFailure is the error shown for a job that did not land: why (the
 * daemon's reason), which files conflict, which check failed and how, and
 * the follow-up job started to resolve it. undefined for a job that landed,
 * was already there, or would land (a dry run).
 */
export function landFailure(into: string, it: LandItem): string | undefined {
  if (!landStopped.has(it.outcome)) {
    return undefined;
  }
  const what = it.outcome === "skipped" ? `was not tried on ${into}` : `did not land on ${into}`;
  let reason = it.reason || (it.outcome === "conflict" ? "conflict" : it.outcome === "red" ? "a check failed" : "skipped");
  const files = it.files ?? [];
  if (it.outcome === "conflict" && files.length > 0 && !files.every((f) => reason.includes(f))) {
    reason += `. Conflicting files: ${pathList(files, 10)}`;
  }
  if (it.outcome === "red") {
    const failed = [it.verify, it.batch].find((v) => v && (v.exit_code !== 0 || v.timed_out));
    if (failed && !reason.includes(failed.command)) {
      reason += `. Check: ${failed.command} (${failed.timed_out ? "timed out" : `exit ${failed.exit_code}`})`;
    }
  }
  const next = it.follow_up
    ? ` Job ${it.follow_up} was started to resolve it.`
    : it.outcome === "conflict"
      ? " Nothing moved: resolve the conflict on the job's branch, then land it again."
      : it.outcome === "red"
        ? ` Nothing moved: ${into} is as it was.`
        : "";
  return `Hub: job ${it.id} ${what}: ${reason.replace(/\.$/, "")}.${next}`;
}

/**
 * landReport is what the user sees of a job/land answer: the daemon's line,
 * as a transient message, and one error per job that did not land.
 */
export function landReport(r: LandResult): { line: string; failures: string[] } {
  const failures: string[] = [];
  for (const it of r.jobs ?? []) {
    const f = landFailure(r.into, it);
    if (f) {
      failures.push(f);
    }
  }
  return { line: `Hub: ${r.line}`, failures };
}