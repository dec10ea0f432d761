// Drives Drydock's MCP server with the official MCP TypeScript SDK, as a
// real MCP client would: e2e/mcp_test.go runs it once per transport.
//
//   node client.mjs stdio   starts `$DRYDOCK_BIN mcp` (DRYDOCK_URL, DRYDOCK_TOKEN)
//   node client.mjs http    connects to $DRYDOCK_URL/mcp with DRYDOCK_TOKEN
//
// It prints one line per check and "PASS <transport>" at the end; any
// failed expectation exits non-zero with the reason.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

const mode = process.argv[2];
const url = process.env.DRYDOCK_URL;
const token = process.env.DRYDOCK_TOKEN ?? "";
assert.ok(url, "DRYDOCK_URL is required");

function log(msg) {
  console.log(`[${mode}] ${msg}`);
}

function transport() {
  if (mode === "stdio") {
    return new StdioClientTransport({
      command: process.env.DRYDOCK_BIN,
      args: ["mcp"],
      env: { PATH: process.env.PATH ?? "", DRYDOCK_URL: url, DRYDOCK_TOKEN: token },
      stderr: "inherit",
    });
  }
  if (mode === "http") {
    return new StreamableHTTPClientTransport(new URL("/mcp", url), {
      requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} },
    });
  }
  throw new Error(`unknown transport ${mode}; want stdio or http`);
}

function text(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

// call expects a successful tool result that names the job.
async function call(client, name, args, jobId, opts) {
  const res = await client.callTool({ name, arguments: args }, undefined, opts);
  const t = text(res);
  assert.notEqual(res.isError, true, `${name} failed: ${t}`);
  if (jobId) assert.ok(t.includes(jobId), `${name}: the result does not name job ${jobId}: ${t}`);
  return t;
}

// refused expects an error, as an error result (isError) or as a JSON-RPC
// error, whose message matches want.
async function refused(client, name, args, want) {
  let msg;
  try {
    const res = await client.callTool({ name, arguments: args });
    assert.equal(res.isError, true, `${name}(${JSON.stringify(args)}) succeeded: ${text(res)}`);
    msg = text(res);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    assert.ok(err instanceof McpError, `${name}: not an MCP error: ${err}`);
    msg = err.message;
  }
  assert.match(msg, want, `${name}(${JSON.stringify(args)}): ${msg}`);
  assert.doesNotMatch(msg, /goroutine|panic:/, `${name}: a Go panic reached the client: ${msg}`);
  return msg;
}

const client = new Client({ name: "drydock-e2e", version: "1.0.0" });
await client.connect(transport());

// Initialisation: who the server is and what it offers.
const info = client.getServerVersion();
assert.equal(info?.name, "drydock", `serverInfo: ${JSON.stringify(info)}`);
const caps = client.getServerCapabilities();
assert.ok(caps?.tools, `no tools capability: ${JSON.stringify(caps)}`);
assert.ok(caps?.resources, `no resources capability: ${JSON.stringify(caps)}`);
assert.ok((client.getInstructions() ?? "").includes("schedule_job"), "instructions do not mention schedule_job");
await client.ping();
log(`initialized: ${info.name} ${info.version}, capabilities ${Object.keys(caps).join(", ")}`);

// Tools, with schemas and descriptions.
const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
for (const want of ["schedule_job", "get_job", "list_jobs", "get_events", "read_file", "list_files", "get_diff",
  "send_message", "cancel_job", "run_command", "write_file", "wait_job"]) {
  assert.ok(names.includes(want), `tool ${want} is not listed: ${names}`);
}
for (const t of tools) {
  assert.equal(t.inputSchema?.type, "object", `${t.name}: input schema ${JSON.stringify(t.inputSchema)}`);
  assert.ok((t.description ?? "").length > 20, `${t.name}: no description`);
}
log(`tools: ${names.join(", ")}`);

// Schedule with the scripted agent and follow it to the end, with progress.
const scheduled = await call(client, "schedule_job", { task: "write notes [fake:steps=2] [fake:delay=400ms]" });
const jobId = scheduled.match(/Scheduled job ([0-9a-f-]{36})/)?.[1];
assert.ok(jobId, `schedule_job named no job: ${scheduled}`);
log(`scheduled ${jobId}`);
const progress = [];
const done = await call(client, "wait_job", { job_id: jobId, timeout: 120 }, jobId, {
  onprogress: (p) => progress.push(p),
  resetTimeoutOnProgress: true,
  timeout: 150_000,
});
assert.match(done, /has finished \(complete\)/);
assert.ok(progress.length >= 1, "no progress notification while the job ran");
for (const p of progress) assert.ok((p.message ?? "").includes(jobId), `progress without the job id: ${JSON.stringify(p)}`);
log(`complete after ${progress.length} progress notifications`);

// Its workspace, its diff, its events, its resources.
assert.match(await call(client, "read_file", { job_id: jobId, path: "notes/step-001.md" }, jobId), /# Step 1/);
assert.match(await call(client, "list_files", { job_id: jobId, path: "notes" }, jobId), /notes\/step-002\.md/);
assert.match(await call(client, "get_diff", { job_id: jobId }, jobId), /\+\+\+ b\/notes\/step-002\.md/);
assert.match(await call(client, "get_events", { job_id: jobId, limit: 500 }, jobId), /status: complete/);
assert.match(await call(client, "list_jobs", {}, jobId), /complete/);
const templates = await client.listResourceTemplates();
assert.ok(templates.resourceTemplates.some((t) => t.uriTemplate === "drydock://jobs/{job_id}"), JSON.stringify(templates));
const summary = await client.readResource({ uri: `drydock://jobs/${jobId}` });
assert.match(summary.contents[0].text, /status: complete/);
const file = await client.readResource({ uri: `drydock://jobs/${jobId}/files/SUMMARY.md` });
assert.match(file.contents[0].text, /Completed 2 scripted steps/);
log("read a file, the diff, the events and the resources");

// A sandbox held for the caller (agent "none"): files and commands.
const held = (await call(client, "schedule_job", { agent: "none", timeout: "10m" })).match(/Scheduled job ([0-9a-f-]{36})/)?.[1];
assert.ok(held, "schedule_job with agent none named no job");
assert.match(await call(client, "wait_job", { job_id: held, timeout: 120 }, held, { timeout: 150_000 }), /sandbox is ready/);
await call(client, "write_file", { job_id: held, path: "hello.sh", text: "echo hello from $(basename $PWD)\n" }, held);
assert.match(await call(client, "run_command", { job_id: held, command: "bash hello.sh" }, held), /exit code 0[\s\S]*hello from/);
await refused(client, "run_command", { job_id: jobId, command: "id" }, /has an agent|ended/);
await call(client, "cancel_job", { job_id: held }, held);
log("held a sandbox: wrote a file, ran it, released it");

// Errors: an unknown tool, bad arguments, an unknown job, traversal.
await refused(client, "no_such_tool", {}, /no_such_tool/);
await refused(client, "get_job", { job_id: 42 }, /job_id|type/i);
await refused(client, "get_job", {}, /job_id/);
await refused(client, "get_job", { job_id: "0193aaaa-0000-7000-8000-0000000000ff" }, /not found/);
await refused(client, "read_file", { job_id: jobId, path: "../../etc/passwd" }, /\.\./);
await refused(client, "schedule_job", { task: "x", agent: "someone" }, /agent must be/);
log("unknown tool, bad arguments, unknown job and traversal refused");

await client.close();
console.log(`PASS ${mode}`);
