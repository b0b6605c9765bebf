// The job details: the question history folded from a journal, what the view
// shows of a job, the page it renders (escaped, themed, its links); then the
// same built from what a real daemon says of a real job that asked a question
// and failed its verify.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { buildDetails, clock, commandLink, esc, ms, QuestionHistory, renderDetails, us } from "../../src/model/details";
import * as fmt from "../../src/model/format";
import { Session } from "../../src/model/session";
import { Capabilities, Methods, type Event, type JobStatus, type ResultResult, type TraceResult } from "../../src/protocol/generated";
import { hubBin, Sandbox, until } from "./harness";

function job(id: string, state: JobStatus["state"], extra: Partial<JobStatus> = {}): JobStatus {
  return {
    id, state, kind: "write", engine: "exec", task: `task ${id}`, cost: { usd: 0.25, known: true, reserved_usd: 1, tokens: 1200 }, cost_usd: 0.25, cost_known: true,
    created_at: "2026-01-01T00:00:00Z", elapsed_ms: 4000, cursor: 1, branch: `hub/${id}`, ...extra,
  };
}

function ev(cursor: number, kind: Event["kind"], at: string, data?: unknown, text?: string): Event {
  return { cursor, job_id: "j", at, kind, data, text };
}

describe("details, pure", () => {
  test("the question history: asked, answered, expired, pending; cursor kept", () => {
    const h = new QuestionHistory();
    h.take([
      ev(3, "question", "2026-01-01T00:00:03Z", { id: "q1", kind: "question", text: "which color?", asked_at: "2026-01-01T00:00:03Z", expires_at: "", cursor: 3 }),
      ev(4, "output", "2026-01-01T00:00:04Z", undefined, "a line"),
      ev(5, "answer", "2026-01-01T00:00:09Z", { question_id: "q1", expired: false }),
    ]);
    h.take([
      ev(7, "question", "2026-01-01T00:00:10Z", { id: "q2", kind: "blocker", text: "no key", asked_at: "2026-01-01T00:00:10Z", expires_at: "", cursor: 7 }),
      ev(8, "answer", "2026-01-01T00:05:10Z", { question_id: "q2", expired: true }),
      ev(9, "question", "2026-01-01T00:06:00Z", { id: "q3", kind: "question", text: "size?", context: "for the logo", asked_at: "2026-01-01T00:06:00Z", expires_at: "", cursor: 9 }),
    ]);
    assert.equal(h.cursor, 9);
    const d = buildDetails({ status: job("j", "needs_input"), questions: h.entries() });
    assert.match(renderDetails(d, "x:"), /href="command:hub\.answer\?%5B%22j%22%5D">Answer</);
    assert.deepEqual(d.questions.map((q) => `${q.kind}:${q.text}:${q.settled}`), [
      "question:which color?:answered at 00:00:09 UTC",
      "blocker:no key:expired at 00:05:10 UTC: the worker went on",
      "question:size?:waiting for an answer",
    ]);
    assert.equal(d.questions[2].context, "for the logo");
  });

  test("from the status alone: headline, facts, cost, elapsed; no verify, no merge while running", () => {
    const d = buildDetails({ status: job("ab12cd34", "running", { progress: "halfway" }) });
    assert.equal(d.headline, "running");
    assert.equal(d.title, "Hub: ab12cd34");
    assert.deepEqual(d.facts.slice(0, 3), [["id", "ab12cd34"], ["branch", "hub/ab12cd34"], ["engine", "exec"]]);
    assert.deepEqual(d.cost.slice(0, 3), [["cost", "$0.25"], ["reserved", "$1.00"], ["tokens", "1200"]]);
    assert.deepEqual(d.timings, [["elapsed", "4s"]]);
    assert.equal(d.verify, undefined);
    assert.equal(d.merge, false);
    const html = renderDetails(d, "vscode-resource:");
    assert.match(html, /href="command:hub\.stop\?/);
    assert.doesNotMatch(html, /hub\.merge/);
    assert.doesNotMatch(html, /hub\.answer/);
    assert.match(html, /Nothing committed yet\./);
  });

  test("what the job did beyond its branch: first on the page, each line with its way back", () => {
    const d = buildDetails({ status: job("ab12cd34", "succeeded", { verify_exit: 0, rubric: "unknown", alerts: ["refs/heads/main moved (1111111 → 2222222): git update-ref refs/heads/main 1111111 <b>"] }) });
    assert.equal(d.headline, "succeeded · verified · rubric unknown");
    assert.deepEqual(d.alerts, ["refs/heads/main moved (1111111 → 2222222): git update-ref refs/heads/main 1111111 <b>"]);
    const html = renderDetails(d, "x:");
    assert.match(html, /Beyond its branch \(1\)[\s\S]*⚠ refs\/heads\/main moved \(1111111 → 2222222\): git update-ref refs\/heads\/main 1111111 &lt;b&gt;/);
    assert.ok(html.indexOf("Beyond its branch") < html.indexOf("Files ("), "the alerts come before the files");
    assert.doesNotMatch(renderDetails(buildDetails({ status: job("j", "succeeded") }), "x:"), /Beyond its branch/);
  });

  test("from the evidence: verify with its output tail, rubric per criterion, timings, cost unknown", () => {
    const status = job("ab12cd34", "failed", { verify_exit: 1, error: "verify failed", category: "verify_failed" });
    const result: ResultResult = {
      id: "ab12cd34", state: "failed", summary: "failed: verify exited 1\n1 file changed",
      evidence: {
        id: "ab12cd34", state: "failed", kind: "write", engine: "exec", isolation: "worktree", branch: "hub/ab12cd34", base: "0123456789abcdef", head: "fedcba9876543210",
        files: [{ path: "a.txt", change: "modified", added: 2, deleted: 1 }, { path: "b.bin", change: "added", added: -1, deleted: 0 }],
        commits: [],
        verify: { command: "make test", exit_code: 1, timed_out: false, duration_ms: 1500, output_tail: "FAIL <TestX>\n", commit: "fedcba9876543210" },
        observed: { commands: [], user_checkout_dirty: false },
        claimed: { report: "all done" },
        cost: { usd: 1, known: false, reserved_usd: 1, tokens: 0, calls: 3, models: ["m1", "m2"] },
        timings: { queued_ms: 100, preparing_ms: 200, setup_ms: 0, running_ms: 12_000, needs_input_ms: 5_000, verifying_ms: 1_500, total_ms: 13_800 },
        rubric: {
          verdict: "needs_revision", line: "1 of 2 criteria pass",
          criteria: [
            { id: "c1", text: "tests pass", kind: "verify", status: "fail", evidence: "exit 1", by: "hub" },
            { id: "c2", text: "touches only a.txt", kind: "only", status: "pass", by: "hub" },
          ],
        },
        salvaged: false, error: "verify failed", category: "verify_failed", notes: ["a note"],
      },
    };
    const d = buildDetails({ status, result });
    assert.equal(d.headline, "failed · verify failed (exit 1)");
    assert.equal(d.tone, "bad");
    assert.equal(d.error, "verify failed (verify_failed)");
    assert.deepEqual(d.verify, { command: "make test", outcome: "failed (exit 1)", tone: "bad", duration: "1.5s", commit: "fedcba987654", outputTail: "FAIL <TestX>\n" });
    assert.equal(d.rubric?.verdict, "needs revision");
    assert.deepEqual(d.rubric?.criteria.map((c) => `${c.id}:${c.status}:${c.tone}`), ["c1:fail:bad", "c2:pass:ok"]);
    assert.deepEqual(d.timings, [["queued", "100 ms"], ["preparing", "200 ms"], ["running", "12s"], ["of which waiting for answers", "5.0s"], ["verifying", "1.5s"], ["total", "13s"]]);
    assert.deepEqual(d.cost, [["cost", "$1.00 (unknown: the whole reservation is charged)"], ["reserved", "$1.00"], ["tokens", "0"], ["model calls", "3"], ["models", "m1, m2"]]);
    assert.ok(d.merge);
    const html = renderDetails(d, "vscode-resource:");
    // Escaped: the output's "<TestX>" is text, not a tag.
    assert.match(html, /FAIL &lt;TestX&gt;/);
    assert.doesNotMatch(html, /<TestX>/);
    for (const want of ["Summary", "Files (2)", "Verify", "Output (tail)", "Rubric", "Cost", "Timings", "Questions (0)", "a.txt", "+2 −1", "binary", "tests pass", "all done", "a note"]) {
      assert.ok(html.includes(esc(want)), `the page lacks ${want}`);
    }
    // Themed by the editor's variables, scripts off by the CSP.
    assert.match(html, /var\(--vscode-editor-background\)/);
    assert.match(html, /Content-Security-Policy" content="default-src 'none'; style-src vscode-resource: 'unsafe-inline';"/);
    assert.match(html, /href="command:hub\.merge\?%5B%22ab12cd34%22%5D"/);
    // A file links to its diff with the job and the file as the command's arguments.
    const link = /href="command:hub\.openDiff\?([^"]+)"/.exec(html);
    assert.ok(link);
    assert.deepEqual(JSON.parse(decodeURIComponent(link[1].replace(/&quot;/g, '"'))), ["ab12cd34", { path: "a.txt", change: "modified", added: 2, deleted: 1 }]);
  });

  test("the trace: a row a step, nested by depth, failures marked, gaps and sums shown, the rest paged", () => {
    const trace: TraceResult = {
      id: "ab12cd34", state: "failed", started: "2026-01-01T00:00:00Z", ended: "2026-01-01T00:00:02Z", running_us: 2_000_000, phase_gap_us: 1_000, total: 60, next: 5,
      entries: [
        { step: 1, id: "launch", kind: "phase", name: "launch", start: "2026-01-01T00:00:00Z", duration_us: 12_000 },
        { step: 2, id: "run", kind: "phase", name: "run", start: "2026-01-01T00:00:00.012Z", duration_us: 1_500_000, gap_us: 40_000, result: "failed: exit 1" },
        { step: 3, id: "m1", parent: "run", kind: "model", name: "gpt-x", start: "2026-01-01T00:00:00.020Z", duration_us: 1_200_000, tokens_in: 1000, tokens_out: 50, usd: 0.0125, args: "lead: 2 messages", result: "→ run_shell" },
        { step: 4, id: "t2", parent: "run", kind: "tool", name: "run_shell", start: "2026-01-01T00:00:01.3Z", duration_us: 850, args: '{"command":"make <test>"}', result: "exit code 1", failed: true },
      ],
    };
    const d = buildDetails({ status: job("ab12cd34", "failed"), trace });
    assert.deepEqual(d.trace?.rows.map((r) => [r.step, r.kind, r.name, r.depth, r.start, r.took, r.tokens, r.cost, r.tone]), [
      [1, "phase", "launch", 0, "+0ms", "12ms", "", "", "plain"],
      [2, "phase", "run", 0, "+12ms", "1.5s (gap 40ms)", "", "", "plain"],
      [3, "model", "gpt-x", 1, "+20ms", "1.2s", "1000/50", "$0.0125", "plain"],
      [4, "tool", "run_shell", 1, "+1.3s", "0.85ms", "", "", "bad"],
    ]);
    assert.equal(d.trace?.rows[3].summary, 'FAILED · {"command":"make <test>"} ⇒ exit code 1');
    assert.equal(d.trace?.sums, "running 2.0s, phases cover 2.0s (gap 1.00ms) · 1 model calls, 1 tool calls, 0 commands");
    assert.equal(d.trace?.more, "steps 1–4 of 60; the rest: hub trace ab12cd34 --from 5");
    const html = renderDetails(d, "x:");
    assert.match(html, /<h2>Trace \(4\+ steps\)<\/h2>/);
    assert.match(html, /<td style="padding-left: 14px">gpt-x<\/td>/);
    assert.match(html, /make &lt;test&gt;/);
    assert.doesNotMatch(html, /make <test>/);
    assert.match(html, /<tr class="tone-bad">/);
    // No trace read: no section.
    assert.doesNotMatch(renderDetails(buildDetails({ status: job("j", "running") }), "x:"), /Trace/);
    assert.equal(us(0), "0ms");
    assert.equal(us(125_000_000), "2m05s");
  });

  test("helpers", () => {
    assert.equal(esc(`<a href="x">&'`), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    assert.equal(commandLink("hub.showLog", ["x"], "Log <1>"), '<a href="command:hub.showLog?%5B%22x%22%5D">Log &lt;1&gt;</a>');
    assert.equal(clock("2026-01-01T12:34:56.789Z"), "12:34:56 UTC");
    assert.equal(clock("soon"), "soon");
    assert.equal(ms(400), "400 ms");
    assert.equal(ms(1500), "1.5s");
    assert.equal(ms(65_000), "1m 05s");
    assert.equal(ms(-1), "?");
  });
});

describe("details from a real daemon", () => {
  let sb: Sandbox;
  let session: Session;

  before(async () => {
    sb = await Sandbox.create();
    await sb.serve();
    session = new Session({ home: () => sb.home, binary: () => hubBin, autoStart: () => false, env: sb.env, clientName: "unit" });
    await session.start();
    assert.equal(session.state, "connected", session.lastError?.display());
  });

  after(async () => {
    session?.dispose();
    await sb?.cleanup();
  });

  test("a job that asked a question and failed its verify: every part of the view is filled", async () => {
    const id = await sb.startJob(
      "ask, then fail verify",
      'hub progress "asking"; a=$(hub ask "which color?"); echo "$a" > color.txt',
      "--verify", "echo checking color.txt; cat color.txt; exit 3",
    );
    const q = await until("the question", () => session.model.question(id), 15000);
    await session.request(Methods.JobReply, { id, question_id: q.id, text: "teal" });
    await until("the job to fail", () => session.model.get(id)?.state === "failed", 30000);

    const status = session.model.get(id)!;
    const result = await session.request(Methods.JobResult, { id, evidence: true });
    const files = await session.request(Methods.JobFiles, { id });
    const history = new QuestionHistory();
    const journal = await session.request(Methods.JobEvents, { id, since: 0, limit: 500 });
    history.take(journal.events);
    assert.equal(history.cursor, journal.cursor);

    assert.ok(session.supports(Capabilities.Trace), "the daemon serves job/trace");
    const trace = await session.request(Methods.JobTrace, { id, limit: 500 });
    const d = buildDetails({ status, result, files, questions: history.entries(), trace });
    assert.equal(d.headline, "failed · verify failed (exit 3)");
    // hub's phases, in order, adding up to the running time; the verify failed.
    // The worker's own entry, under the run, is the command hub ran.
    assert.deepEqual(d.trace?.rows.map((r) => (r.kind === "command" ? "worker" : r.name)), ["launch", "prepare", "run", "worker", "commit", "verify", "finish"]);
    assert.match(d.trace?.rows[3].name ?? "", /hub ask "which color\?"/);
    assert.deepEqual(d.trace?.rows.map((r) => r.depth), [0, 0, 0, 1, 0, 0, 0]);
    assert.equal(d.trace?.rows.find((r) => r.name === "verify")?.tone, "bad");
    assert.ok(trace.running_us > 0 && trace.phase_gap_us < trace.running_us * 0.05, `running ${trace.running_us}µs, gap ${trace.phase_gap_us}µs`);
    assert.deepEqual(d.facts.find(([k]) => k === "branch"), ["branch", `hub/${id}`]);
    assert.ok(d.summary && d.summary.length > 0, "a summary");
    assert.deepEqual(d.files.map((f) => f.path), ["color.txt"]);
    assert.equal(d.verify?.command, "echo checking color.txt; cat color.txt; exit 3");
    assert.equal(d.verify?.outcome, "failed (exit 3)");
    assert.match(d.verify?.outputTail ?? "", /checking color\.txt\nteal/);
    assert.equal(d.questions.length, 1);
    assert.equal(d.questions[0].text, "which color?");
    assert.match(d.questions[0].settled, /^answered at \d\d:\d\d:\d\d UTC$/);
    assert.ok(d.timings.some(([k]) => k === "total"), d.timings.join(";"));
    assert.ok(d.timings.some(([k]) => k === "of which waiting for answers"), d.timings.join(";"));
    const html = renderDetails(d, "x:");
    assert.match(html, /<h2>Trace \(7 steps\)<\/h2>/);
    assert.match(html, /which color\?/);
    assert.match(html, /teal/);
    assert.doesNotMatch(html, /Beyond its branch/);
  });

  test("a job that moves a branch of the user's repository: its alert in the row, the tooltip and the page", async () => {
    const main = (await sb.git("rev-parse", "HEAD")).trim();
    const id = await sb.startJob("write, and move a branch it does not own", "echo x > x.txt; git update-ref refs/heads/side HEAD");
    await until("the job to end", () => session.model.get(id)?.state === "succeeded", 30000);
    const status = session.model.get(id)!;
    assert.equal(status.alerts?.length, 1, JSON.stringify(status.alerts));
    assert.match(status.alerts![0], /refs\/heads\/side/);
    assert.match(fmt.description(status), /^succeeded · ⚠ 1 alert · /);
    assert.match(fmt.tooltip(status), /\n⚠ .*refs\/heads\/side/);
    const html = renderDetails(buildDetails({ status }), "x:");
    assert.match(html, /Beyond its branch \(1\)[\s\S]*refs\/heads\/side/);
    assert.equal((await sb.git("rev-parse", "side")).trim(), main, "the job moved side to its base");
  });
});
