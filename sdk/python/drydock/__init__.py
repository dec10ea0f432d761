"""Drydock's Python SDK: schedule LLM coding agents in isolated sandboxes,
follow their events, steer them, and fetch their workspaces.

    import drydock

    with drydock.Client("http://127.0.0.1:8080", token="ddk_...") as dd:
        job = dd.schedule(task="Write a CLI todo app in Python")
        print(dd.wait(job["job_id"])["summary"])

AsyncClient has the same methods for asyncio. Answers are the API's JSON as
dicts, typed by the TypedDicts of drydock.types (generated from the API's
OpenAPI document). Errors: DrydockError, and below it ApiError (status,
code, message), ConnectError and ScheduleError (key, attempts).
"""

from . import _schema as types
from ._common import DEFAULT_RETRIES, TERMINAL, Diff, MessageResult, is_terminal
from ._operations import OPERATIONS, Operation
from .aio import AsyncClient
from .client import Client
from .errors import ApiError, ConnectError, DrydockError, ScheduleError

__all__ = [
    "DEFAULT_RETRIES",
    "OPERATIONS",
    "TERMINAL",
    "ApiError",
    "AsyncClient",
    "Client",
    "ConnectError",
    "Diff",
    "DrydockError",
    "MessageResult",
    "Operation",
    "ScheduleError",
    "is_terminal",
    "types",
]
