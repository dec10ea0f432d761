"""Every operation of the API document (api/openapi.json), by operationId.

Each entry gives the method and the path as the document writes them, and
the client methods that send it ("url" marks pages and proxies meant for a
browser or another client: Client.url builds their address and
Client.request sends anything to them; "mcp" is the Model Context Protocol
endpoint, for an MCP client: url("mcp") is its address). The clients build
every request from this table, and sdk/sdk_test.go checks it against the document, so a
route the server gains and the SDK lacks fails the test.
"""

from __future__ import annotations

from typing import NamedTuple


class Operation(NamedTuple):
    method: str
    path: str
    sdk: tuple[str, ...]


OPERATIONS: dict[str, Operation] = {
    "createJob": Operation("POST", "/v1/jobs", ("schedule",)),
    "schedule": Operation("POST", "/schedule", ("schedule",)),
    "submit": Operation("POST", "/submit", ("schedule",)),
    "status": Operation("GET", "/status/{id}", ("status",)),
    "listJobs": Operation("GET", "/v1/jobs", ("list_jobs", "all_jobs")),
    "getJob": Operation("GET", "/v1/jobs/{id}", ("get_job", "wait")),
    "cancelJob": Operation("POST", "/v1/jobs/{id}/cancel", ("cancel",)),
    "setJobEgress": Operation("PUT", "/v1/jobs/{id}/egress", ("set_egress",)),
    "listEvents": Operation("GET", "/v1/jobs/{id}/events", ("events", "stream_events")),
    "downloadTarGz": Operation("GET", "/v1/jobs/{id}/artifact.tar.gz", ("download",)),
    "downloadZip": Operation("GET", "/v1/jobs/{id}/artifact.zip", ("download",)),
    "getDiff": Operation("GET", "/v1/jobs/{id}/diff", ("diff",)),
    "workspaceFile": Operation("GET", "/v1/jobs/{id}/files/{path...}", ("list_files", "read_file", "read_text")),
    "writeFile": Operation("PUT", "/v1/jobs/{id}/files/{path...}", ("write_file",)),
    "runCommand": Operation("POST", "/v1/jobs/{id}/commands", ("run_command",)),
    "sendMessage": Operation("POST", "/v1/jobs/{id}/messages", ("send_message", "follow_up")),
    "pauseJob": Operation("POST", "/v1/jobs/{id}/pause", ("pause",)),
    "resumeJob": Operation("POST", "/v1/jobs/{id}/resume", ("resume",)),
    "exportTrajectory": Operation("GET", "/v1/jobs/{id}/trajectory", ("trajectory",)),
    "desktopLink": Operation("POST", "/v1/jobs/{id}/desktop/link", ("desktop_link",)),
    "jupyterLink": Operation("POST", "/v1/jobs/{id}/jupyter/link", ("jupyter_link",)),
    "healthz": Operation("GET", "/healthz", ("healthz",)),
    "readyz": Operation("GET", "/readyz", ("readyz",)),
    "metrics": Operation("GET", "/metrics", ("metrics",)),
    "openapi": Operation("GET", "/openapi.json", ("openapi",)),
    "mcp": Operation("POST", "/mcp", ("url",)),
    "webJobs": Operation("GET", "/{$}", ("url",)),
    "webJob": Operation("GET", "/jobs/{id}", ("url",)),
    "webEvalRun": Operation("GET", "/evals/{run}", ("url",)),
    "webAsset": Operation("GET", "/ui/{path...}", ("url",)),
    "desktopPage": Operation("GET", "/jobs/{id}/desktop", ("url",)),
    "desktopWebSocket": Operation("GET", "/jobs/{id}/desktop/websockify", ("url",)),
    "jupyterGet": Operation("GET", "/jobs/{id}/jupyter/{path...}", ("url", "request")),
    "jupyterPost": Operation("POST", "/jobs/{id}/jupyter/{path...}", ("url", "request")),
    "jupyterPut": Operation("PUT", "/jobs/{id}/jupyter/{path...}", ("url", "request")),
    "jupyterPatch": Operation("PATCH", "/jobs/{id}/jupyter/{path...}", ("url", "request")),
    "jupyterDelete": Operation("DELETE", "/jobs/{id}/jupyter/{path...}", ("url", "request")),
}
