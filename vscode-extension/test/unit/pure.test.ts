// The parts with no daemon behind them: path resolution, the version rule,
// the text the tree and status bar show, and the model's bookkeeping.

import assert from "node:assert/strict";
import * as os from "node:os";
import { describe, test } from "node:test";

import * as fmt from "../../src/model/format";
import { contextValue, JobModel } from "../../src/model/jobs";
import { ClientErrorCodes, HubError } from "../../src/protocol/errors";
import { ErrorCodes, PROTOCOL_VERSION, type JobStatus } from "../../src/protocol/generated";
import { daemonLog, hubBinary, hubHome, socketPath } from "../../src/protocol/paths";
import { checkProtocol } from "../../src/protocol/version";

function job(id: string, state: JobStatus["state"], extra: Partial<JobStatus> = {}): JobStatus {
  return {
    id, state, kind: "write", engine: "exec", task: `task ${id}`, cost: { usd: 0, known: true, reserved_usd: 0, tokens: 0 }, cost_usd: 0, cost_known: true,
    created_at: "2026-01-01T00:00:00Z", elapsed_ms: 0, cursor: 1, ...extra,
  };
}

describe("socket resolution", () => {
  test("setting, then HUB_HOME, then XDG_DATA_HOME/hub, then ~/.local/share/hub", () => {
    const env = { HOME: "/u", HUB_HOME: "/h", XDG_DATA_HOME: "/x" };
    assert.equal(hubHome("/s", env), "/s");
    assert.equal(hubHome("~/hubhome", env), "/u/hubhome");
    assert.equal(hubHome("", env), "/h");
    assert.equal(hubHome(undefined, { HOME: "/u", XDG_DATA_HOME: "/x" }), "/x/hub");
    assert.equal(hubHome("  ", { HOME: "/u" }), "/u/.local/share/hub");
    assert.equal(hubHome(undefined, {}), `${os.homedir()}/.local/share/hub`);
    assert.equal(socketPath("/h"), "/h/hub.sock");
    assert.equal(daemonLog("/h"), "/h/logs/daemon.log");
  });

  test("binary: setting, then HUB_BIN, then hub on PATH", () => {
    assert.equal(hubBinary("/opt/hub", { HUB_BIN: "/b/hub" }), "/opt/hub");
    assert.equal(hubBinary("", { HUB_BIN: "/b/hub" }), "/b/hub");
    assert.equal(hubBinary(undefined, {}), "hub");
  });
});

describe("protocol version", () => {
  test("0.x needs the same minor; 1.x a daemon minor at least ours", () => {
    assert.equal(checkProtocol(PROTOCOL_VERSION, PROTOCOL_VERSION), undefined);
    assert.equal(checkProtocol("0.2.7", "0.2.0"), undefined);
    assert.equal(checkProtocol("1.4.0", "1.2.0"), undefined);
    const older = checkProtocol("0.1.0", "0.2.0");
    assert.ok(older instanceof HubError);
    assert.equal(older.code, ClientErrorCodes.VersionMismatch);
    assert.match(older.message, /protocol 0\.1\.0.*speaks 0\.2\.0/);
    assert.match(older.hint ?? "", /update hub/);
    assert.match(checkProtocol("0.3.0", "0.2.0")?.hint ?? "", /update the hub extension/);
    assert.match(checkProtocol("1.1.0", "1.2.0")?.hint ?? "", /update hub/);
    assert.ok(checkProtocol("", "0.2.0"));
  });
});

describe("format", () => {
  test("elapsed, cost, label, description", () => {
    assert.equal(fmt.elapsed(12_400), "12s");
    assert.equal(fmt.elapsed(184_000), "3m 04s");
    assert.equal(fmt.elapsed(3_720_000), "1h 02m");
    assert.equal(fmt.cost({ cost: { usd: 0.456, known: true, reserved_usd: 0, tokens: 0 } }), "$0.46");
    assert.equal(fmt.cost({ cost: { usd: 0, known: false, reserved_usd: 0, tokens: 0 } }), "$?");
    assert.equal(fmt.taskLabel("fix the parser\nand more"), "fix the parser");
    const long = "x".repeat(80);
    assert.equal([...fmt.taskLabel(long)].length, 60);
    assert.ok(fmt.taskLabel(long).endsWith("…"));
    assert.equal(fmt.description(job("a", "running", { elapsed_ms: 12_000, progress: "half  way\nthere" })), "exec · 12s · $0.00 · half way there · a");
    assert.equal(fmt.description(job("a", "queued", { cost: { usd: 0, known: false, reserved_usd: 0, tokens: 0 } })), "exec · 0s · $? · a");
    // The branch (hub/<id>) names the job where it has one.
    assert.equal(fmt.description(job("ab12cd34", "running", { branch: "hub/ab12cd34", progress: "p" })), "exec · 0s · $0.00 · p · hub/ab12cd34");
  });

  test("an ended job reads its state and verify outcome, not its stale progress", () => {
    const done = job("ab12cd34", "succeeded", { branch: "hub/ab12cd34", elapsed_ms: 9_000, progress: "writing greeting", verify_exit: 0 });
    assert.equal(fmt.description(done), "succeeded · verified · exec · 9s · $0.00 · hub/ab12cd34");
    const failed = job("ab12cd34", "failed", { branch: "hub/ab12cd34", progress: "writing greeting", verify_exit: 1 });
    assert.equal(fmt.description(failed), "failed · verify failed (exit 1) · exec · 0s · $0.00 · hub/ab12cd34");
    assert.equal(fmt.outcome(job("a", "succeeded")), "succeeded");
    // A success whose rubric needs revision or could not be checked says so; a satisfied one, or a failure, does not.
    assert.equal(fmt.outcome(job("a", "succeeded", { verify_exit: 0, rubric: "needs_revision" })), "succeeded · verified · rubric needs revision");
    assert.equal(fmt.outcome(job("a", "succeeded", { rubric: "unknown" })), "succeeded · rubric unknown");
    assert.equal(fmt.outcome(job("a", "succeeded", { rubric: "satisfied" })), "succeeded");
    assert.equal(fmt.outcome(job("a", "failed", { rubric: "failed" })), "failed");
    // What it did beyond its branch comes right after its outcome, where a narrow side bar still shows it.
    const moved = job("ab12cd34", "succeeded", { branch: "hub/ab12cd34", verify_exit: 0, alerts: ["refs/heads/main moved (1111111 → 2222222): git update-ref refs/heads/main 1111111", "the stash changed"] });
    assert.equal(fmt.description(moved), "succeeded · verified · ⚠ 2 alerts · exec · 0s · $0.00 · hub/ab12cd34");
    assert.equal(fmt.alertWord(job("a", "succeeded", { alerts: ["x"] })), "⚠ 1 alert");
    assert.equal(fmt.alertWord(job("a", "succeeded")), "");
    assert.match(fmt.tooltip(moved), /\n⚠ refs\/heads\/main moved \(1111111 → 2222222\): git update-ref refs\/heads\/main 1111111\n⚠ the stash changed\n/);
    assert.equal(fmt.outcome(job("a", "timed_out")), "timed out");
    assert.equal(fmt.outcome(job("a", "cancelled", { verify_exit: 0 })), "cancelled · verified");
    // While it runs, verify's exit is not an outcome yet.
    assert.equal(fmt.outcome(job("a", "verifying")), "verifying");
    assert.equal(fmt.outcome(job("a", "needs_input")), "needs input");
    assert.equal(fmt.description(job("r", "succeeded", { kind: "read" })), "succeeded · exec · 0s · $0.00 · r");
    assert.equal(fmt.verifyOutcome(undefined), "");
    assert.equal(fmt.verifyOutcome(0), "verified");
    assert.equal(fmt.verifyOutcome(2), "verify failed (exit 2)");
    assert.equal(fmt.answerSent("ab12cd34"), "Hub: answer sent to job ab12cd34");
    assert.ok(fmt.transientMs > 0 && fmt.transientMs <= 10_000);
  });

  test("tree and status-bar strings", () => {
    assert.equal(fmt.verifyLabel(0), "Verify: passed (exit 0)");
    assert.equal(fmt.verifyLabel(2), "Verify: failed (exit 2)");
    assert.equal(fmt.diffstat({ added: 3, deleted: 1 }), "+3 −1");
    assert.equal(fmt.diffstat({ added: -1, deleted: 0 }), "binary");
    assert.equal(fmt.commitLabel("0123456789abcdef", "subject"), "0123456 subject");
    assert.equal(fmt.diffTitle("ab12cd34", "src/a.go"), "src/a.go (ab12cd34: base ↔ head)");
    assert.equal(fmt.questionLabel("which\ncolor?"), "Question: which color?");
    assert.equal(fmt.statusText({ running: 2, needsInput: 1 }, 1.234), "$(pulse) hub: 2 running · 1 needs input · $1.23");
    assert.equal(fmt.disconnectedText, "$(debug-disconnect) hub: disconnected");
    assert.equal(fmt.badgeTooltip(2), "2 job(s) need input");
    const tip = fmt.tooltip(job("ab12cd34", "failed", { branch: "hub/ab12cd34", error: "verify failed" }));
    assert.match(tip, /^job ab12cd34 · failed$/m);
    assert.match(tip, /branch: hub\/ab12cd34/);
    assert.match(tip, /error: verify failed/);
  });

  test("a refused merge shows the message, the files and the hint", () => {
    const err = new HubError(ErrorCodes.Conflict, "merging hub/x into main would conflict", { hint: "Resolve it by hand.", files: ["a.txt", "b.txt"] });
    assert.equal(fmt.mergeError("x", err), "Hub: cannot merge job x: merging hub/x into main would conflict. Conflicting files: a.txt, b.txt. Resolve it by hand.");
    const dirty = new HubError(ErrorCodes.WrongState, "the checkout has uncommitted changes", { hint: "Commit or stash them." });
    assert.equal(fmt.mergeError("x", dirty), "Hub: cannot merge job x: the checkout has uncommitted changes. Commit or stash them.");
  });
});

describe("JobModel", () => {
  test("a job/changed applies only when its cursor is at least the stored one", () => {
    const m = new JobModel();
    assert.ok(m.apply(job("a", "running", { cursor: 5 })));
    assert.ok(!m.apply(job("a", "queued", { cursor: 3 })));
    assert.equal(m.get("a")?.state, "running");
    assert.ok(m.apply(job("a", "succeeded", { cursor: 5 })));
    assert.equal(m.get("a")?.state, "succeeded");
  });

  test("replaceAll replaces by id, keeps newer views and jobs seen since beginSync", () => {
    const m = new JobModel();
    m.replaceAll([job("old", "running", { cursor: 2 }), job("b", "running", { cursor: 9 })]);
    m.beginSync();
    m.apply(job("new", "queued", { cursor: 20 }));
    m.replaceAll([job("b", "running", { cursor: 7 }), job("c", "queued", { cursor: 8 })]);
    assert.deepEqual(m.all().map((j) => j.id).sort(), ["b", "c", "new"]);
    assert.equal(m.get("b")?.cursor, 9);
  });

  test("groups in order, only when non-empty, with their context values", () => {
    const m = new JobModel();
    m.replaceAll([
      job("q", "queued"), job("r", "verifying"), job("n", "needs_input"), job("t", "timed_out"),
      job("s", "succeeded"), job("f", "failed"), job("p", "preparing"),
    ]);
    assert.deepEqual(m.groups().map((g) => `${g.name}:${g.jobs.map((j) => j.id).sort().join("")}`), [
      "Needs input:n", "Running:pr", "Queued:q", "Succeeded:s", "Failed:ft",
    ]);
    assert.deepEqual(m.counts(), { running: 2, needsInput: 1, queued: 1, ended: 3, total: 7 });
    assert.equal(contextValue({ state: "needs_input" }), "job-needs-input");
    assert.equal(contextValue({ state: "verifying" }), "job-active");
    assert.equal(contextValue({ state: "queued" }), "job-queued");
    assert.equal(contextValue({ state: "cancelled" }), "job-ended");
    assert.equal(contextValue({ state: "failed", kind: "write" }), "job-ended");
    assert.equal(contextValue({ state: "succeeded", kind: "write" }), "job-succeeded");
    assert.equal(contextValue({ state: "succeeded", kind: "read" }), "job-ended-read");
    assert.equal(contextValue({ state: "timed_out", kind: "read" }), "job-ended-read");
  });

  test("a question is announced once, whichever way it comes", () => {
    const m = new JobModel();
    const asked: string[] = [];
    m.onDidAskQuestion((p) => asked.push(`${p.jobId}:${p.question.id}`));
    const q = { id: "q1", kind: "question", text: "color?", asked_at: "2026-01-01T00:00:01Z", expires_at: "2026-01-01T00:10:00Z", cursor: 3 };
    m.questionAsked("a", q);
    m.apply(job("a", "needs_input", { question: q, cursor: 3 }));
    m.replaceAll([job("a", "needs_input", { question: q, cursor: 3 })]);
    assert.deepEqual(asked, ["a:q1"]);
    assert.equal(m.pending().length, 1);
    m.questionAnswered({ job_id: "a", question_id: "q1", expired: false });
    assert.equal(m.pending().length, 0);
    assert.equal(m.question("a"), undefined);
  });
});
