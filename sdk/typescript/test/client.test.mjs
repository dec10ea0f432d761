// The TypeScript SDK against a real Drydock server (the fake agent): run by
// sdk/sdk_test.go, which builds the SDK and starts the server. Environment:
// DRYDOCK_URL (the server), DRYDOCK_SDK_MODULE (the built index.js),
// DRYDOCK_SDK_UPLOAD (a tar.gz holding hello.txt).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

const sdk = await import(process.env.DRYDOCK_SDK_MODULE || new URL("../dist/index.js", import.meta.url).href);
const { Client, ApiError, ConnectionError, DrydockError, ScheduleError, isTerminal } = sdk;
const baseUrl = process.env.DRYDOCK_URL || "http://127.0.0.1:9";
// The suites that need a server skip without one; the parser's run anyway.
const live = { skip: process.env.DRYDOCK_URL ? false : "DRYDOCK_URL is not set: run through `go test ./sdk` with DRYDOCK_TEST_E2E=1" };
const token = process.env.DRYDOCK_TOKEN;
const client = new Client({ baseUrl, token, backoffMinMs: 10, backoffMaxMs: 50 });

// A job that writes notes/ and SUMMARY.md in two quick steps.
const quick = (tag) => ({ task: `[fake:steps=2] [fake:delay=10ms] ${tag}` });
// A job that runs until cancelled.
const hanging = (tag) => ({ task: `[fake:hang] [fake:delay=10ms] ${tag}` });

async function until(what, fn) {
  for (let i = 0; i < 400; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("a finished job", live, async () => {
  const created = await client.schedule(quick("finished"));
  const job = await client.wait(created.job_id);

  test("schedule returns the stored pending job with its links", () => {
    assert.match(created.job_id, /^[0-9a-f-]{36}$/);
    assert.equal(created.status, "pending");
    assert.ok(created.events_url.endsWith(`/v1/jobs/${created.job_id}/events`));
  });

  test("wait follows the job to its end", () => {
    assert.equal(job.status, "complete");
    assert.equal(job.steps, 2);
    assert.ok(isTerminal(job.status));
  });

  test("getJob and the seed-compatible status route agree", async () => {
    const a = await client.getJob(job.job_id);
    const b = await client.status(job.job_id);
    assert.equal(a.job_id, job.job_id);
    assert.equal(b.status, "complete");
  });

  test("events come as pages and as a stream that resumes after a sequence number", async () => {
    const page = await client.events(job.job_id, { limit: 3 });
    assert.equal(page.events.length, 3);
    const rest = await client.events(job.job_id, { after: page.next_after });
    assert.ok(rest.events.every((e) => e.seq > page.next_after));
    const streamed = [];
    for await (const e of client.streamEvents(job.job_id)) streamed.push(e);
    const seqs = streamed.map((e) => e.seq);
    assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y), "in order");
    assert.equal(new Set(seqs).size, seqs.length, "each once");
    assert.ok(streamed.some((e) => e.type === "status"));
    const resumed = [];
    for await (const e of client.streamEvents(job.job_id, { after: seqs[2] })) resumed.push(e.seq);
    assert.deepEqual(resumed, seqs.slice(3));
  });

  test("a stream cut after its first event resumes with Last-Event-ID and gives each event once", async () => {
    const lastIds = [];
    const cutting = async (url, init) => {
      const resp = await fetch(url, init);
      if (!String(url).includes("stream=true")) return resp;
      lastIds.push(new Headers(init.headers).get("Last-Event-ID"));
      if (lastIds.length > 1) return resp;
      const text = await resp.text();
      const first = text.slice(0, text.indexOf("\n\n", text.indexOf("id:")) + 2);
      const body = new ReadableStream({
        start(ctrl) {
          ctrl.enqueue(new TextEncoder().encode(first));
        },
        pull(ctrl) {
          ctrl.error(new TypeError("terminated: the connection was reset"));
        },
      });
      return new Response(body, { status: resp.status, headers: resp.headers });
    };
    const c = new Client({ baseUrl, token, fetch: cutting, backoffMinMs: 5, backoffMaxMs: 10 });
    const all = (await client.events(job.job_id, { limit: 1000 })).events.map((e) => e.seq);
    const got = [];
    for await (const e of c.streamEvents(job.job_id)) got.push(e.seq);
    assert.deepEqual(got, all);
    assert.deepEqual(lastIds, [null, String(all[0])]);
  });

  test("the workspace downloads as tar.gz and zip", async () => {
    const tgz = await client.download(job.job_id);
    assert.deepEqual([...tgz.subarray(0, 2)], [0x1f, 0x8b]);
    const zip = await client.download(job.job_id, { format: "zip" });
    assert.equal(new TextDecoder().decode(zip.subarray(0, 2)), "PK");
    const resp = await client.downloadStream(job.job_id);
    assert.ok(resp.body);
    await resp.body.cancel();
    assert.throws(() => client.downloadStream(job.job_id, { format: "rar" }), DrydockError);
  });

  test("workspace files are listed and read", async () => {
    const root = await client.listFiles(job.job_id);
    assert.equal(root.source, "archive");
    const names = root.entries.map((e) => e.name);
    assert.ok(names.includes("notes") && names.includes("SUMMARY.md"), names.join(","));
    const notes = await client.listFiles(job.job_id, "notes");
    assert.ok(notes.entries.length >= 2);
    const summary = await client.readText(job.job_id, "SUMMARY.md");
    assert.ok(summary.length > 0);
    await assert.rejects(client.readFile(job.job_id, "notes"), /is a directory/);
    await assert.rejects(client.listFiles(job.job_id, "SUMMARY.md"), /is a file/);
    await assert.rejects(client.readFile(job.job_id, "missing.txt"), (err) => err instanceof ApiError && err.status === 404);
  });

  test("the diff shows the files the agent wrote", async () => {
    const d = await client.diff(job.job_id);
    assert.match(d.patch, /SUMMARY\.md/);
    assert.equal(d.truncated, false);
  });

  test("the trajectory holds the job and its events", async () => {
    const t = await client.trajectory(job.job_id);
    assert.equal(t.format, "drydock.trajectory/v1");
    assert.equal(t.job.job_id, job.job_id);
    assert.ok(t.events.length > 3);
  });

  test("a message to a finished job creates a follow-up", async () => {
    const r = await client.sendMessage(job.job_id, "[fake:steps=1] [fake:delay=10ms] and one more");
    assert.equal(r.event, undefined);
    assert.equal(r.followUp.parent_job_id, job.job_id);
    const done = await client.wait(r.followUp.job_id);
    assert.equal(done.status, "complete");
  });

  test("followUp retries under one Idempotency-Key: the same key returns the same follow-up", async () => {
    const key = `follow-${Date.now()}`;
    const a = await client.followUp(job.job_id, { text: "[fake:steps=1] [fake:delay=10ms] again" }, { idempotencyKey: key });
    const b = await client.followUp(job.job_id, { text: "[fake:steps=1] [fake:delay=10ms] again" }, { idempotencyKey: key });
    assert.equal(a.job_id, b.job_id);
    assert.equal(a.parent_job_id, job.job_id);
    await client.wait(a.job_id);
  });

  test("links to a finished job's desktop and Jupyter are refused with the API's message", async () => {
    await assert.rejects(client.desktopLink(job.job_id), (err) => err instanceof ApiError && err.status === 409 && err.code === "conflict" && err.message.length > 0);
    await assert.rejects(client.jupyterLink(job.job_id), (err) => err instanceof ApiError && err.status === 409);
  });
});

describe("a running job", live, async () => {
  const job = await client.schedule(hanging("running"));
  await until("the job to run", async () => (await client.getJob(job.job_id)).status === "running");

  test("a message is stored as a user_message event", async () => {
    const r = await client.sendMessage(job.job_id, "please also add tests");
    assert.equal(r.followUp, undefined);
    assert.equal(r.event.type, "user_message");
    assert.equal(r.event.data.text, "please also add tests");
    await assert.rejects(client.sendMessage(job.job_id, "   "), DrydockError);
  });

  test("followUp refuses a job that is still running", async () => {
    await assert.rejects(client.followUp(job.job_id, { text: "more" }), (err) => err instanceof ApiError && err.status === 409);
  });

  test("pause and resume", async () => {
    const p = await client.pause(job.job_id);
    assert.equal(p.paused, true);
    const r = await client.resume(job.job_id);
    assert.ok(!r.paused);
  });

  test("the egress list changes while the job runs", async () => {
    const j = await client.setEgress(job.job_id, ["example.com:443"]);
    assert.deepEqual(j.egress, ["example.com:443"]);
    await assert.rejects(client.setEgress(job.job_id, ["not a host!"]), (err) => err instanceof ApiError && err.status === 400);
  });

  test("a Jupyter link is signed for the job", async () => {
    const l = await client.jupyterLink(job.job_id);
    assert.ok(l.url.includes(`/jobs/${job.job_id}/jupyter/`));
    assert.equal(l.control, false);
    await assert.rejects(client.desktopLink(job.job_id, { control: true }), (err) => err instanceof ApiError && err.status === 409 && /headless/.test(err.message));
  });

  test("cancel stops it, and the stream ends", async () => {
    await client.cancel(job.job_id);
    const seen = [];
    for await (const e of client.streamEvents(job.job_id)) seen.push(e.type);
    assert.ok(seen.includes("user_message"));
    assert.equal((await client.getJob(job.job_id)).status, "cancelled");
  });
});

describe("a sandbox held for the caller (agent none)", live, async () => {
  const created = await client.schedule({ agent: "none", timeout: "10m" });
  // Running comes before the sandbox is ready; the runner says when it is.
  await until("the held sandbox to be ready", async () =>
    (await client.events(created.job_id)).events.some((e) => e.type === "log" && e.data?.kind === "sandbox_held"),
  );
  const job = await client.getJob(created.job_id);

  test("the job spec's agent field schedules it without an agent", () => {
    assert.equal(created.agent, "none");
    assert.equal(job.agent, "none");
  });

  test("a command runs in a shell that persists, and its exit status comes back", async () => {
    const a = await client.runCommand(job.job_id, "mkdir -p sub && cd sub && echo hello from $(basename $PWD)");
    assert.equal(a.exit_code, 0);
    assert.equal(a.output, "hello from sub\n");
    assert.equal(a.job_id, job.job_id);
    const b = await client.runCommand(job.job_id, "basename $PWD; (exit 3)", { timeout: 30 });
    assert.equal(b.exit_code, 3);
    assert.equal(b.output, "sub\n");
    assert.ok(!b.timed_out);
  });

  test("a file written is read back through the API and seen by the shell", async () => {
    const w = await client.writeFile(job.job_id, "/notes/held.txt", "written by the SDK\n");
    assert.deepEqual({ path: w.path, size: w.size }, { path: "notes/held.txt", size: 19 });
    assert.equal(await client.readText(job.job_id, "notes/held.txt"), "written by the SDK\n");
    const bytes = await client.writeFile(job.job_id, "notes/bytes.txt", new TextEncoder().encode("caf\u00e9"));
    assert.equal(bytes.size, 5);
    const r = await client.runCommand(job.job_id, "cat ../notes/held.txt"); // the shell is still in sub/
    assert.match(r.output, /written by the SDK/);
  });

  test("bad input is refused before anything is sent", async () => {
    await assert.rejects(client.runCommand(job.job_id, "  "), DrydockError);
    await assert.rejects(client.runCommand(job.job_id, "echo a\u0000b"), DrydockError);
    await assert.rejects(client.writeFile(job.job_id, "", "x"), DrydockError);
    await assert.rejects(client.writeFile(job.job_id, "notes/../../escape.txt", "x"), /'\.\.'/);
    await assert.rejects(client.writeFile(job.job_id, "bad.bin", new Uint8Array([0xff, 0xfe])), /not valid UTF-8/);
  });

  test("the server's refusals come back as ApiErrors", async () => {
    await assert.rejects(client.writeFile(job.job_id, "a\u0000b.txt", "x"), (err) => err instanceof ApiError && err.status === 400 && /NUL/.test(err.message));
    await assert.rejects(client.sendMessage(job.job_id, "hello"), (err) => err instanceof ApiError && err.status === 409);
  });

  test("cancel ends the hold and the workspace is archived with the file", async () => {
    await client.cancel(job.job_id);
    const done = await client.wait(job.job_id);
    assert.equal(done.status, "cancelled");
    await assert.rejects(client.runCommand(job.job_id, "true"), (err) => err instanceof ApiError && err.status === 409);
    const archived = await until("the workspace to be archived", async () => (await client.getJob(job.job_id)).download_url);
    assert.ok(archived);
    assert.equal(await client.readText(job.job_id, "notes/held.txt"), "written by the SDK\n");
  });
});

describe("scheduling", live, () => {
  test("the same Idempotency-Key returns the first job; with another body it is refused", async () => {
    const key = `key-${Date.now()}`;
    const a = await client.schedule(quick("idem"), { idempotencyKey: key });
    const b = await client.schedule(quick("idem"), { idempotencyKey: key });
    assert.equal(a.job_id, b.job_id);
    await assert.rejects(client.schedule(quick("another"), { idempotencyKey: key }), (err) => err instanceof ApiError && err.status === 422 && err.code === "idempotency_key_reused");
    await client.wait(a.job_id);
  });

  test("an answer lost on the way back is retried with the same key and creates one job", async () => {
    let calls = 0;
    const keys = new Set();
    const lossy = async (url, init) => {
      const resp = await fetch(url, init);
      if (init.method === "POST") {
        calls++;
        keys.add(new Headers(init.headers).get("Idempotency-Key"));
        if (calls === 1) {
          await resp.body?.cancel();
          throw new TypeError("fetch failed: the connection was reset");
        }
      }
      return resp;
    };
    const c = new Client({ baseUrl, token, fetch: lossy, backoffMinMs: 5, backoffMaxMs: 10 });
    const tag = `lossy-${Date.now()}`;
    const j = await c.schedule(quick(tag));
    assert.equal(calls, 2);
    assert.equal(keys.size, 1);
    const all = [];
    for await (const x of client.allJobs({ limit: 2 })) if (x.task.endsWith(tag)) all.push(x.job_id);
    assert.deepEqual(all, [j.job_id]);
    await client.wait(j.job_id);
  });

  test("an answer cut mid-way is retried under the same key and creates one job", async () => {
    let posts = 0;
    const cutting = async (url, init) => {
      const resp = await fetch(url, init);
      if (init.method !== "POST" || ++posts > 1) return resp;
      const text = await resp.text();
      const body = new ReadableStream({
        start(ctrl) {
          ctrl.enqueue(new TextEncoder().encode(text.slice(0, 20)));
        },
        pull(ctrl) {
          ctrl.error(new TypeError("terminated"));
        },
      });
      return new Response(body, { status: resp.status, headers: resp.headers });
    };
    const c = new Client({ baseUrl, token, fetch: cutting, backoffMinMs: 5, backoffMaxMs: 10 });
    const tag = `cut-${Date.now()}`;
    const j = await c.schedule(quick(tag));
    assert.equal(posts, 2);
    const mine = [];
    for await (const x of client.allJobs({ limit: 50 })) if (x.task.endsWith(tag)) mine.push(x.job_id);
    assert.deepEqual(mine, [j.job_id]);
    await client.wait(j.job_id);
  });

  test("an outcome that stays unknown is a ScheduleError naming the key", async () => {
    const down = async () => {
      throw new TypeError("fetch failed");
    };
    const c = new Client({ baseUrl, token, fetch: down, retries: 2, backoffMinMs: 1, backoffMaxMs: 2 });
    await assert.rejects(c.schedule(quick("never"), { idempotencyKey: "k-unknown" }), (err) => {
      assert.ok(err instanceof ScheduleError);
      assert.equal(err.key, "k-unknown");
      assert.equal(err.attempts, 3);
      assert.ok(err.cause instanceof ConnectionError);
      return true;
    });
  });

  test("wait polls when a proxy does not pass the event stream through", async () => {
    const buffering = async (url, init) => {
      if (String(url).includes("stream=true")) {
        return new Response('{"events":[]}', { headers: { "Content-Type": "application/json" } });
      }
      return fetch(url, init);
    };
    const c = new Client({ baseUrl, token, fetch: buffering });
    const j = await c.schedule(quick("polled"));
    assert.equal((await c.wait(j.job_id)).status, "complete");
  });

  test("a refused request is not retried and carries the API's error", async () => {
    await assert.rejects(client.schedule({ task: "" }), (err) => err instanceof ApiError && err.status === 400 && err.code === "invalid" && /task/.test(err.message));
    await assert.rejects(client.schedule(quick("x"), { idempotencyKey: "bad\nkey" }), DrydockError);
  });

  test("an uploaded workspace is where the agent starts", async () => {
    const archive = readFileSync(process.env.DRYDOCK_SDK_UPLOAD);
    const j = await client.schedule(quick("upload"), { workspace: archive });
    assert.ok(j.input_size > 0);
    await client.wait(j.job_id);
    assert.equal(await client.readText(j.job_id, "hello.txt"), "hello from an upload\n");
  });

  test("the seed-compatible routes schedule too", async () => {
    const a = await client.schedule(quick("seed"), { operation: "schedule" });
    const b = await client.schedule(quick("seed2"), { operation: "submit" });
    await client.wait(a.job_id);
    await client.wait(b.job_id);
  });
});

describe("the rest of the API", live, () => {
  test("jobs list in pages, newest first", async () => {
    const first = await client.listJobs({ limit: 1 });
    assert.equal(first.jobs.length, 1);
    assert.ok(first.next_cursor);
    const second = await client.listJobs({ limit: 1, cursor: first.next_cursor });
    assert.notEqual(second.jobs[0].job_id, first.jobs[0].job_id);
    const done = await client.listJobs({ status: ["complete"], limit: 500 });
    assert.ok(done.jobs.every((j) => j.status === "complete"));
    await assert.rejects(client.listJobs({ status: ["sleeping"] }), (err) => err instanceof ApiError && err.status === 400);
  });

  test("jobs list by metadata", async () => {
    const tag = `md-${Date.now()}`;
    const a = await client.schedule({ ...quick("meta a"), metadata: { suite: tag, task: "a" } });
    await client.schedule({ ...quick("meta b"), metadata: { suite: tag, task: "b" } });
    const both = await client.listJobs({ metadata: { suite: tag } });
    assert.equal(both.jobs.length, 2);
    const one = await client.listJobs({ metadata: { suite: tag, task: "a" } });
    assert.deepEqual(one.jobs.map((j) => j.job_id), [a.job_id]);
    const mine = [];
    for await (const x of client.allJobs({ metadata: { suite: tag }, limit: 1 })) mine.push(x.job_id);
    assert.equal(mine.length, 2);
  });

  test("an unknown job is not_found", async () => {
    await assert.rejects(client.getJob("01a2b3c4-0000-7000-8000-000000000000"), (err) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 404);
      assert.equal(err.code, "not_found");
      assert.ok(err.message.length > 0);
      return true;
    });
    assert.throws(() => client.url("getJob", { path: { id: " " } }), DrydockError);
  });

  test("health, readiness, metrics and the API document", async () => {
    await client.healthz();
    await client.readyz();
    assert.match(await client.metrics(), /^# (HELP|TYPE) /m);
    const doc = await client.openapi();
    assert.equal(doc.openapi, "3.1.0");
  });

  test("page and proxy addresses are built under the base URL", () => {
    assert.equal(client.url("webJobs"), `${baseUrl}/`);
    assert.equal(client.url("webJob", { path: { id: "a b" } }), `${baseUrl}/jobs/a%20b`);
    assert.equal(client.url("jupyterGet", { path: { id: "j", path: "api/kernels" } }), `${baseUrl}/jobs/j/jupyter/api/kernels`);
  });

  test("every request carries the token, the SDK's User-Agent and follows no redirect", async () => {
    let seen;
    const spy = async (url, init) => {
      seen = init;
      return fetch(url, init);
    };
    const c = new Client({ baseUrl, token, fetch: spy });
    await c.listJobs({ limit: 1 });
    const h = new Headers(seen.headers);
    assert.equal(h.get("Authorization"), `Bearer ${token}`);
    assert.equal(h.get("User-Agent"), "drydock-typescript-sdk");
    assert.equal(h.get("Accept"), "application/json");
    assert.equal(seen.redirect, "manual");
  });

  test("a request without the token is unauthorized", async () => {
    const anon = new Client({ baseUrl });
    await assert.rejects(anon.listJobs(), (err) => err instanceof ApiError && err.status === 401 && err.code === "unauthorized");
  });

  test("of a huge error answer only the first 64 KiB are read", async () => {
    let pulled = 0;
    const hostile = async () => {
      const chunk = new Uint8Array(64 << 10).fill(0x41);
      const body = new ReadableStream({
        pull(ctrl) {
          pulled += chunk.byteLength;
          if (pulled > 256 << 20) ctrl.close();
          else ctrl.enqueue(chunk);
        },
      });
      return new Response(body, { status: 502, statusText: "Bad Gateway", headers: { "Content-Type": "text/html" } });
    };
    const c = new Client({ baseUrl, token, fetch: hostile });
    await assert.rejects(c.getJob("x"), (err) => err instanceof ApiError && err.status === 502 && err.code === "unavailable" && err.message.length < 1000);
    assert.ok(pulled <= 1 << 20, `read ${pulled} bytes`);
  });

  test("a diff larger than the server ever sends is refused", async () => {
    const huge = async () =>
      new Response("+".repeat(10 << 20), { headers: { "Content-Type": "text/x-diff" } });
    const c = new Client({ baseUrl, token, fetch: huge });
    await assert.rejects(c.diff("x"), /larger than/);
  });

  test("a page that is not the API's is described in one safe line, never parsed", async () => {
    const page = (status) => async () =>
      new Response("<html>\n<title>Welcome</title>\u001b[2J\u202e</html>", { status, headers: { "Content-Type": "text/html" } });
    const ok = new Client({ baseUrl, token, fetch: page(200) });
    await assert.rejects(ok.getJob("x"), (err) => {
      assert.ok(err instanceof DrydockError && !(err instanceof ApiError));
      assert.match(err.message, /is this a Drydock server\?/);
      assert.ok(err.message.includes("\\u001b[2J\\u202e"), err.message);
      assert.ok(!/[\u001b\u202e\n]/.test(err.message));
      return true;
    });
    const missing = new Client({ baseUrl, token, fetch: page(404) });
    await assert.rejects(missing.getJob("x"), (err) => err instanceof ApiError && err.status === 404 && err.code === "not_found" && /answered 404/.test(err.message) && !err.message.includes("\u001b"));
  });

  test("a server that is not there is a ConnectionError", async () => {
    const c = new Client({ baseUrl: "http://127.0.0.1:9" });
    await assert.rejects(c.getJob("x"), ConnectionError);
    assert.throws(() => new Client({ baseUrl: "ftp://example" }), DrydockError);
  });
});

describe("the event stream parser", () => {
  const serve = (chunks) => async () =>
    new Response(
      new ReadableStream({
        start(ctrl) {
          for (const c of chunks) ctrl.enqueue(new TextEncoder().encode(c));
          ctrl.close();
        },
      }),
      { headers: { "Content-Type": "text/event-stream" } },
    );

  test("reads events split anywhere, with any line ending, comments and multi-line data", async () => {
    const text =
      'retry: 20\r\n\r\n: ping\r\n\r\nid: 1\r\nevent: status\r\ndata: {"seq":1,"type":"status"}\r\n\r\n' +
      'id: 2\nevent: log\ndata: {"seq":2,\ndata: "type":"log"}\n\nid: 3\revent: usage\rdata: {}\r\revent: end\ndata: {}\n\n';
    const chunks = [];
    for (let i = 0; i < text.length; i += 5) chunks.push(text.slice(i, i + 5));
    const c = new Client({ baseUrl, token, fetch: serve(chunks) });
    const got = [];
    for await (const e of c.streamEvents("j")) got.push([e.seq, e.type]);
    assert.deepEqual(got, [[1, "status"], [2, "log"], [3, "usage"]]);
  });

  test("a malformed event is an error, not a reconnect", async () => {
    const c = new Client({ baseUrl, token, fetch: serve(["id: 1\ndata: {nope\n\n"]) });
    await assert.rejects(async () => {
      for await (const _ of c.streamEvents("j"));
    }, /malformed event/);
  });

  test("a refusal is returned at once", async () => {
    const refuse = async () => new Response('{"error":{"code":"not_found","message":"job \\"j\\" not found"}}', { status: 404, headers: { "Content-Type": "application/json" } });
    const c = new Client({ baseUrl, token, fetch: refuse });
    await assert.rejects(async () => {
      for await (const _ of c.streamEvents("j"));
    }, (err) => err instanceof ApiError && err.status === 404 && err.message === 'job "j" not found');
  });
});
