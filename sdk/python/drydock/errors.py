"""The SDK's error model: every failure is a DrydockError; an answer of the
server is an ApiError carrying its status and the API's code and message."""

from __future__ import annotations


class DrydockError(Exception):
    """The base of every error the SDK raises."""


class ApiError(DrydockError):
    """An error answer of the server.

    status is the HTTP status, code the API's error code ("invalid",
    "not_found", "conflict", ...; see docs/API.md) and message its message,
    meant for people. request names the request, as "METHOD /path".
    """

    def __init__(self, status: int, code: str, message: str, request: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.request = request

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed later (a server restarting, a gateway)."""
        return self.code == "unavailable" or self.status in (502, 503, 504)

    def __str__(self) -> str:
        return f"{self.message} ({self.status} {self.code})"


class ConnectError(DrydockError):
    """The server could not be reached at all (refused, DNS, TLS, reset before an answer)."""

    def __init__(self, url: str, cause: BaseException) -> None:
        super().__init__(f"cannot reach the Drydock server at {url}: is `drydock server` running? [{cause!r}]")
        self.url = url


class ScheduleError(DrydockError):
    """A job creation (schedule or follow-up) whose outcome is unknown.

    The server got no request or its answer was lost, on every retry.
    Scheduling again with idempotency_key=err.key is safe: it returns the job
    if the first request created one, and creates it otherwise. The last
    attempt's error is __cause__.
    """

    def __init__(self, key: str, attempts: int, cause: BaseException | None) -> None:
        super().__init__(
            f"schedule: no answer after {attempts} attempt(s) with Idempotency-Key {key}; the job may exist: "
            f"scheduling again with this key returns it instead of creating another: {cause}"
        )
        self.key = key
        self.attempts = attempts
        self.__cause__ = cause
