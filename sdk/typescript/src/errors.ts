// The SDK's error model: every failure is a DrydockError; an answer of the
// server is an ApiError carrying its status and the API's code and message.

/** The base of every error the SDK throws. */
export class DrydockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message);
    this.name = "DrydockError";
    if (options && "cause" in options) {
      // Assigned rather than passed to super so that the library builds
      // with TypeScript releases whose lib lacks ErrorOptions.
      (this as { cause?: unknown }).cause = options.cause;
    }
  }
}

/**
 * An error answer of the server: `status` is the HTTP status, `code` the
 * API's error code (`invalid`, `not_found`, `conflict`, ...; see docs/API.md)
 * and `message` its message, meant for people.
 */
export class ApiError extends DrydockError {
  readonly status: number;
  readonly code: string;
  /** The request that failed, as "METHOD /path". */
  readonly request: string;

  constructor(status: number, code: string, message: string, request: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.request = request;
  }

  /** Whether the same request may succeed later (a server restarting, a gateway). */
  get retryable(): boolean {
    return this.code === "unavailable" || this.status === 502 || this.status === 503 || this.status === 504;
  }
}

/** The server could not be reached at all (refused, DNS, TLS, reset before an answer). */
export class ConnectionError extends DrydockError {
  readonly url: string;
  constructor(url: string, cause: unknown) {
    super(`cannot reach the Drydock server at ${url}: is \`drydock server\` running? [${describe(cause)}]`, { cause });
    this.name = "ConnectionError";
    this.url = url;
  }
}

/**
 * A job creation (schedule or follow-up) whose outcome is unknown: the server
 * got no request or its answer was lost, on every retry. Scheduling again with
 * `idempotencyKey: err.key` is safe: it returns the job if the first request
 * created one, and creates it otherwise.
 */
export class ScheduleError extends DrydockError {
  readonly key: string;
  readonly attempts: number;
  constructor(key: string, attempts: number, cause: unknown) {
    super(
      `schedule: no answer after ${attempts} attempt(s) with Idempotency-Key ${key}; the job may exist: ` +
        `scheduling again with this key returns it instead of creating another: ${describe(cause)}`,
      { cause },
    );
    this.name = "ScheduleError";
    this.key = key;
    this.attempts = attempts;
  }
}

export function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    // fetch reports "fetch failed" and hides the reason in cause.
    if (cause instanceof Error && cause.message && !err.message.includes(cause.message)) {
      return `${err.message}: ${cause.message}`;
    }
    return err.message;
  }
  return String(err);
}

// Bounds how much of an error answer is read, so a misbehaving proxy cannot
// make the client buffer a huge page.
const MAX_ERROR_BODY = 64 << 10;

// apiError reads an error answer: the API's {"error": {"code", "message"}},
// or a description of whatever else answered (a proxy's page).
export async function apiError(resp: Response, request: string): Promise<ApiError> {
  let text = "";
  try {
    text = new TextDecoder().decode(await readAtMost(resp, MAX_ERROR_BODY));
  } catch {
    // The body is only a better message; the status stands.
  }
  if (isJSONAnswer(resp)) {
    try {
      const v = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
      if (v?.error && typeof v.error.message === "string") {
        return new ApiError(resp.status, typeof v.error.code === "string" ? v.error.code : codeOf(resp.status), v.error.message, request);
      }
    } catch {
      // Fall through: described below.
    }
  }
  const head = excerpt(text);
  const msg = `${request} answered ${resp.status} ${resp.statusText}`.trim() + (head ? `: ${head}` : "");
  return new ApiError(resp.status, codeOf(resp.status), msg, request);
}

function codeOf(status: number): string {
  switch (status) {
    case 400:
      return "invalid";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 409:
      return "conflict";
    case 413:
      return "too_large";
    case 501:
      return "not_implemented";
    case 502:
    case 503:
    case 504:
      return "unavailable";
    default:
      return status >= 500 ? "internal" : "invalid";
  }
}

function isJSONAnswer(resp: Response): boolean {
  const ct = (resp.headers.get("Content-Type") ?? "").split(";")[0].trim().toLowerCase();
  return ct === "application/json" || ct.endsWith("+json");
}

// readAtMost reads up to max bytes of an answer and cancels the rest.
export async function readAtMost(resp: Response, max: number): Promise<Uint8Array> {
  if (!resp.body) {
    return new Uint8Array(0);
  }
  const reader = resp.body.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  try {
    while (n < max) {
      const { done, value } = await reader.read();
      if (done) {
        break;
      }
      chunks.push(value);
      n += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const out = new Uint8Array(Math.min(n, max));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, out.byteLength - at);
    out.set(part, at);
    at += part.byteLength;
    if (at >= out.byteLength) {
      break;
    }
  }
  return out;
}

/**
 * The start of a page that is not the API's, fit for a one-line message:
 * whitespace collapsed, and control and bidirectional characters escaped, so
 * that a page cannot rewrite the terminal that prints the error.
 */
export function excerpt(text: string): string {
  return text
    .slice(0, 200)
    .replace(/\s+/g, " ")
    .trim()
    .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (ch) => "\\u" + ch.charCodeAt(0).toString(16).padStart(4, "0"));
}
