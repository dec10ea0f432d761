import { ApiError, ConnectionError, DrydockError, ScheduleError, apiError, excerpt, readAtMost } from "./errors.js";
import { operations, type OperationId } from "./operations.js";
import { streamEvents, type StreamOptions } from "./sse.js";
import {
  isTerminal,
  type CommandResult,
  type CreateJob,
  type Duration,
  type Event,
  type EventPage,
  type FollowUpRequest,
  type Job,
  type JobPage,
  type JobStatus,
  type Link,
  type Listing,
  type Trajectory,
  type WrittenFile,
} from "./types.js";

/** How many times schedule and followUp send a request again when its answer was lost. */
export const DEFAULT_RETRIES = 5;
/** Sent as User-Agent where the platform allows it (not in browsers). */
export const DEFAULT_USER_AGENT = "drydock-typescript-sdk";
const MAX_IDEMPOTENCY_KEY = 255;
const MAX_MESSAGE_BYTES = 64 << 10;
const MAX_DIFF_BYTES = 9 << 20;
const MAX_COMMAND_BYTES = 64 << 10;

export interface ClientOptions {
  /** The server, e.g. "http://127.0.0.1:8080" (a path prefix is kept). */
  baseUrl: string;
  /** An API token ("ddk_..."); none for a server in loopback development mode. */
  token?: string;
  /** Retries of schedule/followUp after a lost answer (default 5; 0 sends once). */
  retries?: number;
  /** Reconnect and retry backoff: doubles from min to max, with jitter (default 250 ms to 5 s). */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** An event stream silent this long is reconnected (default 45 s: three missed server pings). */
  streamIdleMs?: number;
  userAgent?: string;
  /** A fetch to use instead of the global one (proxies, tests). */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  path?: Record<string, string>;
  query?: Record<string, string | number | boolean | string[] | undefined>;
  /** A plain value is sent as JSON; FormData, Blob, strings and bytes as they are. */
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface ScheduleOptions {
  /**
   * The request's Idempotency-Key (default: a fresh random one). Pass the key
   * of a ScheduleError to schedule again without risking a second job.
   */
  idempotencyKey?: string;
  /** Files the job starts from: a tar, tar.gz or zip archive (sent as multipart/form-data). */
  workspace?: Blob | Uint8Array | ArrayBuffer;
  /** Which creation route to use (default createJob, POST /v1/jobs; schedule and submit are its seed-compatible aliases). */
  operation?: "createJob" | "schedule" | "submit";
  signal?: AbortSignal;
}

export interface ListOptions {
  status?: JobStatus[];
  /** Only jobs whose metadata has every one of these pairs. */
  metadata?: Record<string, string>;
  limit?: number;
  cursor?: string;
  signal?: AbortSignal;
}

export interface MessageResult {
  /** The stored user_message event (a pending or running job). */
  event?: Event;
  /** The follow-up job the message created (a finished job). */
  followUp?: Job;
}

/** A Drydock API client. Every method throws DrydockError subclasses: ApiError for an answer of the server. */
export class Client {
  readonly baseUrl: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;
  readonly #retries: number;
  readonly #backoffMin: number;
  readonly #backoffMax: number;
  readonly #streamIdle: number;
  readonly #userAgent: string;

  constructor(options: ClientOptions) {
    this.baseUrl = parseBase(options.baseUrl);
    this.#token = options.token ?? "";
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") {
      throw new DrydockError("no fetch: use Node.js 18 or later, or pass options.fetch");
    }
    this.#fetch = f;
    this.#retries = Math.max(0, options.retries ?? DEFAULT_RETRIES);
    this.#backoffMin = options.backoffMinMs ?? 250;
    this.#backoffMax = options.backoffMaxMs ?? 5000;
    this.#streamIdle = options.streamIdleMs ?? 45_000;
    this.#userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
  }

  /** The absolute URL of an operation, e.g. url("webJob", {path: {id}}). */
  url(op: OperationId, opts: Pick<RequestOptions, "path" | "query"> = {}): string {
    const spec = operations[op];
    if (!spec) {
      throw new DrydockError(`unknown operation ${String(op)}`);
    }
    const params = opts.path ?? {};
    let p = spec.path.replace(/\{([a-z]+)(\.\.\.)?\}|\{\$\}/g, (_m, name: string | undefined, rest: string | undefined) => {
      if (!name) {
        return ""; // {$}: the exact path "/"
      }
      const v = params[name];
      if (rest) {
        // A workspace path: segments escaped one by one; the server refuses
        // '', '.' and '..' segments itself.
        return (v ?? "").split("/").map(encodeURIComponent).join("/");
      }
      if (v === undefined || v.trim() === "") {
        throw new DrydockError(`${name} is required`);
      }
      return encodeURIComponent(v);
    });
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query ?? {})) {
      if (Array.isArray(v)) {
        for (const item of v) {
          q.append(k, item); // a repeated parameter, e.g. metadata
        }
      } else if (v !== undefined) {
        q.set(k, String(v));
      }
    }
    const qs = q.toString();
    return this.baseUrl + p + (qs ? "?" + qs : "");
  }

  /**
   * Sends any operation and returns the answer of a 2xx status; any other
   * status throws an ApiError. The named methods below are built on it.
   */
  async request(op: OperationId, opts: RequestOptions = {}): Promise<Response> {
    const resp = await this.#send(op, opts);
    if (resp.status < 200 || resp.status > 299) {
      throw await apiError(resp, `${operations[op].method} ${new URL(resp.url || this.url(op, opts)).pathname}`);
    }
    return resp;
  }

  async #send(op: OperationId, opts: RequestOptions): Promise<Response> {
    const spec = operations[op];
    const url = this.url(op, opts);
    const headers = new Headers(opts.headers);
    if (!headers.has("Accept")) {
      headers.set("Accept", "application/json");
    }
    if (this.#userAgent) {
      headers.set("User-Agent", this.#userAgent);
    }
    if (this.#token) {
      headers.set("Authorization", "Bearer " + this.#token);
    }
    let body: BodyInit | undefined;
    const b = opts.body;
    if (b === undefined) {
      body = undefined;
    } else if (typeof b === "string" || b instanceof Uint8Array || b instanceof ArrayBuffer || b instanceof Blob || b instanceof FormData) {
      body = b as BodyInit;
    } else {
      body = JSON.stringify(b);
      headers.set("Content-Type", "application/json");
    }
    try {
      return await this.#fetch(url, { method: spec.method, headers, body, signal: opts.signal, redirect: "manual" });
    } catch (err) {
      if (opts.signal?.aborted) {
        throw opts.signal.reason ?? err;
      }
      throw new ConnectionError(this.baseUrl, err);
    }
  }

  async #json<T>(op: OperationId, opts: RequestOptions): Promise<T> {
    const resp = await this.request(op, opts);
    return (await readJSON(resp, `${operations[op].method} ${operations[op].path}`)) as T;
  }

  /**
   * Creates a job and returns it as stored (pending, with its links).
   *
   * Every request carries an Idempotency-Key, so that a request whose answer
   * is lost (the connection fails, a gateway answers 502, 503 or 504, the
   * answer is cut) is sent again, up to `retries` times with exponential
   * backoff and jitter, without creating a second job. When the outcome
   * stays unknown the error is a ScheduleError naming the key.
   */
  async schedule(spec: CreateJob, opts: ScheduleOptions = {}): Promise<Job> {
    const key = idempotencyKey(opts.idempotencyKey);
    const op = opts.operation ?? "createJob";
    const headers = { "Idempotency-Key": sfString(key) };
    return this.#createRetrying(key, opts.signal, () => {
      let body: unknown = spec;
      if (opts.workspace !== undefined) {
        // Built for every attempt: a FormData's stream is read once.
        const form = new FormData();
        form.append("spec", JSON.stringify(spec));
        form.append("workspace", opts.workspace instanceof Blob ? opts.workspace : new Blob([opts.workspace as BlobPart]), "workspace");
        body = form;
      }
      return this.#send(op, { body, headers, signal: opts.signal });
    });
  }

  /**
   * Continues a finished job with a new task: a follow-up job that starts
   * from the parent's archived workspace and conversation. Retried under an
   * Idempotency-Key as schedule is.
   */
  async followUp(id: string, req: FollowUpRequest, opts: Omit<ScheduleOptions, "workspace" | "operation"> = {}): Promise<Job> {
    const key = idempotencyKey(opts.idempotencyKey);
    checkMessage(req.text);
    const parent = await this.getJob(id, { signal: opts.signal });
    if (!isTerminal(parent.status)) {
      throw new ApiError(409, "conflict", `job ${id} is ${parent.status}: a follow-up continues a finished job (send a message to steer a running one)`, `POST /v1/jobs/${id}/messages`);
    }
    const headers = { "Idempotency-Key": sfString(key) };
    return this.#createRetrying(key, opts.signal, () =>
      this.#send("sendMessage", { path: { id }, body: req, headers, signal: opts.signal }),
    );
  }

  async #createRetrying(key: string, signal: AbortSignal | undefined, once: () => Promise<Response>): Promise<Job> {
    for (let attempt = 1; ; attempt++) {
      let cause: unknown;
      try {
        const resp = await once();
        const where = new URL(resp.url || this.baseUrl).pathname;
        if (resp.status === 502 || resp.status === 503 || resp.status === 504) {
          cause = await apiError(resp, `POST ${where}`);
        } else if (resp.status !== 201 && resp.status !== 200) {
          // 202 is a message stored for a running job's agent, not a job.
          throw await apiError(resp, `POST ${where}`);
        } else {
          const text = await resp.text().catch((err: unknown) => {
            cause = err;
            return undefined;
          });
          if (text !== undefined) {
            return parseJob(resp, text, where);
          }
        }
      } catch (err) {
        if (!(err instanceof ConnectionError)) {
          if (signal?.aborted) {
            throw new ScheduleError(key, attempt, err);
          }
          throw err;
        }
        cause = err;
      }
      if (signal?.aborted || attempt > this.#retries) {
        throw new ScheduleError(key, attempt, cause);
      }
      try {
        await sleep(jitter(this.#backoff(attempt)), signal);
      } catch (err) {
        throw new ScheduleError(key, attempt, err);
      }
    }
  }

  #backoff(n: number): number {
    return Math.min(this.#backoffMin * 2 ** Math.min(n - 1, 20), this.#backoffMax);
  }

  /** A job by id; ApiError not_found if it does not exist or belongs to another token. */
  getJob(id: string, opts: { signal?: AbortSignal } = {}): Promise<Job> {
    return this.#json("getJob", { path: { id }, signal: opts.signal });
  }

  /** The seed-compatible status route (GET /status/{id}): the same job as getJob. */
  status(id: string, opts: { signal?: AbortSignal } = {}): Promise<Job> {
    return this.#json("status", { path: { id }, signal: opts.signal });
  }

  /** One page of the jobs the token can see, newest first; next_cursor is empty on the last page. */
  listJobs(opts: ListOptions = {}): Promise<JobPage> {
    return this.#json("listJobs", {
      query: {
        status: opts.status?.length ? opts.status.join(",") : undefined,
        metadata: opts.metadata ? Object.entries(opts.metadata).map(([k, v]) => `${k}=${v}`) : undefined,
        limit: opts.limit,
        cursor: opts.cursor || undefined,
      },
      signal: opts.signal,
    });
  }

  /** Every job matching opts, following cursors page by page (limit is the page size). */
  async *allJobs(opts: ListOptions = {}): AsyncGenerator<Job> {
    let cursor = opts.cursor;
    for (;;) {
      const page = await this.listJobs({ ...opts, cursor });
      for (const j of page.jobs ?? []) {
        yield j;
      }
      // A cursor that does not move would loop forever on a buggy server.
      if (!page.next_cursor || page.next_cursor === cursor || !page.jobs?.length) {
        return;
      }
      cursor = page.next_cursor;
    }
  }

  /** Cancels a job: a pending one comes back cancelled, a running one stops shortly. */
  cancel(id: string, opts: { signal?: AbortSignal } = {}): Promise<Job> {
    return this.#json("cancelJob", { path: { id }, signal: opts.signal });
  }

  pause(id: string, opts: { signal?: AbortSignal } = {}): Promise<Job> {
    return this.#json("pauseJob", { path: { id }, signal: opts.signal });
  }

  resume(id: string, opts: { signal?: AbortSignal } = {}): Promise<Job> {
    return this.#json("resumeJob", { path: { id }, signal: opts.signal });
  }

  /** Replaces the egress allowlist of a pending or running job; [] denies everything. */
  setEgress(id: string, egress: string[], opts: { signal?: AbortSignal } = {}): Promise<Job> {
    return this.#json("setJobEgress", { path: { id }, body: { egress: egress ?? [] }, signal: opts.signal });
  }

  /** Up to limit events with a sequence number greater than after. */
  async events(id: string, opts: { after?: number; limit?: number; signal?: AbortSignal } = {}): Promise<EventPage> {
    const after = opts.after ?? 0;
    const page = await this.#json<EventPage>("listEvents", {
      path: { id },
      query: { after: after > 0 ? after : undefined, limit: opts.limit },
      signal: opts.signal,
    });
    if ((page.next_after ?? 0) < after) {
      page.next_after = after;
    }
    return page;
  }

  /**
   * The job's events after `after`, as the server appends them, until the
   * job is terminal and every event was sent. A connection that drops or goes
   * silent is resumed with Last-Event-ID, so each event comes once.
   */
  streamEvents(id: string, opts: Omit<StreamOptions, "open"> = {}): AsyncGenerator<Event> {
    if (!id || id.trim() === "") {
      throw new DrydockError("job id is required");
    }
    return streamEvents({
      ...opts,
      backoffMinMs: this.#backoffMin,
      backoffMaxMs: this.#backoffMax,
      idleMs: this.#streamIdle,
      open: (last, signal) =>
        this.#send("listEvents", {
          path: { id },
          query: { stream: "true", after: last > 0 ? last : undefined },
          headers: last > 0 ? { Accept: "text/event-stream", "Cache-Control": "no-cache", "Last-Event-ID": String(last) } : { Accept: "text/event-stream", "Cache-Control": "no-cache" },
          signal,
        }),
    });
  }

  /**
   * Waits until the job is terminal and returns it. It follows the event
   * stream, which tells it the moment the job ends, and polls when the stream
   * is not available (a proxy that buffers or refuses streams).
   */
  async wait(id: string, opts: { signal?: AbortSignal } = {}): Promise<Job> {
    let j = await this.getJob(id, opts);
    if (isTerminal(j.status)) {
      return j;
    }
    try {
      for await (const _ of this.streamEvents(id, { signal: opts.signal })) {
        // Only the stream's end matters.
      }
      j = await this.getJob(id, opts);
      if (isTerminal(j.status)) {
        return j;
      }
    } catch (err) {
      if (opts.signal?.aborted || (err instanceof ApiError && [401, 403, 404].includes(err.status))) {
        throw err;
      }
    }
    for (let delay = 1000; ; delay = Math.min(delay * 2, 5000)) {
      try {
        j = await this.getJob(id, opts);
        if (isTerminal(j.status)) {
          return j;
        }
      } catch (err) {
        if (opts.signal?.aborted || !(err instanceof ConnectionError || (err instanceof ApiError && err.retryable))) {
          throw err;
        }
      }
      await sleep(delay, opts.signal);
    }
  }

  /** The archived workspace as bytes: "tar.gz" (default) or "zip". ApiError conflict until it is archived. */
  async download(id: string, opts: { format?: "tar.gz" | "zip"; signal?: AbortSignal } = {}): Promise<Uint8Array> {
    const resp = await this.downloadStream(id, opts);
    const buf = new Uint8Array(await resp.arrayBuffer());
    const want = resp.headers.get("Content-Length");
    if (want !== null && Number(want) !== buf.byteLength) {
      throw new DrydockError(`download ${id}: got ${buf.byteLength} of ${want} bytes`);
    }
    return buf;
  }

  /** The archive's answer, for streaming it (resp.body) to a file. */
  downloadStream(id: string, opts: { format?: "tar.gz" | "zip"; signal?: AbortSignal } = {}): Promise<Response> {
    const format = opts.format ?? "tar.gz";
    if (format !== "tar.gz" && format !== "zip") {
      throw new DrydockError(`archive format "${String(format)}": use "tar.gz" or "zip"`);
    }
    return this.request(format === "zip" ? "downloadZip" : "downloadTarGz", { path: { id }, headers: { Accept: "*/*" }, signal: opts.signal });
  }

  /** A workspace directory ("" is the root): live while the job runs, from the archive after. */
  async listFiles(id: string, path = "", opts: { signal?: AbortSignal } = {}): Promise<Listing> {
    const resp = await this.request("workspaceFile", { path: { id, path: cleanPath(path) }, signal: opts.signal });
    if (resp.headers.get("Content-Disposition")) {
      await resp.body?.cancel();
      throw new DrydockError(`${path} is a file, not a directory: use readFile`);
    }
    return (await readJSON(resp, "GET /v1/jobs/{id}/files")) as Listing;
  }

  /** A workspace file's bytes, any size. */
  async readFile(id: string, path: string, opts: { signal?: AbortSignal } = {}): Promise<Uint8Array> {
    if (cleanPath(path) === "") {
      throw new DrydockError("a file path is required; listFiles lists the root");
    }
    const resp = await this.request("workspaceFile", { path: { id, path: cleanPath(path) }, query: { download: "1" }, headers: { Accept: "*/*" }, signal: opts.signal });
    if (!resp.headers.get("Content-Disposition")) {
      await resp.body?.cancel();
      throw new DrydockError(`${path} is a directory, not a file: use listFiles`);
    }
    const buf = new Uint8Array(await resp.arrayBuffer());
    const want = resp.headers.get("Content-Length");
    if (want !== null && Number(want) !== buf.byteLength) {
      throw new DrydockError(`read ${path}: got ${buf.byteLength} of ${want} bytes`);
    }
    return buf;
  }

  /** A workspace file as UTF-8 text. */
  async readText(id: string, path: string, opts: { signal?: AbortSignal } = {}): Promise<string> {
    return new TextDecoder().decode(await this.readFile(id, path, opts));
  }

  /** The workspace's changes since the job started, as a git unified diff. */
  async diff(id: string, opts: { signal?: AbortSignal } = {}): Promise<{ patch: string; truncated: boolean }> {
    const resp = await this.request("getDiff", { path: { id }, headers: { Accept: "text/x-diff, text/plain;q=0.5" }, signal: opts.signal });
    const ct = (resp.headers.get("Content-Type") ?? "").split(";")[0].trim();
    if (ct !== "text/x-diff") {
      await resp.body?.cancel();
      throw new DrydockError(`GET /v1/jobs/${id}/diff answered ${ct || "no Content-Type"}, not a diff: is this a Drydock server?`);
    }
    // The server cuts a diff at 8 MiB; more is not a Drydock server's answer.
    const buf = await readAtMost(resp, MAX_DIFF_BYTES + 1);
    if (buf.byteLength > MAX_DIFF_BYTES) {
      throw new DrydockError(`diff of ${id}: the answer is larger than ${MAX_DIFF_BYTES} bytes`);
    }
    return { patch: new TextDecoder().decode(buf), truncated: resp.headers.get("Drydock-Diff-Truncated") === "true" };
  }

  /**
   * Runs a command with bash in the sandbox a job scheduled with
   * `agent: "none"` holds for its caller, and resolves when it ends or its
   * timeout (default 2m, at most 30m) interrupts it. The shell persists
   * between calls (working directory, variables, background jobs). The
   * output is stdout and stderr interleaved, masked for the job's secrets
   * and credential-shaped text, cut at 30000 bytes (output_path holds all of
   * it). A nonzero exit_code is a result, not an error; ApiError conflict
   * when the job has an agent, is not running, or another command still runs.
   * Never retried: a command may not be safe to run twice.
   */
  async runCommand(id: string, command: string, opts: { timeout?: Duration; signal?: AbortSignal } = {}): Promise<CommandResult> {
    if (typeof command !== "string" || command.trim() === "") {
      throw new DrydockError("command is required and must not be blank");
    }
    if (command.includes("\u0000")) {
      throw new DrydockError("command must not contain NUL bytes");
    }
    const n = new TextEncoder().encode(command).byteLength;
    if (n > MAX_COMMAND_BYTES) {
      throw new DrydockError(`command is ${n} bytes; the limit is ${MAX_COMMAND_BYTES}`);
    }
    const body: { command: string; timeout?: Duration } = { command };
    if (opts.timeout !== undefined) {
      body.timeout = opts.timeout;
    }
    return this.#json("runCommand", { path: { id }, body, signal: opts.signal });
  }

  /**
   * Creates or replaces a file (and its missing parent directories) in the
   * sandbox a job scheduled with `agent: "none"` holds, path relative to the
   * workspace root. The content is text, sent as UTF-8 (the server's body
   * limit, 1 MiB by default, bounds it: ApiError 413 over it); bytes must be
   * valid UTF-8.
   */
  async writeFile(id: string, path: string, content: string | Uint8Array, opts: { signal?: AbortSignal } = {}): Promise<WrittenFile> {
    const p = cleanPath(path);
    if (p === "") {
      throw new DrydockError("a file path is required");
    }
    // fetch would resolve ".." itself and send another path than asked.
    if (p.split("/").includes("..")) {
      throw new DrydockError(`${path}: a workspace path must not contain '..'`);
    }
    let text: string;
    if (typeof content === "string") {
      text = content;
    } else if (content instanceof Uint8Array) {
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(content);
      } catch {
        throw new DrydockError(`${path}: the content is not valid UTF-8; the API writes text files only`);
      }
    } else {
      throw new DrydockError("content must be a string or a Uint8Array");
    }
    return this.#json("writeFile", { path: { id, path: p }, body: { text }, signal: opts.signal });
  }

  /**
   * Sends a message to a job's agent (a pending or running job: the stored
   * event comes back) or, to a finished job, creates a follow-up job with the
   * message as its task. followUp does the latter with retries and options.
   */
  async sendMessage(id: string, text: string, opts: { signal?: AbortSignal } = {}): Promise<MessageResult> {
    checkMessage(text);
    const resp = await this.request("sendMessage", { path: { id }, body: { text }, signal: opts.signal });
    const v = await readJSON(resp, "POST /v1/jobs/{id}/messages");
    return resp.status === 201 ? { followUp: v as Job } : { event: v as Event };
  }

  /** A signed link to the job's live desktop (view-only unless control). */
  desktopLink(id: string, opts: { control?: boolean; signal?: AbortSignal } = {}): Promise<Link> {
    return this.#json("desktopLink", { path: { id }, body: { control: opts.control ?? false }, signal: opts.signal });
  }

  /** A signed link to the job's Jupyter server (view-only unless control). */
  jupyterLink(id: string, opts: { control?: boolean; signal?: AbortSignal } = {}): Promise<Link> {
    return this.#json("jupyterLink", { path: { id }, body: { control: opts.control ?? false }, signal: opts.signal });
  }

  /** The job with its whole event log (format drydock.trajectory/v1), the input of `drydock replay`. */
  trajectory(id: string, opts: { signal?: AbortSignal } = {}): Promise<Trajectory> {
    return this.#json("exportTrajectory", { path: { id }, signal: opts.signal });
  }

  /** Liveness: resolves when the process answers. */
  async healthz(): Promise<void> {
    await (await this.request("healthz", { headers: { Accept: "*/*" } })).body?.cancel();
  }

  /** Readiness: resolves when the server's store answers; ApiError (503) otherwise. */
  async readyz(): Promise<void> {
    await (await this.request("readyz", { headers: { Accept: "*/*" } })).body?.cancel();
  }

  /** The Prometheus metrics, as text. */
  async metrics(): Promise<string> {
    return (await this.request("metrics", { headers: { Accept: "text/plain" } })).text();
  }

  /** The server's OpenAPI document. */
  async openapi(): Promise<Record<string, unknown>> {
    return this.#json("openapi", {});
  }
}

function parseBase(raw: string): string {
  let s = (raw ?? "").trim();
  if (s === "") {
    throw new DrydockError("no server URL: pass baseUrl (for example http://127.0.0.1:8080)");
  }
  if (!s.includes("://")) {
    s = "http://" + s;
  }
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new DrydockError(`server URL "${raw}" is not an http(s) URL such as http://127.0.0.1:8080`);
  }
  if ((u.protocol !== "http:" && u.protocol !== "https:") || u.host === "") {
    throw new DrydockError(`server URL "${raw}" is not an http(s) URL such as http://127.0.0.1:8080`);
  }
  if (u.username || u.password) {
    throw new DrydockError("server URL must not hold credentials: pass the API token as token");
  }
  return u.origin + u.pathname.replace(/\/+$/, "");
}

function cleanPath(p: string): string {
  return (p ?? "").replace(/^\/+/, "").replace(/\/+$/, "");
}

function idempotencyKey(key: string | undefined): string {
  if (key === undefined) {
    return crypto.randomUUID();
  }
  if (key.length < 1 || key.length > MAX_IDEMPOTENCY_KEY) {
    throw new DrydockError(`Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY} characters long, not ${key.length}`);
  }
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) {
      throw new DrydockError(`Idempotency-Key may hold printable ASCII characters only; character ${i} is 0x${c.toString(16)}`);
    }
  }
  return key;
}

function checkMessage(text: string): void {
  if (typeof text !== "string" || text.trim() === "") {
    throw new DrydockError("text is required and must not be blank");
  }
  const n = new TextEncoder().encode(text).byteLength;
  if (n > MAX_MESSAGE_BYTES) {
    throw new DrydockError(`text is ${n} bytes; the limit is ${MAX_MESSAGE_BYTES}`);
  }
  if (text.includes("\u0000")) {
    throw new DrydockError("text must be valid UTF-8 without NUL bytes");
  }
}

// sfString writes a key as a Structured Field String, the form the
// Idempotency-Key draft gives the header.
function sfString(key: string): string {
  return '"' + key.replace(/\\/g, "\\\\").replace(/"/g, '\\"') + '"';
}

function jitter(ms: number): number {
  return ms / 2 + Math.random() * (ms / 2);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

async function parseJob(resp: Response, text: string, where: string): Promise<Job> {
  if (!isJSON(resp)) {
    throw foreign(resp, text, `POST ${where}`);
  }
  try {
    return JSON.parse(text) as Job;
  } catch (err) {
    throw new DrydockError(`read the answer of POST ${where}: ${String(err)}`);
  }
}

async function readJSON(resp: Response, what: string): Promise<unknown> {
  const text = await resp.text();
  if (!isJSON(resp)) {
    throw foreign(resp, text, what);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new DrydockError(`decode the answer of ${what}: ${String(err)}`);
  }
}

function isJSON(resp: Response): boolean {
  const ct = (resp.headers.get("Content-Type") ?? "").split(";")[0].trim().toLowerCase();
  return ct === "application/json" || ct.endsWith("+json");
}

function foreign(resp: Response, text: string, what: string): DrydockError {
  const ct = resp.headers.get("Content-Type") || "no Content-Type";
  const head = excerpt(text);
  return new DrydockError(`${what} answered ${resp.status} with ${ct}, not the Drydock API's JSON: is this a Drydock server? (${head})`);
}
