// Landing: what the tree, the details and the review view say of a job's
// forecast and landing, the messages of a job/land answer; then the same
// from a real daemon: two jobs that edit one file differently are forecast
// to conflict, one lands, the other is stopped by the conflict, and the
// review packet says so.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { buildDetails, renderDetails } from "../../src/model/details";
import * as fmt from "../../src/model/format";
import { contextValue, landable, landBatches } from "../../src/model/jobs";
import { buildReview, renderReview } from "../../src/model/review";
import { Session } from "../../src/model/session";
import { HubError } from "../../src/protocol/errors";
import { Capabilities, ErrorCodes, Methods, type JobStatus, type LandResult, type ReviewResult } from "../../src/protocol/generated";
import { hubBin, Sandbox, until } from "./harness";

function job(id: string, state: JobStatus["state"], extra: Partial<JobStatus> = {}): JobStatus {
  return {
    id, state, kind: "write", engine: "exec", task: `task ${id}`, cost: { usd: 0, known: true, reserved_usd: 0, tokens: 0 }, cost_usd: 0, cost_known: true,
    created_at: "2026-01-01T00:00:00Z", elapsed_ms: 9000, cursor: 1, branch: `hub/${id}`, repo: "/r", base: "b0", head: "h1", target: "main", ...extra,
  };
}

const conflictAB = { with: "cd34ef56", branch: "hub/cd34ef56", files: ["src/a.go"], line: "conflicts with hub/cd34ef56 in src/a.go" };
const conflictTarget = { with: "target", branch: "main", files: ["x.go", "y.go"], line: "main moved: rebase needed, conflicts in x.go, y.go" };
const landedOnMain = { into: "main", commit: "c0ffee1234567890", from: "0123456789abcdef", head: "feedface00000000", mode: "merge", at: "2026-01-01T00:01:02Z", verified: "verify passed" };

describe("landing, pure", () => {
  test("the row: predicted conflicts after the outcome, landed on its target; nothing of either when there is none", () => {
    const c = job("ab12cd34", "succeeded", { verify_exit: 0, forecast: { target: "main", conflicts: [conflictAB], at: "2026-01-01T00:00:10Z" } });
    assert.equal(fmt.description(c), "succeeded · verified · conflicts with hub/cd34ef56 in src/a.go · exec · 9s · $0.00 · hub/ab12cd34");
    const two = job("ab12cd34", "running", { progress: "p", forecast: { conflicts: [conflictTarget, conflictAB, conflictAB], at: "" } });
    assert.equal(fmt.description(two), "exec · 9s · $0.00 · main moved: rebase needed, conflicts in x.go, y.go (+2 more conflicts) · p · hub/ab12cd34");
    assert.equal(fmt.conflictLine({ conflicts: [conflictAB, conflictTarget], at: "" }), "conflicts with hub/cd34ef56 in src/a.go (+1 more conflict)");
    const landed = job("ab12cd34", "succeeded", { verify_exit: 0, landed: landedOnMain, forecast: { conflicts: [conflictAB], at: "" } });
    // A landed job's forecast is stale: it shows where it landed, never a conflict.
    assert.equal(fmt.description(landed), "succeeded · verified · landed on main · exec · 9s · $0.00 · hub/ab12cd34");
    assert.deepEqual(fmt.conflicts(landed), []);
    assert.equal(fmt.description(job("ab12cd34", "succeeded", { forecast: { target: "main", at: "" } })), "succeeded · exec · 9s · $0.00 · hub/ab12cd34");
    // A conflict without a line is made of its parts.
    assert.equal(fmt.conflictText({ with: "x", branch: "hub/x", files: ["a", "b", "c", "d"] }), "conflicts with hub/x in a, b, c (+1 more)");
    const tip = fmt.tooltip(landed);
    assert.match(tip, /^landed on main as c0ffee1 \(verify passed\)$/m);
    assert.match(fmt.tooltip(c), /^predicted: conflicts with hub\/cd34ef56 in src\/a\.go$/m);
  });

  test("context values and what can land", () => {
    assert.equal(contextValue(job("a", "succeeded", { landed: landedOnMain })), "job-landed");
    assert.equal(contextValue(job("a", "failed")), "job-ended");
    assert.ok(landable(job("a", "succeeded")));
    assert.ok(landable(job("a", "failed")));
    assert.ok(!landable(job("a", "running")));
    assert.ok(!landable(job("a", "succeeded", { landed: landedOnMain })));
    assert.ok(!landable(job("a", "succeeded", { head: "b0" })), "no commits: nothing to land");
    assert.ok(!landable(job("a", "succeeded", { kind: "read", branch: undefined })));
    // One job/land per repository and target branch.
    const batches = landBatches([job("a", "succeeded"), job("b", "succeeded", { repo: "/other" }), job("c", "succeeded"), job("d", "succeeded", { target: "dev" })]);
    assert.deepEqual(batches.map((b) => b.map((j) => j.id).join("")), ["ac", "b", "d"]);
  });

  test("a land answer: the line as the transient message, an error per job that did not land, with files and why", () => {
    const r: LandResult = {
      into: "main", from: "aaaaaaa", tip: "bbbbbbb", checkout: "updated",
      line: "1 landed, 1 conflict, 1 red, 1 skipped; main aaaaaaa → bbbbbbb, checkout updated",
      jobs: [
        { id: "j1", outcome: "landed", commit: "bbbbbbb" },
        { id: "j2", outcome: "conflict", files: ["a.go", "b.go"], reason: "hub/j2 conflicts with main in a.go, b.go" },
        {
          id: "j3", outcome: "red", commit: "ccccccc", reason: "verify on the integrated commit ccccccc: exit status 1",
          verify: { command: "go test ./...", exit_code: 1, timed_out: false, duration_ms: 10, output_tail: "FAIL", commit: "ccccccc" },
        },
        { id: "j4", outcome: "skipped", reason: "main moved under hub" },
        { id: "j5", outcome: "already", reason: "main already holds 1234567" },
      ],
    };
    const rep = fmt.landReport(r);
    assert.equal(rep.line, "Hub: 1 landed, 1 conflict, 1 red, 1 skipped; main aaaaaaa → bbbbbbb, checkout updated");
    assert.deepEqual(rep.failures, [
      "Hub: job j2 did not land on main: hub/j2 conflicts with main in a.go, b.go. Nothing moved: resolve the conflict on the job's branch, then land it again.",
      "Hub: job j3 did not land on main: verify on the integrated commit ccccccc: exit status 1. Check: go test ./... (exit 1). Nothing moved: main is as it was.",
      "Hub: job j4 was not tried on main: main moved under hub.",
    ]);
    // The files are named when the reason does not; a follow-up job is named.
    assert.equal(
      fmt.landFailure("main", { id: "j", outcome: "conflict", files: ["q.txt"], follow_up: "fu123456" }),
      "Hub: job j did not land on main: conflict. Conflicting files: q.txt. Job fu123456 was started to resolve it.",
    );
    assert.equal(fmt.landFailure("main", { id: "j", outcome: "would" }), undefined);
  });

  test("the details: the forecast, then the landing record; Land only with the capability and before it landed", () => {
    const c = job("ab12cd34", "succeeded", { forecast: { target: "main", behind: 3, touched: ["src/a.go"], conflicts: [conflictAB], at: "2026-01-01T00:00:10Z" } });
    const d = buildDetails({ status: c, canLand: true });
    assert.equal(d.landing?.headline, "1 conflict predicted");
    assert.equal(d.landing?.tone, "warn");
    assert.deepEqual(d.landing?.rows, [
      ["target", "main"], ["behind", "3 commits: landing merges onto the new tip"], ["touched", "1 file"], ["forecast at", "00:00:10 UTC"],
    ]);
    assert.deepEqual(d.landing?.conflicts, [{ line: "conflicts with hub/cd34ef56 in src/a.go", files: ["src/a.go"] }]);
    assert.ok(d.land);
    const html = renderDetails(d, "x:");
    assert.match(html, /<section id="landing"><h2>Landing<\/h2>/);
    assert.match(html, /href="command:hub\.land\?%5B%22ab12cd34%22%5D">Land</);
    assert.match(html, /conflicts with hub\/cd34ef56 in src\/a\.go/);
    // Without the capability: Merge as before, no Land.
    const old = renderDetails(buildDetails({ status: c }), "x:");
    assert.doesNotMatch(old, /command:hub\.land\?/);
    assert.match(old, /command:hub\.merge\?/);
    const clean = buildDetails({ status: job("a", "succeeded", { forecast: { target: "main", at: "" } }), canLand: true });
    assert.equal(clean.landing?.headline, "no conflicts predicted");
    assert.deepEqual(clean.landing?.rows[1], ["behind", "no: the target has not moved"]);

    const l = buildDetails({ status: job("ab12cd34", "succeeded", { landed: landedOnMain }), canLand: true });
    assert.equal(l.landing?.headline, "landed on main");
    assert.deepEqual(l.landing?.rows.find(([k]) => k === "commit"), ["commit", "c0ffee123456"]);
    assert.ok(!l.land && l.landed);
    const lhtml = renderDetails(l, "x:");
    assert.doesNotMatch(lhtml, /command:hub\.(land|merge)\?/);
    assert.match(lhtml, /command:hub\.cleanup\?/);
    // Running: no landing actions.
    assert.ok(!buildDetails({ status: job("a", "running"), canLand: true }).land);
  });

  test("the review page: a row per job, Land for those that can, the ready ones first in style", () => {
    const r: ReviewResult = {
      text: "3 jobs: 1 ready to land, 1 with conflicts, 0 failed, 1 landed\nab12cd34 succeeded …",
      jobs: [
        { id: "ab12cd34", state: "succeeded", task: "add <b>", files: 2, added: 10, deleted: 1, verify: "pass", cost_usd: 0.5, next: "land" },
        { id: "cd34ef56", state: "succeeded", task: "other", files: 1, added: 1, deleted: 1, verify: "fail", rubric: "needs_revision", cost_usd: 0, conflicts: [conflictAB], risks: ["lockfile"], next: "read its result; fix or retry" },
        { id: "ef56ab12", state: "succeeded", task: "done", files: 1, added: 1, deleted: 0, cost_usd: 0, landed: landedOnMain, next: "cleanup (landed on main)" },
      ],
    };
    const v = buildReview(r, true);
    assert.equal(v.headline, "3 jobs: 1 ready to land, 1 with conflicts, 0 failed, 1 landed");
    assert.deepEqual(v.rows.map((x) => [x.id, x.land, x.ready]), [["ab12cd34", true, true], ["cd34ef56", true, false], ["ef56ab12", false, false]]);
    assert.equal(v.rows[0].change, "2 files +10 −1");
    assert.equal(v.rows[1].rubric, "needs revision");
    assert.equal(v.rows[2].landed, "landed on main as c0ffee1");
    assert.equal(v.landable, 2);
    const html = renderReview(v, "x:");
    assert.match(html, /href="command:hub\.land\?%5B%22ab12cd34%22%5D">Land</);
    assert.doesNotMatch(html, /command:hub\.land\?%5B%22ef56ab12/);
    assert.match(html, /add &lt;b&gt;/);
    assert.match(html, /command:hub\.landAll/);
    assert.match(html, /risks: lockfile/);
    // Without the capability nothing offers to land.
    assert.doesNotMatch(renderReview(buildReview(r, false), "x:"), /command:hub\.land(All)?\?/);
    assert.match(renderReview(buildReview({ text: "", jobs: [] }, true), "x:"), /No ended job waits to land\./);
  });
});

describe("landing with a real daemon", () => {
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

  test("the capability, forecast conflicts in the model, one lands, the other stops on the conflict, the review says so", async () => {
    assert.ok(session.supports(Capabilities.Land), `capabilities: ${session.info?.capabilities.join(" ")}`);
    await assert.rejects(session.need("no-such-capability", "fly"), (e: unknown) => e instanceof HubError && e.code === ErrorCodes.MethodNotFound && /cannot fly/.test(e.message));
    await session.need(Capabilities.Land, "land jobs");

    const a = await sb.startJob("one", "printf 'one\\n' > keep.txt");
    const b = await sb.startJob("two", "printf 'two\\n' > keep.txt");
    await until("both jobs to succeed", () => session.model.get(a)?.state === "succeeded" && session.model.get(b)?.state === "succeeded", 30000);
    // The forecast reaches the model through job/changed, the tree's row with it.
    const fa = await until("a's forecast to predict the conflict with b", () => fmt.conflicts(session.model.get(a)!).find((c) => c.with === b), 20000);
    assert.deepEqual(fa.files, ["keep.txt"]);
    assert.equal(fa.branch, `hub/${b}`);
    assert.match(fmt.description(session.model.get(a)!), new RegExp(`^succeeded · conflicts with hub/${b} in keep\\.txt · exec · `));
    assert.equal(session.model.get(a)!.target, "main");

    const review = await session.request(Methods.JobReview, { all_ended: true });
    const v = buildReview(review, true);
    assert.deepEqual(v.rows.map((x) => x.id).sort(), [a, b].sort());
    assert.ok(v.rows.every((x) => x.land && x.conflicts.length === 1), JSON.stringify(v.rows));

    const landed = await session.request(Methods.JobLand, { ids: [a] });
    assert.equal(landed.into, "main");
    assert.deepEqual(landed.jobs.map((j) => j.outcome), ["landed"]);
    const rep = fmt.landReport(landed);
    assert.match(rep.line, /^Hub: 1 landed; main [0-9a-f]{7,} → [0-9a-f]{7,}, checkout updated$/);
    assert.deepEqual(rep.failures, []);
    assert.equal((await sb.git("show", "main:keep.txt")).trim(), "one");
    const la = await until("a to read landed in the model", () => session.model.get(a)?.landed, 10000);
    assert.equal(la.into, "main");
    assert.equal(contextValue(session.model.get(a)!), "job-landed");
    assert.match(fmt.description(session.model.get(a)!), /^succeeded · landed on main · exec · /);

    const stopped = await session.request(Methods.JobLand, { ids: [b] });
    assert.deepEqual(stopped.jobs.map((j) => j.outcome), ["conflict"]);
    const fails = fmt.landReport(stopped).failures;
    assert.equal(fails.length, 1);
    assert.match(fails[0], new RegExp(`^Hub: job ${b} did not land on main: .*keep\\.txt.*Nothing moved`));
    assert.equal((await sb.git("show", "main:keep.txt")).trim(), "one", "main did not move");
    // Land is refused for a job that already landed; the extension shows the daemon's words.
    await assert.rejects(session.request(Methods.JobLand, { ids: [a] }), (e: unknown) => e instanceof HubError && e.code === ErrorCodes.WrongState);
  });
});
