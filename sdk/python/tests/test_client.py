"""The Python SDK against a real Drydock server (the fake agent): run by
sdk/sdk_test.go, which starts the server. Environment: DRYDOCK_URL (the
server), DRYDOCK_SDK_UPLOAD (a tar.gz holding hello.txt)."""

from __future__ import annotations

import asyncio
import io
import os
import tarfile
import tempfile
import time
import unittest
import uuid
from collections.abc import Callable, Iterator

import httpx

import drydock

URL = os.environ.get("DRYDOCK_URL", "")
TOKEN = os.environ.get("DRYDOCK_TOKEN")


def quick(tag: str) -> str:
    """A job that writes notes/ and SUMMARY.md in two quick steps."""
    return f"[fake:steps=2] [fake:delay=10ms] {tag}"


def held_ready(events: list[drydock.types.Event]) -> bool:
    """Whether the runner said the held sandbox is ready: running comes before that."""
    return any(e.get("type") == "log" and (e.get("data") or {}).get("kind") == "sandbox_held" for e in events)


def hanging(tag: str) -> str:
    """A job that runs until cancelled."""
    return f"[fake:hang] [fake:delay=10ms] {tag}"


@unittest.skipUnless(URL, "DRYDOCK_URL is not set: run through `go test ./sdk` with DRYDOCK_TEST_E2E=1")
class FinishedJob(unittest.TestCase):
    dd: drydock.Client
    created: drydock.types.Job
    job: drydock.types.Job
    jid: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.dd = drydock.Client(URL, TOKEN, backoff_min=0.01, backoff_max=0.05)
        cls.created = cls.dd.schedule(task=quick("finished"), metadata={"suite": "python"})
        cls.job = cls.dd.wait(cls.created["job_id"])
        cls.jid = cls.job["job_id"]

    @classmethod
    def tearDownClass(cls) -> None:
        cls.dd.close()

    def test_schedule_returns_the_stored_pending_job(self) -> None:
        self.assertEqual(self.created["status"], "pending")
        self.assertEqual(self.created["metadata"], {"suite": "python"})
        self.assertTrue(self.created["events_url"].endswith(f"/v1/jobs/{self.jid}/events"))

    def test_wait_follows_the_job_to_its_end(self) -> None:
        self.assertEqual(self.job["status"], "complete")
        self.assertEqual(self.job["steps"], 2)
        self.assertTrue(drydock.is_terminal(self.job["status"]))
        self.assertEqual(self.dd.status(self.jid)["status"], "complete")

    def test_events_as_pages_and_as_a_resumable_stream(self) -> None:
        page = self.dd.events(self.jid, limit=3)
        self.assertEqual(len(page["events"]), 3)
        rest = self.dd.events(self.jid, after=page["next_after"])
        self.assertTrue(all(e["seq"] > page["next_after"] for e in rest["events"]))
        seqs = [e["seq"] for e in self.dd.stream_events(self.jid)]
        self.assertEqual(seqs, sorted(set(seqs)))
        self.assertEqual([e["seq"] for e in self.dd.stream_events(self.jid, after=seqs[2])], seqs[3:])

    def test_a_stream_cut_after_its_first_event_resumes_with_last_event_id(self) -> None:
        t = _CutsFirstStream()
        with drydock.Client(URL, TOKEN, transport=t, backoff_min=0.005, backoff_max=0.01) as dd:
            got = [e["seq"] for e in dd.stream_events(self.jid)]
        want = [e["seq"] for e in self.dd.events(self.jid, limit=1000)["events"]]
        self.assertEqual(got, want)
        self.assertEqual(t.last_ids, [None, str(want[0])])

    def test_download_as_tar_gz_and_zip(self) -> None:
        tgz = self.dd.download(self.jid)
        with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tf:
            self.assertIn("SUMMARY.md", [n.lstrip("./") for n in tf.getnames()])
        self.assertEqual(self.dd.download(self.jid, "zip")[:2], b"PK")
        buf = io.BytesIO()
        n = self.dd.download(self.jid, to=buf)
        self.assertEqual(n, len(buf.getvalue()))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ws.tar.gz")
            self.assertEqual(self.dd.download(self.jid, to=path), len(tgz))
            with open(path, "rb") as f:
                self.assertEqual(f.read(), tgz)
        with self.assertRaises(drydock.DrydockError):
            self.dd.download(self.jid, "rar")  # type: ignore[call-overload]

    def test_files_are_listed_and_read(self) -> None:
        root = self.dd.list_files(self.jid)
        self.assertEqual(root["source"], "archive")
        names = [e["name"] for e in root["entries"]]
        self.assertIn("notes", names)
        self.assertIn("SUMMARY.md", names)
        self.assertGreaterEqual(len(self.dd.list_files(self.jid, "notes")["entries"]), 2)
        self.assertTrue(self.dd.read_text(self.jid, "SUMMARY.md"))
        with self.assertRaisesRegex(drydock.DrydockError, "is a directory"):
            self.dd.read_file(self.jid, "notes")
        with self.assertRaisesRegex(drydock.DrydockError, "is a file"):
            self.dd.list_files(self.jid, "SUMMARY.md")
        with self.assertRaises(drydock.ApiError) as cm:
            self.dd.read_file(self.jid, "missing.txt")
        self.assertEqual(cm.exception.status, 404)

    def test_diff_and_trajectory(self) -> None:
        d = self.dd.diff(self.jid)
        self.assertIn("SUMMARY.md", d.patch)
        self.assertFalse(d.truncated)
        t = self.dd.trajectory(self.jid)
        self.assertEqual(t["format"], "drydock.trajectory/v1")
        self.assertEqual(t["job"]["job_id"], self.jid)

    def test_follow_ups(self) -> None:
        r = self.dd.send_message(self.jid, quick("one more"))
        self.assertIsNone(r.event)
        assert r.follow_up is not None
        self.assertEqual(r.follow_up["parent_job_id"], self.jid)
        key = f"py-follow-{uuid.uuid4()}"
        a = self.dd.follow_up(self.jid, quick("again"), idempotency_key=key, max_steps=5)
        b = self.dd.follow_up(self.jid, quick("again"), idempotency_key=key, max_steps=5)
        self.assertEqual(a["job_id"], b["job_id"])
        self.assertEqual(self.dd.wait(a["job_id"])["status"], "complete")
        self.dd.wait(r.follow_up["job_id"])

    def test_links_to_a_finished_job_are_refused(self) -> None:
        with self.assertRaises(drydock.ApiError) as cm:
            self.dd.desktop_link(self.jid)
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "conflict"))
        self.assertTrue(cm.exception.message)


@unittest.skipUnless(URL, "DRYDOCK_URL is not set")
class RunningJob(unittest.TestCase):
    def test_steering_a_running_job(self) -> None:
        with drydock.Client(URL, TOKEN) as dd:
            job = dd.schedule(task=hanging("running"))
            jid = job["job_id"]
            for _ in range(400):
                if dd.get_job(jid)["status"] == "running":
                    break
                time.sleep(0.025)
            r = dd.send_message(jid, "please also add tests")
            assert r.event is not None
            self.assertEqual(r.event["type"], "user_message")
            with self.assertRaises(drydock.DrydockError):
                dd.send_message(jid, "  ")
            with self.assertRaises(drydock.ApiError) as cm:
                dd.follow_up(jid, "more")
            self.assertEqual(cm.exception.status, 409)
            self.assertTrue(dd.pause(jid)["paused"])
            self.assertFalse(dd.resume(jid).get("paused", False))
            self.assertEqual(dd.set_egress(jid, ["example.com:443"])["egress"], ["example.com:443"])
            with self.assertRaises(drydock.ApiError) as cm:
                dd.set_egress(jid, ["not a host!"])
            self.assertEqual(cm.exception.status, 400)
            link = dd.jupyter_link(jid)
            self.assertIn(f"/jobs/{jid}/jupyter/", link["url"])
            dd.cancel(jid)
            types = [e.get("type") for e in dd.stream_events(jid)]
            self.assertIn("user_message", types)
            self.assertEqual(dd.get_job(jid)["status"], "cancelled")


@unittest.skipUnless(URL, "DRYDOCK_URL is not set")
class HeldSandbox(unittest.TestCase):
    """A job scheduled with agent="none": the sandbox is held for the caller."""

    def test_commands_and_files_in_a_held_sandbox(self) -> None:
        with drydock.Client(URL, TOKEN) as dd:
            created = dd.schedule(agent="none", timeout="10m")
            jid = created["job_id"]
            self.assertEqual(created["agent"], "none")
            for _ in range(400):
                if held_ready(dd.events(jid)["events"]):
                    break
                time.sleep(0.025)
            r = dd.run_command(jid, "mkdir -p sub && cd sub && echo hello from $(basename $PWD)")
            self.assertEqual((r["exit_code"], r["output"], r["job_id"]), (0, "hello from sub\n", jid))
            r = dd.run_command(jid, "basename $PWD; (exit 3)", timeout=30)  # the shell persists
            self.assertEqual((r["exit_code"], r["output"]), (3, "sub\n"))
            self.assertFalse(r.get("timed_out", False))
            w = dd.write_file(jid, "/notes/held.txt", "written by the SDK\n")
            self.assertEqual((w["path"], w["size"]), ("notes/held.txt", 19))
            self.assertEqual(dd.write_file(jid, "notes/bytes.txt", "caf\u00e9".encode())["size"], 5)
            self.assertEqual(dd.read_text(jid, "notes/held.txt"), "written by the SDK\n")
            self.assertIn("written by the SDK", dd.run_command(jid, "cat ../notes/held.txt")["output"])
            refused: list[Callable[[], object]] = [
                lambda: dd.run_command(jid, "  "), lambda: dd.run_command(jid, "echo a\x00b"),
                lambda: dd.write_file(jid, "", "x"), lambda: dd.write_file(jid, "notes/../../x", "x"),
                lambda: dd.write_file(jid, "bad.bin", b"\xff\xfe")]
            for bad in refused:  # before anything is sent
                with self.assertRaises(drydock.DrydockError) as cm:
                    bad()
                self.assertNotIsInstance(cm.exception, drydock.ApiError)
            with self.assertRaises(drydock.ApiError) as api:
                dd.send_message(jid, "hello")
            self.assertEqual(api.exception.status, 409)
            dd.cancel(jid)
            self.assertEqual(dd.wait(jid)["status"], "cancelled")
            with self.assertRaises(drydock.ApiError) as api:
                dd.run_command(jid, "true")
            self.assertEqual(api.exception.status, 409)
            for _ in range(400):
                if dd.get_job(jid).get("download_url"):
                    break
                time.sleep(0.025)
            self.assertEqual(dd.read_text(jid, "notes/held.txt"), "written by the SDK\n")


class _LosesFirstAnswer(httpx.BaseTransport):
    """Sends every request; loses the answer of the first POST, as a
    connection reset after the server acted would."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.posts: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        resp = self.inner.handle_request(request)
        if request.method == "POST":
            self.posts.append(request.headers["Idempotency-Key"])
            if len(self.posts) == 1:
                resp.read()
                resp.close()
                raise httpx.ReadError("connection reset by peer", request=request)
        return resp

    def close(self) -> None:
        self.inner.close()


class _CutsFirstStream(httpx.BaseTransport):
    """Passes the first event of the first event stream, then resets it."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.last_ids: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        resp = self.inner.handle_request(request)
        if request.url.params.get("stream") != "true":
            return resp
        self.last_ids.append(request.headers.get("Last-Event-ID"))
        if len(self.last_ids) > 1:
            return resp
        body = resp.read()
        resp.close()
        first = body[: body.index(b"\n\n", body.index(b"id:")) + 2]

        class Cut(httpx.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                yield first
                raise httpx.ReadError("connection reset by peer", request=request)

        return httpx.Response(resp.status_code, headers={"Content-Type": resp.headers["content-type"]}, stream=Cut())

    def close(self) -> None:
        self.inner.close()


class _Down(httpx.BaseTransport):
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)


@unittest.skipUnless(URL, "DRYDOCK_URL is not set")
class Scheduling(unittest.TestCase):
    def setUp(self) -> None:
        self.dd = drydock.Client(URL, TOKEN)
        self.addCleanup(self.dd.close)

    def test_the_same_key_returns_the_first_job_and_refuses_another_body(self) -> None:
        key = f"py-key-{uuid.uuid4()}"
        a = self.dd.schedule({"task": quick("idem")}, idempotency_key=key)
        b = self.dd.schedule({"task": quick("idem")}, idempotency_key=key)
        self.assertEqual(a["job_id"], b["job_id"])
        with self.assertRaises(drydock.ApiError) as cm:
            self.dd.schedule({"task": quick("another")}, idempotency_key=key)
        self.assertEqual((cm.exception.status, cm.exception.code), (422, "idempotency_key_reused"))
        self.dd.wait(a["job_id"])

    def test_a_lost_answer_is_retried_under_the_same_key_and_creates_one_job(self) -> None:
        t = _LosesFirstAnswer()
        tag = f"py-lossy-{uuid.uuid4()}"
        with drydock.Client(URL, TOKEN, transport=t, backoff_min=0.005, backoff_max=0.01) as lossy:
            j = lossy.schedule(task=quick(tag))
        self.assertEqual(len(t.posts), 2)
        self.assertEqual(len(set(t.posts)), 1)
        mine = [x["job_id"] for x in self.dd.all_jobs(limit=2) if x.get("task", "").endswith(tag)]
        self.assertEqual(mine, [j["job_id"]])
        self.dd.wait(j["job_id"])

    def test_an_answer_cut_mid_way_is_retried_under_the_same_key_and_creates_one_job(self) -> None:
        class CutsFirstBody(httpx.BaseTransport):
            def __init__(self) -> None:
                self.inner = httpx.HTTPTransport()
                self.posts = 0

            def handle_request(self, request: httpx.Request) -> httpx.Response:
                resp = self.inner.handle_request(request)
                if request.method != "POST":
                    return resp
                self.posts += 1
                if self.posts > 1:
                    return resp
                head = resp.read()[:20]
                resp.close()

                class Cut(httpx.SyncByteStream):
                    def __iter__(self) -> Iterator[bytes]:
                        yield head
                        raise httpx.ReadError("connection reset by peer", request=request)

                return httpx.Response(resp.status_code, headers={"Content-Type": "application/json"}, stream=Cut())

            def close(self) -> None:
                self.inner.close()

        t = CutsFirstBody()
        tag = f"py-cut-{uuid.uuid4()}"
        with drydock.Client(URL, TOKEN, transport=t, backoff_min=0.005, backoff_max=0.01) as cutting:
            j = cutting.schedule(task=quick(tag))
        self.assertEqual(t.posts, 2)
        mine = [x["job_id"] for x in self.dd.all_jobs(limit=50) if x.get("task", "").endswith(tag)]
        self.assertEqual(mine, [j["job_id"]])
        self.dd.wait(j["job_id"])

    def test_an_unknown_outcome_is_a_schedule_error_naming_the_key(self) -> None:
        with drydock.Client(URL, TOKEN, transport=_Down(), retries=2, backoff_min=0.001, backoff_max=0.002) as down:
            with self.assertRaises(drydock.ScheduleError) as cm:
                down.schedule(task=quick("never"), idempotency_key="py-unknown")
        self.assertEqual(cm.exception.key, "py-unknown")
        self.assertEqual(cm.exception.attempts, 3)
        self.assertIsInstance(cm.exception.__cause__, drydock.ConnectError)

    def test_wait_polls_when_a_proxy_does_not_pass_the_event_stream_through(self) -> None:
        class Buffering(httpx.BaseTransport):
            def __init__(self) -> None:
                self.inner = httpx.HTTPTransport()

            def handle_request(self, request: httpx.Request) -> httpx.Response:
                if request.url.params.get("stream") == "true":
                    return httpx.Response(200, json={"events": []})
                return self.inner.handle_request(request)

            def close(self) -> None:
                self.inner.close()

        with drydock.Client(URL, TOKEN, transport=Buffering()) as dd:
            j = dd.schedule(task=quick("polled"))
            self.assertEqual(dd.wait(j["job_id"])["status"], "complete")

    def test_a_refused_request_carries_the_api_error(self) -> None:
        with self.assertRaises(drydock.ApiError) as cm:
            self.dd.schedule(task="")
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid"))
        self.assertIn("task", cm.exception.message)
        with self.assertRaises(drydock.DrydockError):
            self.dd.schedule(task=quick("x"), idempotency_key="bad\nkey")

    def test_an_uploaded_workspace_is_where_the_agent_starts(self) -> None:
        j = self.dd.schedule(task=quick("upload"), workspace=os.environ["DRYDOCK_SDK_UPLOAD"])
        self.assertGreater(j["input_size"], 0)
        self.dd.wait(j["job_id"])
        self.assertEqual(self.dd.read_text(j["job_id"], "hello.txt"), "hello from an upload\n")

    def test_the_seed_compatible_routes_schedule_too(self) -> None:
        for op in ("schedule", "submit"):
            j = self.dd.schedule(task=quick(op), operation=op)  # type: ignore[arg-type]
            self.dd.wait(j["job_id"])


@unittest.skipUnless(URL, "DRYDOCK_URL is not set")
class TheRest(unittest.TestCase):
    def setUp(self) -> None:
        self.dd = drydock.Client(URL, TOKEN)
        self.addCleanup(self.dd.close)

    def test_jobs_list_in_pages(self) -> None:
        self.dd.wait(self.dd.schedule(task=quick("a"))["job_id"])
        self.dd.wait(self.dd.schedule(task=quick("b"))["job_id"])
        first = self.dd.list_jobs(limit=1)
        self.assertEqual(len(first["jobs"]), 1)
        second = self.dd.list_jobs(limit=1, cursor=first["next_cursor"])
        self.assertNotEqual(second["jobs"][0]["job_id"], first["jobs"][0]["job_id"])
        done = self.dd.list_jobs(status=["complete"], limit=500)
        self.assertTrue(all(j["status"] == "complete" for j in done["jobs"]))
        with self.assertRaises(drydock.ApiError) as cm:
            self.dd.list_jobs(status=["sleeping"])
        self.assertEqual(cm.exception.status, 400)

    def test_jobs_list_by_metadata(self) -> None:
        tag = f"md-{time.time_ns()}"
        a = self.dd.schedule(task=quick("meta a"), metadata={"suite": tag, "task": "a"})
        self.dd.schedule(task=quick("meta b"), metadata={"suite": tag, "task": "b"})
        self.assertEqual(len(self.dd.list_jobs(metadata={"suite": tag})["jobs"]), 2)
        one = self.dd.list_jobs(metadata={"suite": tag, "task": "a"})
        self.assertEqual([j["job_id"] for j in one["jobs"]], [a["job_id"]])
        self.assertEqual(len(list(self.dd.all_jobs(metadata={"suite": tag}, limit=1))), 2)

    def test_an_unknown_job_is_not_found(self) -> None:
        with self.assertRaises(drydock.ApiError) as cm:
            self.dd.get_job("01a2b3c4-0000-7000-8000-000000000000")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))
        self.assertTrue(cm.exception.message)
        with self.assertRaises(drydock.DrydockError):
            self.dd.get_job(" ")

    def test_health_readiness_metrics_and_the_document(self) -> None:
        self.dd.healthz()
        self.dd.readyz()
        self.assertRegex(self.dd.metrics(), r"(?m)^# (HELP|TYPE) ")
        self.assertEqual(self.dd.openapi()["openapi"], "3.1.0")

    def test_page_and_proxy_addresses(self) -> None:
        base = self.dd.base_url
        self.assertEqual(self.dd.url("webJobs"), base + "/")
        self.assertEqual(self.dd.url("webJob", {"id": "a b"}), base + "/jobs/a%20b")
        self.assertEqual(self.dd.url("jupyterGet", {"id": "j", "path": "api/kernels"}), base + "/jobs/j/jupyter/api/kernels")

    def test_every_request_carries_the_token_and_the_sdks_user_agent_and_follows_no_redirect(self) -> None:
        seen: list[httpx.Request] = []

        def answer(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(302, headers={"Location": "http://elsewhere.example/steal"})

        with drydock.Client(URL, "ddk_secret", transport=httpx.MockTransport(answer)) as dd:
            with self.assertRaises(drydock.ApiError) as cm:
                dd.get_job("j")
        self.assertEqual(cm.exception.status, 302)
        self.assertEqual(len(seen), 1)
        self.assertEqual(seen[0].headers["Authorization"], "Bearer ddk_secret")
        self.assertEqual(seen[0].headers["User-Agent"], "drydock-python-sdk")

    def test_a_request_without_the_token_is_unauthorized(self) -> None:
        with drydock.Client(URL) as anon:
            with self.assertRaises(drydock.ApiError) as cm:
                anon.list_jobs()
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))

    def test_of_a_huge_error_answer_only_the_first_64_kib_are_read(self) -> None:
        pulled = 0

        class Huge(httpx.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                nonlocal pulled
                chunk = b"A" * (64 << 10)
                while pulled < 256 << 20:
                    pulled += len(chunk)
                    yield chunk

        class Hostile(httpx.BaseTransport):
            def handle_request(self, request: httpx.Request) -> httpx.Response:
                return httpx.Response(502, headers={"Content-Type": "text/html"}, stream=Huge())

        with drydock.Client(URL, TOKEN, transport=Hostile()) as dd:
            with self.assertRaises(drydock.ApiError) as cm:
                dd.get_job("x")
        self.assertEqual((cm.exception.status, cm.exception.code), (502, "unavailable"))
        self.assertLess(len(cm.exception.message), 1000)
        self.assertLessEqual(pulled, 1 << 20)

    def test_a_diff_larger_than_the_server_ever_sends_is_refused(self) -> None:
        class Huge(httpx.BaseTransport):
            def handle_request(self, request: httpx.Request) -> httpx.Response:
                return httpx.Response(200, headers={"Content-Type": "text/x-diff"}, content=b"+" * (10 << 20))

        with drydock.Client(URL, TOKEN, transport=Huge()) as dd:
            with self.assertRaisesRegex(drydock.DrydockError, "larger than"):
                dd.diff("x")

    def test_a_page_that_is_not_the_apis_is_described_in_one_safe_line(self) -> None:
        def page(status: int) -> httpx.MockTransport:
            return httpx.MockTransport(lambda request: httpx.Response(
                status, headers={"Content-Type": "text/html"}, content="<html>\n<title>Welcome</title>\x1b[2J\u202e</html>".encode()))

        with drydock.Client(URL, TOKEN, transport=page(200)) as dd:
            with self.assertRaisesRegex(drydock.DrydockError, r"is this a Drydock server\?") as cm:
                dd.get_job("x")
        self.assertNotIsInstance(cm.exception, drydock.ApiError)
        self.assertIn("\\u001b[2J\\u202e", str(cm.exception))
        self.assertNotRegex(str(cm.exception), "[\x1b\u202e\n]")
        with drydock.Client(URL, TOKEN, transport=page(404)) as dd:
            with self.assertRaises(drydock.ApiError) as cm2:
                dd.get_job("x")
        self.assertEqual((cm2.exception.status, cm2.exception.code), (404, "not_found"))
        self.assertIn("answered 404", cm2.exception.message)
        self.assertNotIn("\x1b", cm2.exception.message)

    def test_a_server_that_is_not_there(self) -> None:
        with drydock.Client("http://127.0.0.1:9") as gone:
            with self.assertRaises(drydock.ConnectError):
                gone.get_job("x")
        with self.assertRaises(drydock.DrydockError):
            drydock.Client("ftp://example")


@unittest.skipUnless(URL, "DRYDOCK_URL is not set")
class Async(unittest.IsolatedAsyncioTestCase):
    async def test_the_async_client_covers_a_job_from_schedule_to_download(self) -> None:
        async with drydock.AsyncClient(URL, TOKEN) as dd:
            j = await dd.schedule(task=quick("async"))
            done = await dd.wait(j["job_id"])
            self.assertEqual(done["status"], "complete")
            seqs = [e["seq"] async for e in dd.stream_events(j["job_id"])]
            self.assertEqual(seqs, sorted(set(seqs)))
            self.assertEqual([e["seq"] async for e in dd.stream_events(j["job_id"], after=seqs[1])], seqs[2:])
            self.assertEqual((await dd.download(j["job_id"]))[:2], b"\x1f\x8b")
            self.assertIn("SUMMARY.md", [e["name"] for e in (await dd.list_files(j["job_id"]))["entries"]])
            self.assertTrue(await dd.read_text(j["job_id"], "SUMMARY.md"))
            self.assertIn("SUMMARY.md", (await dd.diff(j["job_id"])).patch)
            r = await dd.send_message(j["job_id"], quick("async follow-up"))
            assert r.follow_up is not None
            await dd.wait(r.follow_up["job_id"])
            ids = [x["job_id"] async for x in dd.all_jobs(limit=3)]
            self.assertIn(j["job_id"], ids)
            with self.assertRaises(drydock.ApiError) as cm:
                await dd.get_job("01a2b3c4-0000-7000-8000-000000000000")
            self.assertEqual(cm.exception.status, 404)

    async def test_the_async_client_steers_and_retries(self) -> None:
        async with drydock.AsyncClient(URL, TOKEN) as dd:
            j = await dd.schedule(task=hanging("async"), workspace=os.environ["DRYDOCK_SDK_UPLOAD"])
            jid = j["job_id"]
            # A step taken: the uploaded workspace is unpacked before the
            # agent starts, while "running" may come before that.
            for _ in range(400):
                if (await dd.get_job(jid)).get("steps", 0) >= 1:
                    break
                await asyncio.sleep(0.025)
            self.assertEqual(await dd.read_text(jid, "hello.txt"), "hello from an upload\n")
            self.assertEqual((await dd.send_message(jid, "hi")).event["type"], "user_message")  # type: ignore[index]
            self.assertTrue((await dd.pause(jid))["paused"])
            await dd.resume(jid)
            await dd.set_egress(jid, [])
            await dd.cancel(jid)
            self.assertEqual((await dd.wait(jid))["status"], "cancelled")

        class Down(httpx.AsyncBaseTransport):
            async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
                raise httpx.ConnectError("connection refused", request=request)

        async with drydock.AsyncClient(URL, TOKEN, transport=Down(), retries=1, backoff_min=0.001, backoff_max=0.002) as down:
            with self.assertRaises(drydock.ScheduleError) as cm:
                await down.schedule(task=quick("never"))
            self.assertEqual(cm.exception.attempts, 2)


    async def test_the_async_client_runs_commands_and_writes_files_in_a_held_sandbox(self) -> None:
        async with drydock.AsyncClient(URL, TOKEN) as dd:
            jid = (await dd.schedule({"agent": "none"}))["job_id"]
            for _ in range(400):
                if held_ready((await dd.events(jid))["events"]):
                    break
                await asyncio.sleep(0.025)
            w = await dd.write_file(jid, "a/b.txt", b"async\n")
            self.assertEqual(w["path"], "a/b.txt")
            r = await dd.run_command(jid, "cat a/b.txt; echo err >&2", timeout="30s")
            self.assertEqual((r["exit_code"], r["output"]), (0, "async\nerr\n"))
            await dd.cancel(jid)
            self.assertEqual((await dd.wait(jid))["status"], "cancelled")

if __name__ == "__main__":
    unittest.main()
