"""What the sync and async clients share: URLs, validation, error answers,
backoff and the event stream's parser. No I/O here."""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import quote, urlencode, urlsplit

from ._operations import OPERATIONS
from ._schema import Event, Job
from .errors import ApiError, DrydockError

DEFAULT_RETRIES = 5
"""How many times schedule and follow_up send a request again when its answer was lost."""

MAX_IDEMPOTENCY_KEY = 255
MAX_MESSAGE_BYTES = 64 << 10
MAX_DIFF_BYTES = 9 << 20
MAX_COMMAND_BYTES = 64 << 10
# The server interrupts a held sandbox's command after at most 30 minutes;
# its answer may take that long.
COMMAND_READ_TIMEOUT = 31 * 60.0
# Bounds how much of an error answer is read, so a misbehaving proxy cannot
# make the client buffer a huge page.
MAX_ERROR_BODY = 64 << 10
# One line of an event stream: an event's data is at most 1 MiB of JSON, and
# escaping can grow it.
MAX_SSE_LINE = 4 * (1 << 20) + 4096

TERMINAL = ("complete", "error", "cancelled")


class Diff(NamedTuple):
    """A job's changes as a git unified diff; truncated when the server cut it (over 8 MiB)."""

    patch: str
    truncated: bool


class MessageResult(NamedTuple):
    """The answer of send_message: the stored event (a pending or running job)
    or the follow-up job it created (a finished job)."""

    event: Event | None
    follow_up: Job | None


def is_terminal(status: str | None) -> bool:
    return status in TERMINAL


def parse_base(raw: str) -> str:
    s = (raw or "").strip()
    if not s:
        raise DrydockError("no server URL: pass base_url (for example http://127.0.0.1:8080)")
    if "://" not in s:
        s = "http://" + s
    u = urlsplit(s)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise DrydockError(f"server URL {raw!r} is not an http(s) URL such as http://127.0.0.1:8080")
    if u.username or u.password:
        raise DrydockError("server URL must not hold credentials: pass the API token as token")
    return f"{u.scheme}://{u.netloc}{u.path.rstrip('/')}"


_PARAM = re.compile(r"\{([a-z]+)(\.\.\.)?\}|\{\$\}")


def build_url(base: str, op: str, path: Mapping[str, str] | None = None, query: Mapping[str, Any] | None = None) -> str:
    spec = OPERATIONS.get(op)
    if spec is None:
        raise DrydockError(f"unknown operation {op!r}")
    params = path or {}

    def sub(m: re.Match[str]) -> str:
        name, rest = m.group(1), m.group(2)
        if name is None:
            return ""  # {$}: the exact path "/"
        v = params.get(name)
        if rest:
            # A workspace path: segments escaped one by one; the server
            # refuses '', '.' and '..' segments itself.
            return "/".join(quote(seg, safe="") for seg in (v or "").split("/"))
        if v is None or not str(v).strip():
            raise DrydockError(f"{name} is required")
        return quote(str(v), safe="")

    p = _PARAM.sub(sub, spec.path)
    q = {k: [_query_value(x) for x in v] if isinstance(v, list) else _query_value(v) for k, v in (query or {}).items() if v is not None}
    return base + p + ("?" + urlencode(q, doseq=True) if q else "")


def metadata_query(metadata: Mapping[str, str] | None) -> list[str] | None:
    """The repeated metadata=KEY=VALUE parameters of a job list."""
    return [f"{k}={v}" for k, v in metadata.items()] if metadata else None


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def clean_path(p: str) -> str:
    return (p or "").strip("/")


def idempotency_key(key: str | None) -> str:
    if key is None:
        return str(uuid.uuid4())
    if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY:
        raise DrydockError(f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} characters long, not {len(key)}")
    for i, c in enumerate(key):
        if not 0x20 <= ord(c) <= 0x7E:
            raise DrydockError(f"Idempotency-Key may hold printable ASCII characters only; character {i} is {ord(c):#04x}")
    return key


def sf_string(key: str) -> str:
    """The key as a Structured Field String, the form the Idempotency-Key draft gives the header."""
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def check_message(text: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise DrydockError("text is required and must not be blank")
    n = len(text.encode("utf-8", "surrogatepass"))
    if n > MAX_MESSAGE_BYTES:
        raise DrydockError(f"text is {n} bytes; the limit is {MAX_MESSAGE_BYTES}")
    if "\x00" in text:
        raise DrydockError("text must be valid UTF-8 without NUL bytes")


def command_body(command: str, timeout: str | float | None) -> dict[str, Any]:
    if not isinstance(command, str) or not command.strip():
        raise DrydockError("command is required and must not be blank")
    if "\x00" in command:
        raise DrydockError("command must not contain NUL bytes")
    n = len(command.encode("utf-8", "surrogatepass"))
    if n > MAX_COMMAND_BYTES:
        raise DrydockError(f"command is {n} bytes; the limit is {MAX_COMMAND_BYTES}")
    body: dict[str, Any] = {"command": command}
    if timeout is not None:
        body["timeout"] = timeout
    return body


def write_path(path: str) -> str:
    """A path for PUT /v1/jobs/{id}/files/{path}, checked here: httpx would
    resolve '..' itself and send another path than the caller asked for."""
    p = clean_path(path)
    if not p:
        raise DrydockError("a file path is required")
    if ".." in p.split("/"):
        raise DrydockError(f"{path}: a workspace path must not contain '..'")
    return p


def file_text(path: str, content: str | bytes) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, (bytes, bytearray, memoryview)):
        try:
            return bytes(content).decode("utf-8")
        except UnicodeDecodeError:
            raise DrydockError(f"{path}: the content is not valid UTF-8; the API writes text files only") from None
    raise DrydockError("content must be str or bytes")


def backoff(attempt: int, lo: float, hi: float) -> float:
    """The pause before retry attempt (1, 2, ...): doubling from lo up to hi,
    drawn from its upper half so that clients cut off together do not come
    back in lockstep."""
    d: float = min(lo * 2.0 ** min(attempt - 1, 20), hi)
    return d / 2 + random.random() * d / 2


def jitter(d: float) -> float:
    """A pause drawn from the upper half of d."""
    return d / 2 + random.random() * d / 2


def media_type(headers: Mapping[str, str]) -> str:
    return (headers.get("content-type") or "").split(";")[0].strip().lower()


def is_json(headers: Mapping[str, str]) -> bool:
    mt = media_type(headers)
    return mt == "application/json" or mt.endswith("+json")


_CODES = {400: "invalid", 401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict",
          413: "too_large", 501: "not_implemented", 502: "unavailable", 503: "unavailable", 504: "unavailable"}


_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def excerpt(body: bytes) -> str:
    """The start of a page that is not the API's, fit for a one-line
    message: whitespace collapsed, and control and bidirectional characters
    escaped, so that a page cannot rewrite the terminal that prints the error."""
    text = " ".join(body[:200].decode("utf-8", "replace").split())
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def api_error(status: int, reason: str, headers: Mapping[str, str], body: bytes, request: str) -> ApiError:
    """An error answer: the API's {"error": {"code", "message"}}, or a
    description of whatever else answered (a proxy's page)."""
    body = body[:MAX_ERROR_BODY]
    fallback = _CODES.get(status, "internal" if status >= 500 else "invalid")
    if is_json(headers):
        try:
            v = json.loads(body)
            err = v.get("error") if isinstance(v, dict) else None
            if isinstance(err, dict) and isinstance(err.get("message"), str):
                code = err.get("code")
                return ApiError(status, code if isinstance(code, str) else fallback, err["message"], request)
        except ValueError:
            pass
    head = excerpt(body)
    msg = f"{request} answered {status} {reason}".strip() + (f": {head}" if head else "")
    return ApiError(status, fallback, msg, request)


def decode_json(headers: Mapping[str, str], status: int, body: bytes, what: str) -> Any:
    if not is_json(headers):
        head = excerpt(body)
        ct = headers.get("content-type") or "no Content-Type"
        raise DrydockError(f"{what} answered {status} with {ct}, not the Drydock API's JSON: is this a Drydock server? ({head})")
    try:
        return json.loads(body)
    except ValueError as e:
        raise DrydockError(f"decode the answer of {what}: {e}") from e


class Dropped(Exception):
    """An event stream that ended or went silent before the server's end event."""


class SSEParser:
    """Reads Server-Sent Events from bytes as they arrive. It keeps the
    sequence number of the last event given out, so that a resumed stream
    gives each event once."""

    def __init__(self, after: int) -> None:
        self.last = after
        self.retry_min = 0.0
        self.ended = False
        self._buf = b""
        self._reset()

    def _reset(self) -> None:
        self._type = ""
        self._id = ""
        self._data: list[str] = []

    def new_connection(self) -> None:
        self._buf = b""
        self._reset()

    def feed(self, chunk: bytes) -> list[Event]:
        out: list[Event] = []
        self._buf += chunk
        while not self.ended:
            i = self._buf.find(b"\n")
            if i < 0:
                break
            raw, self._buf = self._buf[:i], self._buf[i + 1 :]
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            e = self._line(line)
            if e is not None:
                out.append(e)
        if len(self._buf) > MAX_SSE_LINE:
            raise DrydockError("event stream line too long")
        return out

    def _line(self, line: str) -> Event | None:
        if line == "":
            if not self._type and not self._data:
                return None
            typ, eid, data = self._type, self._id, "\n".join(self._data)
            self._reset()
            if typ == "end":
                self.ended = True
                return None
            try:
                e: Event = json.loads(data)
            except ValueError as err:
                raise DrydockError(f"event stream: malformed event {eid!r}: {err}") from err
            if not e.get("seq") and eid.isdigit():
                e["seq"] = int(eid)
            if not e.get("type") and typ and typ != "message":
                e["type"] = typ  # type: ignore[typeddict-item]
            seq = e.get("seq") or 0
            # After a reconnect a server may resend what it sent just
            # before the drop.
            if seq and seq <= self.last:
                return None
            if seq > self.last:
                self.last = seq
            return e
        if line.startswith(":"):
            return None  # the server's keep-alive ping
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._type = value
        elif field == "data":
            self._data.append(value)
        elif field == "id":
            self._id = value
        elif field == "retry" and value.isdigit() and int(value) > 0:
            self.retry_min = int(value) / 1000
        return None


def stream_headers(last: int) -> dict[str, str]:
    h = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
    if last > 0:
        h["Last-Event-ID"] = str(last)
    return h


def stream_query(last: int) -> dict[str, Any]:
    return {"stream": "true", "after": last if last > 0 else None}


def creation_body(spec: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    body = dict(spec or {})
    body.update({k: v for k, v in fields.items() if v is not None})
    return body


def read_workspace(workspace: Any) -> bytes:
    """The archive to upload: bytes, a path, or a binary file object."""
    if isinstance(workspace, (bytes, bytearray, memoryview)):
        return bytes(workspace)
    if hasattr(workspace, "read"):
        data = workspace.read()
        if not isinstance(data, bytes):
            raise DrydockError("workspace must be opened in binary mode")
        return data
    try:
        with open(workspace, "rb") as f:
            return f.read()
    except OSError as e:
        raise DrydockError(f"read the workspace archive: {e}") from e
