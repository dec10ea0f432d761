"""Bridge between toolboxd and one Jupyter kernel.

toolboxd is a static Go binary without ZMQ, so it starts this script and
speaks JSON lines with it: requests on stdin, events on stdout. toolboxd owns
the kernel process (start, interrupt by signal, restart); this script only
connects to it with the connection file and relays messages.

It needs only pyzmq (which ipykernel needs anyway).

Requests:  {"op": "connect", "id": N, "timeout": S}
           {"op": "execute", "id": N, "code": "..."}
           {"op": "abort", "id": N}      (stop waiting for execution N)
Events:    {"id": N, "type": "ready"} or {"id": N, "type": "failed", "message": "..."}
           {"id": N, "type": "stream", "name": "stdout", "text": "..."}
           {"id": N, "type": "display" | "result", "data": {mime: value}}
           {"id": N, "type": "clear"}
           {"id": N, "type": "error", "ename": "...", "evalue": "...", "traceback": [...]}
           {"id": N, "type": "done", "status": "ok" | "error" | "aborted", "execution_count": C}
"""

import datetime
import hashlib
import hmac
import json
import os
import queue
import sys
import threading
import time
import uuid

import zmq

out_lock = threading.Lock()

# The MIME types toolboxd uses; others are dropped here so that, say, a
# NaN inside application/json cannot make a line Go refuses to parse.
KEPT_MIME = ("text/plain", "text/html", "image/png", "image/jpeg", "image/svg+xml")


class Session:
    """The signing half of the Jupyter wire protocol (version 5.3), written
    out rather than imported from jupyter_client: it keeps this process
    about 13 MB smaller and quicker to start."""

    def __init__(self, key, scheme):
        self.key = key
        self.digest = getattr(hashlib, scheme.split("-", 1)[1])
        self.session = uuid.uuid4().hex

    def sign(self, parts):
        if not self.key:
            return b""
        h = hmac.new(self.key, digestmod=self.digest)
        for p in parts:
            h.update(p)
        return h.hexdigest().encode()

    def send(self, sock, msg_type, content):
        header = {
            "msg_id": uuid.uuid4().hex,
            "msg_type": msg_type,
            "username": "toolboxd",
            "session": self.session,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "version": "5.3",
        }
        parts = [json.dumps(header).encode(), b"{}", b"{}", json.dumps(content).encode()]
        sock.send_multipart([b"<IDS|MSG>", self.sign(parts)] + parts)
        return header["msg_id"]

    def recv(self, sock):
        """Returns the next message on sock, or None when there is none.
        Messages with a bad signature are dropped."""
        while True:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return None
            try:
                i = frames.index(b"<IDS|MSG>")
            except ValueError:
                continue
            sig, parts = frames[i + 1], frames[i + 2 : i + 6]
            if len(parts) < 4 or not hmac.compare_digest(sig, self.sign(parts)):
                continue
            header, parent, _, content = (json.loads(p) for p in parts)
            return {"msg_type": header.get("msg_type"), "parent_header": parent, "content": content}


def emit(event):
    line = json.dumps(event, separators=(",", ":"))
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Bridge:
    def __init__(self, conn_file):
        with open(conn_file) as f:
            self.conn = json.load(f)
        self.session = Session(self.conn["key"].encode(), self.conn.get("signature_scheme", "hmac-sha256"))
        self.ctx = zmq.Context()
        self.shell = None
        self.iopub = None
        self.aborted = set()
        self.aborted_lock = threading.Lock()

    def url(self, name):
        c = self.conn
        if c.get("transport", "tcp") == "ipc":
            return "ipc://%s-%d" % (c["ip"], c[name])
        return "tcp://%s:%d" % (c["ip"], c[name])

    def open_sockets(self):
        # Fresh sockets after every kernel (re)start: a DEALER keeps requests
        # queued for a dead peer and would deliver them to the new kernel.
        for s in (self.shell, self.iopub):
            if s is not None:
                s.close(linger=0)
        self.shell = self.ctx.socket(zmq.DEALER)
        self.shell.linger = 0
        self.shell.connect(self.url("shell_port"))
        self.iopub = self.ctx.socket(zmq.SUB)
        self.iopub.linger = 0
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        self.iopub.connect(self.url("iopub_port"))
        self.poller = zmq.Poller()
        self.poller.register(self.shell, zmq.POLLIN)
        self.poller.register(self.iopub, zmq.POLLIN)

    def recv_all(self, sock):
        while True:
            msg = self.session.recv(sock)
            if msg is None:
                return
            yield msg

    def is_aborted(self, rid):
        with self.aborted_lock:
            return rid in self.aborted

    def forget(self, rid):
        with self.aborted_lock:
            self.aborted.discard(rid)

    def connect(self, rid, timeout):
        """Waits until the kernel answers on shell and its IOPub messages
        reach us, so that the first execution loses no output to the
        subscription race."""
        self.open_sockets()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_aborted(rid):
                self.forget(rid)
                emit({"id": rid, "type": "failed", "message": "aborted"})
                return
            msg_id = self.session.send(self.shell, "kernel_info_request", {})
            replied = published = extended = False
            resend = time.monotonic() + 0.5
            while time.monotonic() < min(resend, deadline):
                for sock, _ in self.poller.poll(50):
                    for msg in self.recv_all(sock):
                        if msg["parent_header"].get("msg_id") != msg_id:
                            continue
                        if sock is self.shell:
                            replied = True
                        else:
                            published = True
                if replied and published:
                    emit({"id": rid, "type": "ready"})
                    return
                if replied and not extended:
                    # The reply came; allow the IOPub status a moment more,
                    # then ask again: a status published before our
                    # subscription took effect is lost for good.
                    extended = True
                    resend = max(resend, time.monotonic() + 0.1)
        emit({"id": rid, "type": "failed", "message": "kernel did not answer within %gs" % timeout})

    def execute(self, rid, code):
        msg_id = self.session.send(
            self.shell,
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                # One cell at a time reaches the kernel, so there is no
                # queue to abort; with True, ipykernel aborts a request that
                # arrives just after a failed one.
                "stop_on_error": False,
            },
        )
        idle = replied = False
        status, count = "ok", None
        while not (idle and replied):
            if self.is_aborted(rid):
                self.forget(rid)
                emit({"id": rid, "type": "done", "status": "aborted"})
                return
            for sock, _ in self.poller.poll(100):
                for msg in self.recv_all(sock):
                    if msg["parent_header"].get("msg_id") != msg_id:
                        continue
                    kind, content = msg["msg_type"], msg["content"]
                    if sock is self.shell:
                        if kind == "execute_reply":
                            replied = True
                            status = content.get("status", "ok")
                            count = content.get("execution_count")
                        continue
                    if kind == "status":
                        idle = content.get("execution_state") == "idle"
                    elif kind == "stream":
                        emit({"id": rid, "type": "stream", "name": content["name"], "text": content["text"]})
                    elif kind in ("display_data", "update_display_data"):
                        emit({"id": rid, "type": "display", "data": kept(content)})
                    elif kind == "execute_result":
                        emit({"id": rid, "type": "result", "data": kept(content)})
                    elif kind == "error":
                        emit(
                            {
                                "id": rid,
                                "type": "error",
                                "ename": content.get("ename", ""),
                                "evalue": content.get("evalue", ""),
                                "traceback": content.get("traceback", []),
                            }
                        )
                    elif kind == "clear_output":
                        emit({"id": rid, "type": "clear"})
        emit({"id": rid, "type": "done", "status": status, "execution_count": count})


def kept(content):
    data = content.get("data") or {}
    return {m: data[m] for m in KEPT_MIME if isinstance(data.get(m), str)}


def main():
    bridge = Bridge(sys.argv[1])
    work = queue.Queue()

    def worker():
        while True:
            req = work.get()
            rid = req.get("id")
            try:
                if req["op"] == "connect":
                    bridge.connect(rid, float(req.get("timeout", 60)))
                elif req["op"] == "execute":
                    bridge.execute(rid, req["code"])
            except Exception as e:  # report, keep serving
                kind = "failed" if req["op"] == "connect" else "done"
                emit({"id": rid, "type": kind, "status": "aborted", "message": "%s: %s" % (type(e).__name__, e)})

    threading.Thread(target=worker, daemon=True).start()
    emit({"type": "started"})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        if req.get("op") == "abort":
            with bridge.aborted_lock:
                bridge.aborted.add(req.get("id"))
        else:
            work.put(req)
    # toolboxd went away: nothing left to serve.
    os._exit(0)


if __name__ == "__main__":
    main()
