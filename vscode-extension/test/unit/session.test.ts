// The session and the model against a real daemon: jobs started from the CLI
// reach the model, questions come and are answered, and a reconnect loses
// nothing and duplicates nothing.

import assert from "node:assert/strict";
import { after, afterEach, beforeEach, describe, test, type TestContext } from "node:test";

import { Session } from "../../src/model/session";
import { HubClient } from "../../src/protocol/client";
import { Methods, Notifications, type AnswerNotice, type QuestionNotice } from "../../src/protocol/generated";
import { hubBin, median, Sandbox, until } from "./harness";

function newSession(sb: Sandbox): Session {
  return new Session({ home: () => sb.home, binary: () => hubBin, autoStart: () => false, env: sb.env, clientName: "unit" });
}

describe("session", () => {
  let sb: Sandbox;
  let session: Session;
  /** When the model first had each job id (ms since epoch). */
  let seen: Map<string, number>;

  beforeEach(async () => {
    sb = await Sandbox.create();
    await sb.serve();
    session = newSession(sb);
    seen = new Map();
    session.model.onDidChange((e) => {
      const now = Date.now();
      for (const id of e.changed) {
        if (!seen.has(id)) {
          seen.set(id, now);
        }
      }
    });
    await session.start();
    assert.equal(session.state, "connected", session.lastError?.display());
  });

  afterEach(async () => {
    session?.dispose();
    await sb?.cleanup();
  });

  after(() => undefined);

  // How fast is measured by `make bench` (section 3, wake-up), against a
  // floor in the same run; here the times are only reported.
  test("a job started from the CLI reaches the model", async (t: TestContext) => {
    const fromCreated: number[] = [];
    const fromSpawn: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t0 = Date.now();
      const id = await sb.startJob(`latency ${i}`, `echo ${i} > f${i}.txt`);
      await until(`job ${id} in the model`, () => seen.has(id), 5000);
      const at = seen.get(id)!;
      fromCreated.push(at - Date.parse(session.model.get(id)!.created_at));
      fromSpawn.push(at - t0);
    }
    const line = (xs: number[]) => `${xs.join(" ")} ms (median ${median(xs)}, max ${Math.max(...xs)})`;
    t.diagnostic(`created_at → model: ${line(fromCreated)}`);
    t.diagnostic(`CLI spawn → model: ${line(fromSpawn)}`);
    // Every job ends, once each, in the model.
    await until("every job to succeed", () => session.model.all().every((j) => j.state === "succeeded") && session.model.size === 10, 20000);
  });

  test("a question shows in the model and as question/asked; the answer resumes the job", async () => {
    const raw = await HubClient.connect(sb.socket);
    const asked: QuestionNotice[] = [];
    const answered: AnswerNotice[] = [];
    raw.onNotification(Notifications.QuestionAsked, (n) => asked.push(n));
    raw.onNotification(Notifications.QuestionAnswered, (n) => answered.push(n));
    await raw.request(Methods.Subscribe, {});
    const announced: string[] = [];
    session.model.onDidAskQuestion((p) => announced.push(`${p.jobId}:${p.question.text}`));
    try {
      const id = await sb.startJob("ask a question", 'a=$(hub ask "which color?"); echo "$a" > color.txt');
      const job = await until("the job to need input", () => {
        const j = session.model.get(id);
        return j?.state === "needs_input" && j.question ? j : undefined;
      });
      assert.equal(job.question!.text, "which color?");
      assert.deepEqual(session.model.pending().map((p) => p.jobId), [id]);
      assert.equal(session.model.counts().needsInput, 1);
      await until("question/asked", () => asked.length > 0);
      assert.equal(asked[0].job_id, id);
      assert.equal(asked[0].question.id, job.question!.id);
      assert.deepEqual(announced, [`${id}:which color?`]);

      const r = await session.request(Methods.JobReply, { id, question_id: job.question!.id, text: "blue" });
      assert.equal(r.question_id, job.question!.id);
      await until("the job to succeed", () => session.model.get(id)?.state === "succeeded");
      await until("question/answered", () => answered.length > 0);
      assert.deepEqual(answered[0], { job_id: id, question_id: job.question!.id, expired: false });
      assert.equal(session.model.pending().length, 0);
      assert.equal((await sb.git("show", `hub/${id}:color.txt`)).trim(), "blue");
    } finally {
      raw.close();
    }
  });

  test("a job started through the client, its events and the summary", async () => {
    const events: string[] = [];
    session.onDidReceiveEvent((ev) => events.push(`${ev.job_id}:${ev.kind}:${ev.text ?? ""}`));
    const r = await session.request(Methods.JobStart, {
      task: "from the client", repo: sb.repo, engine: "exec", exec: 'hub progress "halfway"; echo x > x.txt',
    });
    await until("the job to succeed", () => session.model.get(r.id)?.state === "succeeded");
    assert.ok(events.includes(`${r.id}:progress:halfway`), events.join("\n"));
    const journal = await session.request(Methods.JobEvents, { id: r.id, since: 0 });
    assert.ok(journal.events.some((e) => e.kind === "progress" && e.text === "halfway"));
    // The summary is asked again shortly after a change: it comes to count
    // the job as ended.
    await until("the summary to count the job ended", () => session.summary?.running === 0);
  });

  test("reconnect: every job exactly once, none lost, changes made while away applied", async () => {
    const quick = await sb.startJob("quick", "echo q > q.txt");
    const slow = (await session.request(Methods.JobStart, {
      task: "slow", repo: sb.repo, engine: "exec", exec: 'hub progress "started"; sleep 1; echo s > s.txt',
    })).id;
    await until("quick to succeed and slow to run", () =>
      session.model.get(quick)?.state === "succeeded" && session.model.get(slow)?.progress === "started");

    await sb.shutdown();
    await until("the session to notice", () => session.state === "disconnected" && !session.model.connected, 5000);
    // The last known jobs stay, marked disconnected.
    assert.equal(session.model.get(slow)?.state, "running");
    assert.equal(session.model.size, 2);
    // slow ends in its shim while no daemon runs.
    await sb.waitJobsGone();

    await sb.serve();
    await until("the session to reconnect", () => session.state === "connected", 10000);
    assert.equal(session.model.get(slow)?.state, "succeeded", "the ending that happened while away is applied");
    const third = await sb.startJob("after the reconnect", "echo t > t.txt");
    await until("the new job to succeed", () => session.model.get(third)?.state === "succeeded");

    const ids = session.model.all().map((j) => j.id);
    assert.deepEqual([...ids].sort(), [quick, slow, third].sort());
    assert.equal(new Set(ids).size, ids.length);
    const listed = JSON.parse(await sb.hub("jobs", "--json")).jobs.map((j: { id: string; cursor: number }) => `${j.id}@${j.cursor}`);
    assert.deepEqual(session.model.all().map((j) => `${j.id}@${j.cursor}`).sort(), listed.sort());
  });
});
