"""Errors raised by the saver client.

Every failure surfaces as a `SaverError` carrying the service's error code, its
message, the HTTP status and the request id (the one to quote when reading the
service's logs). Subclasses let callers catch one kind without parsing codes.
"""

from __future__ import annotations

__all__ = [
    "BadResponseError",
    "ConflictError",
    "GoneError",
    "IdempotencyError",
    "IdempotencyInProgress",
    "IdempotentCallFailed",
    "InternalServerError",
    "InvalidRequestError",
    "NoRouteError",
    "NotFoundError",
    "SaverConnectionError",
    "SaverError",
    "TooLargeError",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "error_from_response",
]


class SaverError(Exception):
    """A request to the saver service failed."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.status = status
        self.request_id = request_id
        super().__init__(self._describe())

    def _describe(self) -> str:
        parts = [f"{self.code}: {self.message}"]
        if self.status is not None:
            parts.append(f"status={self.status}")
        if self.request_id:
            parts.append(f"request_id={self.request_id}")
        return " ".join(parts)

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only constructor arguments would otherwise be lost when the
        # error crosses a process boundary (e.g. multiprocessing, pickled logs).
        return (
            _rebuild,
            (type(self), self.code, self.message, self.status, self.request_id),
        )


def _rebuild(
    cls: type[SaverError],
    code: str,
    message: str,
    status: int | None,
    request_id: str | None,
) -> SaverError:
    return cls(code, message, status=status, request_id=request_id)


class InvalidRequestError(SaverError):
    """400 `invalid`: the request was malformed or a field was bad."""


class UnauthorizedError(SaverError):
    """401 `unauthorized`: no valid credentials."""


class NotFoundError(SaverError):
    """404 `not_found`: the checkpoint or thread does not exist."""


class NoRouteError(SaverError):
    """404/405 `no_route`: the URL or method is unknown (a wrong base URL, or an older service)."""


class ConflictError(SaverError):
    """409 `conflict`: a condition on stored state did not hold."""


class GoneError(SaverError):
    """410 `gone`: the checkpoint written to was deleted, and nothing was stored.

    A late put whose parent, or put_writes whose checkpoint, a `delete_thread`,
    `delete_for_runs` or prune `delete` removed (LangGraph issue 7206): the
    deleted thread stays deleted. A fresh run on the thread (a config without
    `checkpoint_id`) is stored.
    """


class TooLargeError(SaverError):
    """413 `too_large`: a body or payload is over the service's limit."""


class UnsupportedMediaTypeError(SaverError):
    """415 `unsupported_media_type`: the body was neither msgpack nor JSON."""


class InternalServerError(SaverError):
    """5xx: the service failed; its log has details under the request id."""


class UnavailableError(SaverError):
    """503 `unavailable`: the backend is down or throttling; retried by the client."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.retry_after = retry_after
        super().__init__(code, message, status=status, request_id=request_id)


class SaverConnectionError(SaverError):
    """The service could not be reached or the connection broke mid-request."""


class BadResponseError(SaverError):
    """The service answered with something that does not follow the wire protocol."""


class IdempotencyError(Exception):
    """An idempotent call could not run or return its stored result."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = message
        super().__init__(key, message)

    def __str__(self) -> str:
        return f"{self.message} (idempotency key {self.key!r})"


class IdempotentCallFailed(IdempotencyError):
    """The call under this key failed for good earlier; it is not run again.

    `message` is the failure stored by the attempt that failed, `attempt` the
    number of attempts the ledger granted.
    """

    def __init__(self, key: str, message: str, attempt: int = 0) -> None:
        self.attempt = attempt
        super().__init__(key, message)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.key, self.message, self.attempt))


class IdempotencyInProgress(IdempotencyError):
    """Another caller still holds the key's lease and the wait timed out.

    `lease_expires_at` (epoch seconds) is when that lease ends, if known.
    """

    def __init__(self, key: str, message: str, lease_expires_at: float | None = None) -> None:
        self.lease_expires_at = lease_expires_at
        super().__init__(key, message)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.key, self.message, self.lease_expires_at))


_BY_CODE: dict[str, type[SaverError]] = {
    "invalid": InvalidRequestError,
    "unauthorized": UnauthorizedError,
    "not_found": NotFoundError,
    "no_route": NoRouteError,
    "conflict": ConflictError,
    "gone": GoneError,
    "too_large": TooLargeError,
    "unsupported_media_type": UnsupportedMediaTypeError,
    "unavailable": UnavailableError,
    "internal": InternalServerError,
}

# Used when the body carries no known code (e.g. a proxy's HTML error page).
# 404 deliberately maps to NoRouteError: only an explicit `not_found` from the
# service may be read as "this checkpoint does not exist".
_BY_STATUS: dict[int, type[SaverError]] = {
    400: InvalidRequestError,
    401: UnauthorizedError,
    404: NoRouteError,
    405: NoRouteError,
    409: ConflictError,
    410: GoneError,
    413: TooLargeError,
    415: UnsupportedMediaTypeError,
    503: UnavailableError,
}


def error_from_response(
    status: int,
    code: str | None,
    message: str,
    *,
    request_id: str | None = None,
    retry_after: float | None = None,
) -> SaverError:
    """Build the exception for an error response."""
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status)
    if cls is None:
        cls = InternalServerError if status >= 500 else SaverError
    code = code or f"http_{status}"
    if cls is UnavailableError:
        return UnavailableError(
            code,
            message,
            status=status,
            request_id=request_id,
            retry_after=retry_after,
        )
    return cls(code, message, status=status, request_id=request_id)
