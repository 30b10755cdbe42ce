"""HTTP plumbing: msgpack bodies, error mapping, retries (the connections are in _http)."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import random
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote, urlencode

import ormsgpack
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_before_delay,
)
from tenacity.wait import wait_base

from saver_client._http import AsyncPool, ConnectionFailed, Reply, SyncPool, Timeout
from saver_client.errors import (
    BadResponseError,
    SaverConnectionError,
    UnavailableError,
    error_from_response,
)

logger = logging.getLogger("saver_client")

MSGPACK = "application/msgpack"
REQUEST_ID_HEADER = "X-Request-ID"


@dataclass(frozen=True)
class RetryPolicy:
    """How failed requests are retried.

    Only connection failures and 503 `unavailable` are retried. Every operation
    of the protocol is idempotent (puts upsert, writes are keyed by task and
    index, deletes are absolute), so a request that may or may not have reached
    the service can always be sent again. A conditional put (`expected_head`)
    sent again after it was stored is refused, its own checkpoint being the
    head by then; `HTTPSaver.put` reads the checkpoint back and succeeds.
    """

    max_attempts: int = 6
    """Total tries per request, the first included."""
    max_delay: float = 30.0
    """Seconds after the first try past which no new try is started."""
    backoff: float = 0.1
    """Scale of the randomised exponential backoff, in seconds."""
    max_backoff: float = 5.0
    """Cap of one backoff sleep, in seconds (a server's Retry-After may exceed it)."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.max_delay < 0 or self.backoff < 0 or self.max_backoff < 0:
            raise ValueError("retry delays must not be negative")


def _pause(policy: RetryPolicy, exc: BaseException | None, attempt: int) -> float:
    """The pause after failed try `attempt` (1 the first): as the server asks
    (Retry-After), else randomised exponential backoff with full jitter, which
    keeps many clients that failed together from retrying together."""
    if isinstance(exc, UnavailableError) and exc.retry_after is not None:
        # Honour the server's hint, plus a little jitter so that clients it
        # throttled together do not come back in the same millisecond.
        return exc.retry_after + random.uniform(0, policy.backoff)
    return random.uniform(0, min(policy.max_backoff, policy.backoff * 2.0 ** min(attempt - 1, 60)))


def _warn_retry(attempt: int, exc: BaseException | None, sleep: float) -> None:
    logger.warning("saver request failed (attempt %d): %s; retrying in %.2fs", attempt, exc, sleep)


class _WaitRetryAfter(wait_base):
    """Tenacity's wait for the tries after the first, which runs outside it."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy

    def __call__(self, retry_state: RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        return _pause(self._policy, exc, retry_state.attempt_number + 1)


def _log_retry(retry_state: RetryCallState) -> None:
    exc = retry_state.outcome.exception() if retry_state.outcome else None
    sleep = retry_state.next_action.sleep if retry_state.next_action else 0.0
    _warn_retry(retry_state.attempt_number + 1, exc, sleep)  # the first try is made before tenacity's


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _decode_body(response: Reply) -> Any:
    if not response.content:
        return None
    ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == MSGPACK:
        return ormsgpack.unpackb(response.content)
    if ctype == "application/json" or ctype.endswith("+json"):
        return json.loads(response.content)
    raise ValueError(f"unexpected content type {ctype or 'none'!r}")


def _raise_for_error(response: Reply, request_id: str) -> None:
    if response.is_success:
        return
    rid = response.headers.get(REQUEST_ID_HEADER.lower()) or request_id
    code: str | None = None
    message = response.reason or "error"
    try:
        body = _decode_body(response)
    except Exception:  # a proxy's HTML page, say: keep its start for the message
        body = None
        text = response.content.decode(errors="replace").strip()
        if text:
            message = text[:200]
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        err = body["error"]
        code = str(err.get("code") or "") or None
        message = str(err.get("message") or message)
    raise error_from_response(
        response.status,
        code,
        message,
        request_id=rid,
        retry_after=parse_retry_after(response.headers.get("retry-after")),
    )


def _parse_success(response: Reply, request_id: str) -> Any:
    _raise_for_error(response, request_id)
    try:
        return _decode_body(response)
    except Exception as exc:
        raise BadResponseError(
            "bad_response",
            f"could not decode the response body: {exc}",
            status=response.status,
            request_id=response.headers.get(REQUEST_ID_HEADER.lower()) or request_id,
        ) from exc


_RETRYABLE = (SaverConnectionError, UnavailableError)


class Transport:
    """The HTTP side of a saver, shared by the saver and its shallow copies.

    Sync requests go on kept-alive libcurl handles from a shared pool; each event
    loop gets its own aiohttp session (see _http). A request is tried once outside
    the retry machinery, which only a retryable failure enters: most requests
    succeed at once, and building the retry state for each cost as much as
    the rest of the request's bookkeeping.
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        timeout: Timeout,
        retry: RetryPolicy,
    ) -> None:
        self.base_url = base_url
        self._headers = {"Accept": MSGPACK, **headers}
        self.retry = retry
        self._sync = SyncPool(base_url, timeout)
        self._async = AsyncPool(base_url, timeout)

    @property
    def async_sessions(self) -> int:
        """Event loops with a live async session (for tests)."""
        return len(self._async.sessions)

    def close(self) -> None:
        """Close the sync connections and forget async sessions.

        Async sessions need their own loop to close; each closes itself when
        its loop shuts down (asyncio.run's end), or on `aclose()` in that loop.
        """
        self._sync.close()
        self._async.forget_all()

    async def aclose(self) -> None:
        """Close the running loop's async session and the sync connections."""
        await self._async.aclose()
        self._sync.close()

    # -- requests ----------------------------------------------------------

    def _retrying_kwargs(self, started: float) -> dict[str, Any]:
        """Tenacity's arguments for the tries after a failed first one."""
        policy = self.retry
        return {
            "retry": retry_if_exception_type(_RETRYABLE),
            "stop": stop_after_attempt(policy.max_attempts - 1)
            | stop_before_delay(max(0.0, policy.max_delay - (time.monotonic() - started))),
            "wait": _WaitRetryAfter(policy),
            "before_sleep": _log_retry,
            "reraise": True,
        }

    def _second_try(self, exc: BaseException, started: float) -> float:
        """The pause before the second try of a call whose first failed with
        a retryable `exc`; re-raises `exc` when the policy allows no retry
        or the pause would run past its deadline. The first try runs outside
        tenacity: a call that succeeds (nearly all) pays for no retry state.
        """
        if self.retry.max_attempts <= 1 or self.retry.max_delay <= 0:
            raise exc
        wait = _pause(self.retry, exc, 1)
        if time.monotonic() - started + wait > self.retry.max_delay:
            raise exc
        _warn_retry(1, exc, wait)
        return wait

    def _prepare(
        self, path: str, body: Any, params: Mapping[str, str] | None
    ) -> tuple[str, bytes | None, dict[str, str], str]:
        # One id for every try of a logical operation, so that the service's
        # log shows retries of the same call together.
        # Not uuid.uuid4: tests patch it to make the ids a graph assigns
        # reproducible, and a request of ours would shift them.
        request_id = secrets.token_hex(16)
        headers = {**self._headers, REQUEST_ID_HEADER: request_id}
        content: bytes | None = None
        if body is not None:
            content = ormsgpack.packb(body)
            headers["Content-Type"] = MSGPACK
        target = path + ("?" + urlencode(params, quote_via=quote) if params else "")
        return target, content, headers, request_id

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        """Send a request, retrying transient failures; return the decoded body."""
        target, content, headers, request_id = self._prepare(path, body, params)

        def attempt() -> Any:
            start = time.monotonic()
            try:
                reply = self._sync.send(method, target, content, headers)
            except ConnectionFailed as exc:
                raise SaverConnectionError("connection_error", str(exc), request_id=request_id) from exc
            _log_reply(method, path, reply.status, start, request_id)
            return _parse_success(reply, request_id)

        started = time.monotonic()
        try:
            return attempt()
        except _RETRYABLE as exc:
            wait = self._second_try(exc, started)
        time.sleep(wait)
        for try_ in Retrying(**self._retrying_kwargs(started)):
            with try_:
                return attempt()
        raise AssertionError("unreachable: tenacity reraises the last error")

    async def arequest(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        """Async twin of `request`, on the running loop's session."""
        target, content, headers, request_id = self._prepare(path, body, params)

        async def attempt() -> Any:
            start = time.monotonic()
            try:
                reply = await self._async.send(method, target, content, headers)
            except ConnectionFailed as exc:
                raise SaverConnectionError("connection_error", str(exc), request_id=request_id) from exc
            _log_reply(method, path, reply.status, start, request_id)
            return _parse_success(reply, request_id)

        started = time.monotonic()
        try:
            return await attempt()
        except _RETRYABLE as exc:
            wait = self._second_try(exc, started)
        await asyncio.sleep(wait)
        async for try_ in AsyncRetrying(**self._retrying_kwargs(started)):
            with try_:
                return await attempt()
        raise AssertionError("unreachable: tenacity reraises the last error")


def _log_reply(method: str, path: str, status: int, start: float, request_id: str) -> None:
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s %s -> %d in %.1fms (request %s)", method, path, status,
                     (time.monotonic() - start) * 1000, request_id)
