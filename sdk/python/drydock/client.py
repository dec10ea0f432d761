"""The synchronous client."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
import os
from os import PathLike
from typing import IO, Any, BinaryIO, Literal, cast, overload

import httpx

from . import _common as c
from ._common import Diff, MessageResult
from ._operations import OPERATIONS
from ._schema import CommandResult, CreateJob, Duration, EgressRequest, Event, EventPage, Job, JobPage, Link, Listing, Trajectory, WrittenFile
from .errors import ApiError, ConnectError, DrydockError, ScheduleError

Workspace = bytes | str | PathLike[str] | IO[bytes]


class Client:
    """A Drydock API client.

    Every method raises DrydockError subclasses: ApiError (with status, code
    and message) for an error answer of the server, ConnectError when it
    cannot be reached, ScheduleError when a creation's outcome stays unknown.

        with drydock.Client("http://127.0.0.1:8080", token) as dd:
            job = dd.schedule(task="Write a CLI todo app in Python")
            print(dd.wait(job["job_id"])["status"])
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        retries: int = c.DEFAULT_RETRIES,
        backoff_min: float = 0.25,
        backoff_max: float = 5.0,
        stream_idle: float = 45.0,
        timeout: float = 60.0,
        user_agent: str = "drydock-python-sdk",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = c.parse_base(base_url)
        self._retries = max(0, retries)
        self._backoff = (backoff_min, backoff_max)
        # The server pings every 15 s; three missed pings mean a dead
        # connection that TCP alone may take minutes to notice.
        self._stream_timeout = httpx.Timeout(timeout, connect=10.0, read=stream_idle)
        self._command_timeout = httpx.Timeout(timeout, connect=10.0, read=c.COMMAND_READ_TIMEOUT)
        headers = {"User-Agent": user_agent}
        if token:
            headers["Authorization"] = "Bearer " + token
        self._http = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout, connect=10.0),
                                  follow_redirects=False, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The raw layer: every named method below goes through request.

    def url(self, op: str, path: Mapping[str, str] | None = None, query: Mapping[str, Any] | None = None) -> str:
        """The absolute URL of an operation, e.g. url("webJob", {"id": job_id})."""
        return c.build_url(self.base_url, op, path, query)

    def _send(self, op: str, *, path: Mapping[str, str] | None = None, query: Mapping[str, Any] | None = None,
              headers: Mapping[str, str] | None = None, stream_idle: bool = False, slow: bool = False,
              **body: Any) -> httpx.Response:
        """Sends a request and returns its answer with the body not read yet:
        the caller reads (or bounds) it and closes the answer."""
        h = {"Accept": "application/json"}
        h.update(headers or {})
        req = self._http.build_request(OPERATIONS[op].method, self.url(op, path, query), headers=h,
                                       timeout=self._stream_timeout if stream_idle else
                                       self._command_timeout if slow else httpx.USE_CLIENT_DEFAULT, **body)
        try:
            return self._http.send(req, stream=True)
        except httpx.TransportError as e:
            raise ConnectError(self.base_url, e) from e

    def _read(self, resp: httpx.Response) -> httpx.Response:
        """Reads an answer whole and closes it; a body cut short is a
        ConnectError: the answer was lost."""
        try:
            resp.read()
        except httpx.TransportError as e:
            raise ConnectError(self.base_url, e) from e
        finally:
            resp.close()
        return resp

    def request(self, op: str, *, path: Mapping[str, str] | None = None, query: Mapping[str, Any] | None = None,
                headers: Mapping[str, str] | None = None, **body: Any) -> httpx.Response:
        """Sends any operation (json=, content=, files=, data= as httpx takes
        them) and returns a 2xx answer, read whole; any other status raises
        ApiError."""
        resp = self._send(op, path=path, query=query, headers=headers, **body)
        if not 200 <= resp.status_code <= 299:
            raise self._error(resp)
        return self._read(resp)

    def _error(self, resp: httpx.Response) -> ApiError:
        """The error answer, of which at most MAX_ERROR_BODY bytes are read:
        a misbehaving proxy cannot make the client buffer a huge page."""
        body = b""
        try:
            for chunk in resp.iter_bytes():
                body += chunk
                if len(body) >= c.MAX_ERROR_BODY:
                    break
        except httpx.TransportError:
            pass  # the body only betters the message; the status stands
        finally:
            resp.close()
        return c.api_error(resp.status_code, resp.reason_phrase, resp.headers, body,
                           f"{resp.request.method} {resp.request.url.raw_path.decode(errors='replace').split('?')[0]}")

    def _json(self, op: str, **kw: Any) -> Any:
        resp = self.request(op, **kw)
        return c.decode_json(resp.headers, resp.status_code, resp.content, f"{OPERATIONS[op].method} {OPERATIONS[op].path}")

    # Jobs.

    def schedule(self, spec: CreateJob | None = None, *, idempotency_key: str | None = None,
                 workspace: Workspace | None = None,
                 operation: Literal["createJob", "schedule", "submit"] = "createJob", **fields: Any) -> Job:
        """Creates a job and returns it as stored (pending, with its links).

        The job is spec and/or the keyword fields (task, model, max_steps,
        timeout, profile, metadata, egress, secrets, repo, interactive, ...).
        workspace (bytes, a path or a binary file of a tar, tar.gz or zip
        archive) is the files the job starts from.

        Every request carries an Idempotency-Key, so that a request whose
        answer is lost (the connection fails, a gateway answers 502, 503 or
        504, the answer is cut) is sent again, up to retries times with
        exponential backoff and jitter, without creating a second job. When
        the outcome stays unknown the error is a ScheduleError naming the key.
        """
        key = c.idempotency_key(idempotency_key)
        body = c.creation_body(spec, fields)
        headers = {"Idempotency-Key": c.sf_string(key)}
        if workspace is None:
            return self._create(key, lambda: self._send(operation, headers=headers, json=body))
        archive = c.read_workspace(workspace)
        return self._create(key, lambda: self._send(
            operation, headers=headers, data={"spec": json.dumps(body)},
            files={"workspace": ("workspace", archive, "application/octet-stream")}))

    def follow_up(self, job_id: str, text: str, *, idempotency_key: str | None = None, **fields: Any) -> Job:
        """Continues a finished job with a new task (text): a follow-up job
        that starts from the parent's archived workspace and conversation.
        Fields left out are inherited from the parent. Retried under an
        Idempotency-Key as schedule is."""
        key = c.idempotency_key(idempotency_key)
        c.check_message(text)
        parent = self.get_job(job_id)
        if not c.is_terminal(parent.get("status")):
            raise ApiError(409, "conflict", f"job {job_id} is {parent.get('status')}: a follow-up continues a finished "
                           "job (send a message to steer a running one)", f"POST /v1/jobs/{job_id}/messages")
        body = c.creation_body({"text": text}, fields)
        headers = {"Idempotency-Key": c.sf_string(key)}
        return self._create(key, lambda: self._send("sendMessage", path={"id": job_id}, headers=headers, json=body))

    def _create(self, key: str, once: Any) -> Job:
        attempt = 0
        while True:
            attempt += 1
            cause: BaseException
            try:
                resp = once()
            except ConnectError as e:
                cause = e
            else:
                if resp.status_code in (502, 503, 504):
                    cause = self._error(resp)
                elif resp.status_code not in (200, 201):
                    # 202 is a message stored for a running job's agent, not a job.
                    raise self._error(resp)
                else:
                    try:
                        self._read(resp)
                    except ConnectError as e:
                        cause = e  # the job exists but its answer was cut: a retry fetches it
                    else:
                        return cast(Job, c.decode_json(resp.headers, resp.status_code, resp.content,
                                                       f"POST {resp.request.url.path}"))
            if attempt > self._retries:
                raise ScheduleError(key, attempt, cause)
            time.sleep(c.backoff(attempt, *self._backoff))

    def get_job(self, job_id: str) -> Job:
        """A job by id; ApiError not_found if it does not exist or belongs to another token."""
        return cast(Job, self._json("getJob", path={"id": job_id}))

    def status(self, job_id: str) -> Job:
        """The seed-compatible status route (GET /status/{id}): the same job as get_job."""
        return cast(Job, self._json("status", path={"id": job_id}))

    def list_jobs(self, *, status: Sequence[str] | None = None, limit: int | None = None, cursor: str | None = None,
                  metadata: Mapping[str, str] | None = None) -> JobPage:
        """One page of the jobs the token can see, newest first; next_cursor is empty on the last page.
        metadata keeps only the jobs whose metadata has every one of its pairs."""
        return cast(JobPage, self._json("listJobs", query={"status": ",".join(status) if status else None, "limit": limit,
                                             "cursor": cursor or None, "metadata": c.metadata_query(metadata)}))

    def all_jobs(self, *, status: Sequence[str] | None = None, limit: int | None = None,
                 metadata: Mapping[str, str] | None = None) -> Iterator[Job]:
        """Every job matching status, following cursors page by page (limit is the page size)."""
        cursor: str | None = None
        while True:
            page = self.list_jobs(status=status, limit=limit, cursor=cursor, metadata=metadata)
            jobs = page.get("jobs") or []
            yield from jobs
            nxt = page.get("next_cursor")
            # A cursor that does not move would loop forever on a buggy server.
            if not nxt or nxt == cursor or not jobs:
                return
            cursor = nxt

    def cancel(self, job_id: str) -> Job:
        """Cancels a job: a pending one comes back cancelled, a running one stops shortly."""
        return cast(Job, self._json("cancelJob", path={"id": job_id}))

    def pause(self, job_id: str) -> Job:
        return cast(Job, self._json("pauseJob", path={"id": job_id}))

    def resume(self, job_id: str) -> Job:
        return cast(Job, self._json("resumeJob", path={"id": job_id}))

    def set_egress(self, job_id: str, egress: Sequence[str]) -> Job:
        """Replaces the egress allowlist of a pending or running job; [] denies everything."""
        body: EgressRequest = {"egress": list(egress or [])}
        return cast(Job, self._json("setJobEgress", path={"id": job_id}, json=body))

    # Events.

    def events(self, job_id: str, *, after: int = 0, limit: int | None = None) -> EventPage:
        """Up to limit events with a sequence number greater than after."""
        page: EventPage = self._json("listEvents", path={"id": job_id},
                                     query={"after": after if after > 0 else None, "limit": limit})
        if (page.get("next_after") or 0) < after:
            page["next_after"] = after
        return page

    def stream_events(self, job_id: str, *, after: int = 0) -> Iterator[Event]:
        """The job's events after `after`, as the server appends them, until
        the job is terminal and every event was sent. A connection that drops
        or goes silent is resumed with Last-Event-ID, so each event comes once."""
        if not job_id or not job_id.strip():
            raise DrydockError("job id is required")
        p = c.SSEParser(after)
        delay, connected = self._backoff[0], False
        while True:
            progressed = False
            try:
                resp = self._send("listEvents", path={"id": job_id}, query=c.stream_query(p.last),
                                  headers=c.stream_headers(p.last), stream_idle=True)
                try:
                    if not 200 <= resp.status_code <= 299:
                        raise self._error(resp)
                    if c.media_type(resp.headers) != "text/event-stream":
                        raise DrydockError(f"the server answered the event stream with {c.media_type(resp.headers)!r} "
                                           "instead of text/event-stream")
                    connected = True
                    p.new_connection()
                    try:
                        for chunk in resp.iter_bytes():
                            for e in p.feed(chunk):
                                progressed = True
                                yield e
                            if p.ended:
                                return
                    except httpx.TransportError as e:
                        raise c.Dropped(str(e)) from e
                    raise c.Dropped("the stream ended before its end event")
                finally:
                    resp.close()
            except (c.Dropped, ConnectError, ApiError) as e:
                if not _retryable(e, connected):
                    raise
            if progressed:
                delay = self._backoff[0]
            delay = max(delay, p.retry_min)
            time.sleep(c.jitter(delay))
            delay = min(delay * 2, self._backoff[1])

    def wait(self, job_id: str) -> Job:
        """Waits until the job is terminal and returns it. It follows the
        event stream, which tells it the moment the job ends, and polls when
        the stream is not available (a proxy that buffers or refuses streams)."""
        j = self.get_job(job_id)
        if c.is_terminal(j.get("status")):
            return j
        try:
            for _ in self.stream_events(job_id):
                pass
            j = self.get_job(job_id)
            if c.is_terminal(j.get("status")):
                return j
        except ApiError as e:
            if e.status in (401, 403, 404):
                raise
        except DrydockError:
            pass
        delay = 1.0
        while True:
            try:
                j = self.get_job(job_id)
                if c.is_terminal(j.get("status")):
                    return j
            except (ConnectError, ApiError) as e:
                if isinstance(e, ApiError) and not e.retryable:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 5.0)

    # The workspace.

    @overload
    def download(self, job_id: str, format: Literal["tar.gz", "zip"] = ..., to: None = ...) -> bytes: ...

    @overload
    def download(self, job_id: str, format: Literal["tar.gz", "zip"] = ..., *,
                 to: str | PathLike[str] | BinaryIO) -> int: ...

    def download(self, job_id: str, format: Literal["tar.gz", "zip"] = "tar.gz",
                 to: str | PathLike[str] | BinaryIO | None = None) -> bytes | int:
        """The archived workspace: its bytes, or, with to (a path or a binary
        file), written there and the number of bytes returned. ApiError
        conflict until the workspace is archived."""
        if format not in ("tar.gz", "zip"):
            raise DrydockError(f'archive format {format!r}: use "tar.gz" or "zip"')
        op = "downloadZip" if format == "zip" else "downloadTarGz"
        resp = self._send(op, path={"id": job_id}, headers={"Accept": "*/*"}, stream_idle=True)
        try:
            if not 200 <= resp.status_code <= 299:
                raise self._error(resp)
            want = resp.headers.get("content-length")
            if to is None:
                data = resp.read()
                n = len(data)
            else:
                n = 0
                f = open(to, "wb") if isinstance(to, (str, PathLike)) else to
                try:
                    for chunk in resp.iter_bytes():
                        f.write(chunk)
                        n += len(chunk)
                except BaseException:
                    if f is not to:
                        # A cut download must not look like an archive.
                        f.close()
                        os.unlink(to)  # type: ignore[arg-type]
                    raise
                finally:
                    if f is not to:
                        f.close()
        except httpx.TransportError as e:
            raise DrydockError(f"download {job_id}: interrupted: {e}") from e
        finally:
            resp.close()
        if want is not None and int(want) != n:
            raise DrydockError(f"download {job_id}: got {n} of {want} bytes")
        return data if to is None else n

    def list_files(self, job_id: str, path: str = "") -> Listing:
        """A workspace directory ("" is the root): live while the job runs, from the archive after."""
        resp = self.request("workspaceFile", path={"id": job_id, "path": c.clean_path(path)})
        if resp.headers.get("content-disposition"):
            raise DrydockError(f"{path} is a file, not a directory: use read_file")
        return cast(Listing, c.decode_json(resp.headers, resp.status_code, resp.content, "GET /v1/jobs/{id}/files"))

    def read_file(self, job_id: str, path: str) -> bytes:
        """A workspace file's bytes, any size."""
        if not c.clean_path(path):
            raise DrydockError("a file path is required; list_files lists the root")
        resp = self.request("workspaceFile", path={"id": job_id, "path": c.clean_path(path)},
                            query={"download": "1"}, headers={"Accept": "*/*"})
        if not resp.headers.get("content-disposition"):
            raise DrydockError(f"{path} is a directory, not a file: use list_files")
        return resp.content

    def read_text(self, job_id: str, path: str) -> str:
        """A workspace file as UTF-8 text."""
        return self.read_file(job_id, path).decode("utf-8")

    def diff(self, job_id: str) -> Diff:
        """The workspace's changes since the job started, as a git unified diff."""
        resp = self._send("getDiff", path={"id": job_id}, headers={"Accept": "text/x-diff, text/plain;q=0.5"})
        if not 200 <= resp.status_code <= 299:
            raise self._error(resp)
        body = bytearray()
        try:
            if c.media_type(resp.headers) != "text/x-diff":
                raise DrydockError(f"GET /v1/jobs/{job_id}/diff answered {c.media_type(resp.headers) or 'no Content-Type'}, "
                                   "not a diff: is this a Drydock server?")
            # The server cuts a diff at 8 MiB; more is not a Drydock server's answer.
            for chunk in resp.iter_bytes():
                body += chunk
                if len(body) > c.MAX_DIFF_BYTES:
                    raise DrydockError(f"diff of {job_id}: the answer is larger than {c.MAX_DIFF_BYTES} bytes")
        except httpx.TransportError as e:
            raise DrydockError(f"diff of {job_id}: interrupted: {e}") from e
        finally:
            resp.close()
        return Diff(body.decode("utf-8", "replace"), resp.headers.get("drydock-diff-truncated") == "true")

    # A sandbox held for the caller (a job scheduled with agent="none").

    def run_command(self, job_id: str, command: str, *, timeout: Duration | None = None) -> CommandResult:
        """Runs a command with bash in the sandbox a job scheduled with
        agent="none" holds for its caller, and returns when it ends or its
        timeout (a duration such as "90s" or seconds; default 2m, at most
        30m) interrupts it. The shell persists between calls (working
        directory, variables, background jobs). output is stdout and stderr
        interleaved, masked for the job's secrets and credential-shaped text,
        cut at 30000 bytes (output_path holds all of it). A nonzero exit_code
        is a result, not an error; ApiError conflict when the job has an
        agent, is not running, or another command still runs. Never retried:
        a command may not be safe to run twice."""
        body = c.command_body(command, timeout)
        return cast(CommandResult, self._json("runCommand", path={"id": job_id}, json=body, slow=True))

    def write_file(self, job_id: str, path: str, content: str | bytes) -> WrittenFile:
        """Creates or replaces a file (and its missing parent directories) in
        the sandbox a job scheduled with agent="none" holds, path relative to
        the workspace root. The content is text, sent as UTF-8 (bytes must be
        valid UTF-8); the server's body limit (1 MiB by default) bounds it."""
        p = c.write_path(path)
        text = c.file_text(path, content)
        return cast(WrittenFile, self._json("writeFile", path={"id": job_id, "path": p}, json={"text": text}))

    # Steering and live views.

    def send_message(self, job_id: str, text: str) -> MessageResult:
        """Sends a message to a job's agent (a pending or running job: the
        stored event comes back) or, to a finished job, creates a follow-up
        job with the message as its task (follow_up does that with retries
        and options)."""
        c.check_message(text)
        resp = self.request("sendMessage", path={"id": job_id}, json={"text": text})
        v = c.decode_json(resp.headers, resp.status_code, resp.content, "POST /v1/jobs/{id}/messages")
        return MessageResult(None, v) if resp.status_code == 201 else MessageResult(v, None)

    def desktop_link(self, job_id: str, *, control: bool = False) -> Link:
        """A signed link to the job's live desktop (view-only unless control)."""
        return cast(Link, self._json("desktopLink", path={"id": job_id}, json={"control": control}))

    def jupyter_link(self, job_id: str, *, control: bool = False) -> Link:
        """A signed link to the job's Jupyter server (view-only unless control)."""
        return cast(Link, self._json("jupyterLink", path={"id": job_id}, json={"control": control}))

    def trajectory(self, job_id: str) -> Trajectory:
        """The job with its whole event log (format drydock.trajectory/v1), the input of `drydock replay`."""
        return cast(Trajectory, self._json("exportTrajectory", path={"id": job_id}))

    # The server.

    def healthz(self) -> None:
        """Liveness: returns when the process answers."""
        self.request("healthz", headers={"Accept": "*/*"})

    def readyz(self) -> None:
        """Readiness: returns when the server's store answers; ApiError (503) otherwise."""
        self.request("readyz", headers={"Accept": "*/*"})

    def metrics(self) -> str:
        """The Prometheus metrics, as text."""
        return self.request("metrics", headers={"Accept": "text/plain"}).text

    def openapi(self) -> dict[str, Any]:
        """The server's OpenAPI document."""
        return cast("dict[str, Any]", self._json("openapi"))


def _retryable(err: BaseException, connected: bool) -> bool:
    if isinstance(err, c.Dropped):
        return True
    if isinstance(err, ConnectError):
        # Refused at the very first attempt means no server is there; later
        # it usually means the server is restarting.
        return connected
    if isinstance(err, ApiError):
        return err.code == "unavailable" or (connected and err.retryable)
    return False
