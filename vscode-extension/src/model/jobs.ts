// JobModel: the jobs the editor shows, by id, kept in step with the daemon.
// It imports nothing from vscode. The session feeds it; the tree, the status
// bar and the question prompts read it and listen to its events.

import type { AnswerNotice, JobStatus, Question, State } from "../protocol/generated";
import { Emitter } from "./emitter";

/** The groups of the tree, in display order, and the states each holds. */
export const Groups = [
  { name: "Needs input", states: ["needs_input"] },
  { name: "Running", states: ["preparing", "running", "verifying"] },
  { name: "Queued", states: ["queued"] },
  { name: "Succeeded", states: ["succeeded"] },
  { name: "Failed", states: ["failed", "timed_out"] },
  { name: "Cancelled", states: ["cancelled"] },
] as const satisfies readonly { name: string; states: readonly State[] }[];

export type GroupName = (typeof Groups)[number]["name"];

export interface Group {
  name: GroupName;
  jobs: JobStatus[];
}

const terminal: ReadonlySet<string> = new Set(["succeeded", "failed", "cancelled", "timed_out"]);
const running: ReadonlySet<string> = new Set(["preparing", "running", "verifying"]);

/** isTerminal reports whether a state is an ending. */
export function isTerminal(s: string): boolean {
  return terminal.has(s);
}

/**
 * contextValue is the job node's contextValue, which the menus (inline
 * actions included) read: job-needs-input, job-active, job-queued while it
 * runs; once ended, job-succeeded or job-ended for a write job (its branch
 * can be landed or merged, its worktree cleaned up), job-landed for a write
 * job whose work landed (only its worktree is left to clean up) and
 * job-ended-read for a read job (no branch).
 */
export function contextValue(
  j: Pick<JobStatus, "state"> & Partial<Pick<JobStatus, "kind" | "landed">>,
): "job-needs-input" | "job-active" | "job-queued" | "job-succeeded" | "job-ended" | "job-landed" | "job-ended-read" {
  if (j.state === "needs_input") {
    return "job-needs-input";
  }
  if (j.state === "queued") {
    return "job-queued";
  }
  if (!isTerminal(j.state)) {
    return "job-active";
  }
  if (j.kind === "read") {
    return "job-ended-read";
  }
  if (j.landed) {
    return "job-landed";
  }
  return j.state === "succeeded" ? "job-succeeded" : "job-ended";
}

/**
 * landable reports whether job/land would take the job: a write job that
 * ended with commits on its branch and has not landed yet (the daemon
 * refuses a whole batch for one job that is not).
 */
export function landable(j: Pick<JobStatus, "state" | "kind" | "branch" | "base" | "head" | "landed">): boolean {
  return isTerminal(j.state) && j.kind !== "read" && !!j.branch && !j.landed && !!j.head && j.head !== j.base;
}

/**
 * landBatches splits the jobs to land into job/land calls: one per
 * repository and target branch (the daemon lands one repository's jobs onto
 * one branch per call), each in the order given.
 */
export function landBatches(jobs: readonly JobStatus[]): JobStatus[][] {
  const by = new Map<string, JobStatus[]>();
  for (const j of jobs) {
    const key = `${j.repo ?? ""}\u0000${j.target || j.forecast?.target || ""}`;
    const list = by.get(key) ?? [];
    list.push(j);
    by.set(key, list);
  }
  return [...by.values()];
}

export interface Counts {
  /** preparing + running + verifying */
  running: number;
  needsInput: number;
  queued: number;
  ended: number;
  total: number;
}

/** What changed: the ids touched (added or updated), the ids removed. */
export interface ModelChange {
  changed: string[];
  removed: string[];
  /** The connection state flipped. */
  connection?: boolean;
}

/** A question, with the job that asked it. */
export interface PendingQuestion {
  jobId: string;
  question: Question;
}

/**
 * JobModel holds jobs by id. Not safe for concurrent use (it need not be:
 * Node runs it on one thread). Every mutation fires onDidChange once.
 */
export class JobModel {
  private readonly jobs = new Map<string, JobStatus>();
  /** When each job's status was received (ms since epoch), for live elapsed times. */
  private readonly receivedAt = new Map<string, number>();
  /** Ids applied from notifications since the last beginSync. */
  private touchedSinceSync = new Set<string>();
  /** Question ids already announced through onDidAskQuestion. */
  private readonly announced = new Set<string>();
  /** Question ids answered or expired. */
  private readonly answered = new Set<string>();
  private connectedFlag = false;

  private readonly changeEmitter = new Emitter<ModelChange>();
  private readonly askEmitter = new Emitter<PendingQuestion>();
  private readonly answerEmitter = new Emitter<AnswerNotice>();

  /** Fires after every change of jobs or of the connection state. */
  readonly onDidChange = this.changeEmitter.event;
  /** Fires once per question id, the first time the model learns of it. */
  readonly onDidAskQuestion = this.askEmitter.event;
  /** Fires when a question was answered or expired. */
  readonly onDidAnswerQuestion = this.answerEmitter.event;

  constructor(private readonly now: () => number = Date.now) {}

  /** connected reports whether the daemon is connected; otherwise the jobs are the last known. */
  get connected(): boolean {
    return this.connectedFlag;
  }

  setConnected(v: boolean): void {
    if (v === this.connectedFlag) {
      return;
    }
    this.connectedFlag = v;
    this.changeEmitter.fire({ changed: [], removed: [], connection: true });
  }

  get size(): number {
    return this.jobs.size;
  }

  get(id: string): JobStatus | undefined {
    return this.jobs.get(id);
  }

  has(id: string): boolean {
    return this.jobs.has(id);
  }

  /** all returns every job, newest first. */
  all(): JobStatus[] {
    return [...this.jobs.values()].sort(newestFirst);
  }

  /**
   * apply takes a job/changed: kept only when its cursor is at least the
   * stored one (an older view arriving late never overwrites a newer one).
   * Returns whether it was applied.
   */
  apply(st: JobStatus): boolean {
    this.touchedSinceSync.add(st.id);
    if (!this.put(st)) {
      return false;
    }
    this.changeEmitter.fire({ changed: [st.id], removed: [] });
    this.noticeQuestion(st);
    return true;
  }

  /**
   * beginSync marks the start of a (re)connect: call it right after
   * events/subscribe is sent, before job/list. Jobs applied from
   * notifications after it survive replaceAll even when the list missed them.
   */
  beginSync(): void {
    this.touchedSinceSync = new Set();
  }

  /**
   * replaceAll replaces the jobs with the daemon's list: jobs not listed
   * (and not seen since beginSync) go, listed ones replace the stored ones
   * unless the stored one is newer (higher cursor).
   */
  replaceAll(list: readonly JobStatus[]): void {
    const listed = new Set(list.map((j) => j.id));
    const removed: string[] = [];
    for (const id of [...this.jobs.keys()]) {
      if (!listed.has(id) && !this.touchedSinceSync.has(id)) {
        this.jobs.delete(id);
        this.receivedAt.delete(id);
        removed.push(id);
      }
    }
    const changed: string[] = [];
    for (const st of list) {
      if (this.put(st)) {
        changed.push(st.id);
      }
    }
    this.changeEmitter.fire({ changed, removed });
    for (const st of list) {
      this.noticeQuestion(st);
    }
  }

  /** questionAsked takes a question/asked notice. */
  questionAsked(jobId: string, q: Question): void {
    this.announce(jobId, q);
  }

  /** questionAnswered takes a question/answered notice. */
  questionAnswered(n: AnswerNotice): void {
    this.answered.add(n.question_id);
    this.answerEmitter.fire(n);
  }

  /** pending lists the jobs' unanswered questions, oldest first. */
  pending(): PendingQuestion[] {
    const out: PendingQuestion[] = [];
    for (const j of this.jobs.values()) {
      if (j.question && !this.answered.has(j.question.id) && !isTerminal(j.state)) {
        out.push({ jobId: j.id, question: j.question });
      }
    }
    return out.sort((a, b) => Date.parse(a.question.asked_at) - Date.parse(b.question.asked_at));
  }

  /** question returns the pending question of a job, if any. */
  question(jobId: string): Question | undefined {
    const j = this.jobs.get(jobId);
    return j?.question && !this.answered.has(j.question.id) && !isTerminal(j.state) ? j.question : undefined;
  }

  /** groups returns the non-empty groups in display order, each newest first. */
  groups(): Group[] {
    const by = new Map<string, JobStatus[]>();
    for (const j of this.all()) {
      const g = Groups.find((g) => (g.states as readonly string[]).includes(j.state));
      if (!g) {
        continue;
      }
      const list = by.get(g.name) ?? [];
      list.push(j);
      by.set(g.name, list);
    }
    return Groups.filter((g) => by.has(g.name)).map((g) => ({ name: g.name, jobs: by.get(g.name)! }));
  }

  /** counts for the status bar and the badge. */
  counts(): Counts {
    const c: Counts = { running: 0, needsInput: 0, queued: 0, ended: 0, total: this.jobs.size };
    for (const j of this.jobs.values()) {
      if (running.has(j.state)) {
        c.running++;
      } else if (j.state === "needs_input") {
        c.needsInput++;
      } else if (j.state === "queued") {
        c.queued++;
      } else if (isTerminal(j.state)) {
        c.ended++;
      }
    }
    return c;
  }

  /**
   * elapsedMs is a job's elapsed time now: the daemon's figure, plus the time
   * since it was received while the job has not ended.
   */
  elapsedMs(id: string): number {
    const j = this.jobs.get(id);
    if (!j) {
      return 0;
    }
    if (isTerminal(j.state) || !this.connectedFlag) {
      return j.elapsed_ms;
    }
    return j.elapsed_ms + Math.max(0, this.now() - (this.receivedAt.get(id) ?? this.now()));
  }

  dispose(): void {
    this.changeEmitter.dispose();
    this.askEmitter.dispose();
    this.answerEmitter.dispose();
  }

  private put(st: JobStatus): boolean {
    const old = this.jobs.get(st.id);
    if (old && st.cursor < old.cursor) {
      return false;
    }
    this.jobs.set(st.id, st);
    this.receivedAt.set(st.id, this.now());
    return true;
  }

  private noticeQuestion(st: JobStatus): void {
    if (st.question && st.state === "needs_input") {
      this.announce(st.id, st.question);
    }
  }

  private announce(jobId: string, q: Question): void {
    if (this.announced.has(q.id) || this.answered.has(q.id)) {
      return;
    }
    this.announced.add(q.id);
    this.askEmitter.fire({ jobId, question: q });
  }
}

function newestFirst(a: JobStatus, b: JobStatus): number {
  return Date.parse(b.created_at) - Date.parse(a.created_at) || b.id.localeCompare(a.id);
}
