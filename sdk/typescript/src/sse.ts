// The event stream: Server-Sent Events read from fetch, resumed with
// Last-Event-ID after a drop, as the Go client's StreamEvents does.
import { ApiError, ConnectionError, DrydockError, apiError } from "./errors.js";
import type { Event } from "./types.js";

// One line of the stream: an event's data is at most 1 MiB of JSON, and
// escaping can grow it.
const MAX_LINE = 4 * (1 << 20) + 4096;

export interface StreamOptions {
  /** Only events with a greater sequence number (default 0: all). */
  after?: number;
  signal?: AbortSignal;
  backoffMinMs?: number;
  backoffMaxMs?: number;
  idleMs?: number;
  /** Opens one connection; last is the sequence number of the last event seen. */
  open: (last: number, signal: AbortSignal) => Promise<Response>;
}

class Dropped extends Error {}

export async function* streamEvents(opts: StreamOptions): AsyncGenerator<Event> {
  const min = opts.backoffMinMs ?? 250;
  const max = opts.backoffMaxMs ?? 5000;
  const idleMs = opts.idleMs ?? 45_000;
  let last = opts.after ?? 0;
  let delay = min;
  let retryMin = 0;
  let connected = false;
  for (;;) {
    const conn = new AbortController();
    const onAbort = () => conn.abort(opts.signal?.reason);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    let idle = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        idle = true;
        conn.abort(new Dropped("event stream silent"));
      }, idleMs);
    };
    let progressed = false;
    let failure: unknown;
    try {
      arm();
      let resp: Response;
      try {
        resp = await opts.open(last, conn.signal);
      } catch (err) {
        if (idle && !opts.signal?.aborted) {
          throw new Dropped("event stream silent");
        }
        throw err;
      }
      if (resp.status < 200 || resp.status > 299) {
        throw await apiError(resp, "GET /v1/jobs/{id}/events");
      }
      const ct = (resp.headers.get("Content-Type") ?? "").split(";")[0].trim();
      if (ct !== "text/event-stream") {
        await resp.body?.cancel();
        throw new DrydockError(`the server answered the event stream with "${ct}" instead of text/event-stream`);
      }
      connected = true;
      if (!resp.body) {
        throw new Dropped("no body");
      }
      let type = "";
      let id = "";
      let data = "";
      try {
        for await (const line of lines(resp.body, arm)) {
          if (line === "") {
            if (type === "" && data === "") {
              continue;
            }
            if (type === "end") {
              return;
            }
            const e = decode(type, id, data);
            type = "";
            id = "";
            data = "";
            // After a reconnect a server may resend what it sent just
            // before the drop; each event is given once.
            if (e.seq && e.seq <= last) {
              continue;
            }
            progressed = true;
            if (e.seq && e.seq > last) {
              last = e.seq;
            }
            yield e;
            continue;
          }
          if (line.startsWith(":")) {
            continue; // the server's keep-alive ping
          }
          const i = line.indexOf(":");
          const field = i < 0 ? line : line.slice(0, i);
          let value = i < 0 ? "" : line.slice(i + 1);
          if (value.startsWith(" ")) {
            value = value.slice(1);
          }
          switch (field) {
            case "event":
              type = value;
              break;
            case "data":
              data += value + "\n";
              break;
            case "id":
              id = value;
              break;
            case "retry": {
              const ms = Number.parseInt(value, 10);
              if (ms > 0) {
                retryMin = ms;
              }
              break;
            }
          }
        }
      } catch (err) {
        if (opts.signal?.aborted || err instanceof DrydockError) {
          throw err;
        }
        throw new Dropped(String(err));
      }
      throw new Dropped("the stream ended before its end event");
    } catch (err) {
      if (opts.signal?.aborted) {
        throw opts.signal.reason ?? err;
      }
      failure = err;
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      conn.abort();
    }
    if (!retryable(failure, connected)) {
      throw failure;
    }
    if (progressed) {
      delay = min;
    }
    delay = Math.max(delay, retryMin);
    await pause(delay / 2 + (Math.random() * delay) / 2, opts.signal);
    delay = Math.min(delay * 2, max);
  }
}

function retryable(err: unknown, connected: boolean): boolean {
  if (err instanceof Dropped) {
    return true;
  }
  if (err instanceof ConnectionError) {
    // Refused at the very first attempt means no server is there; later it
    // usually means the server is restarting.
    return connected;
  }
  if (err instanceof ApiError) {
    return err.code === "unavailable" || (connected && err.retryable);
  }
  return false;
}

function decode(type: string, id: string, data: string): Event {
  let e: Event;
  try {
    e = JSON.parse(data.replace(/\n$/, "")) as Event;
  } catch (err) {
    throw new DrydockError(`event stream: malformed event ${JSON.stringify(id)}: ${String(err)}`);
  }
  if (!e.seq) {
    const n = Number.parseInt(id, 10);
    if (n > 0) {
      e.seq = n;
    }
  }
  if (!e.type && type && type !== "message") {
    e.type = type as Event["type"];
  }
  return e;
}

// lines yields the stream's lines without their endings ("\n", "\r\n" or
// "\r"), calling seen for each chunk that arrives (the idle timer).
async function* lines(body: ReadableStream<Uint8Array>, seen: () => void): AsyncGenerator<string> {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        return;
      }
      seen();
      buf += dec.decode(value, { stream: true });
      for (;;) {
        const m = /\r\n|\n|\r/.exec(buf);
        if (!m) {
          break;
        }
        // A lone "\r" at the end of the buffer may be half of "\r\n".
        if (m[0] === "\r" && m.index === buf.length - 1) {
          break;
        }
        yield buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
      }
      if (buf.length > MAX_LINE) {
        throw new DrydockError("event stream line too long");
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
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
