"""The HTTP connections under the transport: libcurl (pycurl) for sync calls,
kept-alive handles lent to one thread at a time, and aiohttp for async calls,
one session per event loop.

Chosen by measurement (a loopback GET against the service, CPU per request in
the calling process): pycurl 32 µs, the standard library's `http.client`
69-76 µs (it parses headers with the email package), urllib3 150 µs, httpx
300-340 µs; async, aiohttp 120 µs, httpcore 500 µs, httpx 780 µs. A chat turn
makes six to seven requests, and with httpx the HTTP stack was a third of the
client's CPU.
"""

from __future__ import annotations

import asyncio
import http
import math
import ssl
import threading
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any
import aiohttp
import pycurl
import yarl


class ConnectionFailed(Exception):
    """The request did not get an answer: refused, reset, timed out, closed."""


@dataclass(frozen=True)
class Reply:
    """An answer as the transport reads it."""

    status: int
    reason: str
    headers: Mapping[str, str]  # lower-case names
    content: bytes

    @property
    def is_success(self) -> bool:
        return 200 <= self.status < 300


@dataclass(frozen=True)
class Timeout:
    """Seconds to wait: for a connection, and for each read of an answer.

    `None` waits without limit. Anything with `connect` and `read`
    attributes (an `httpx.Timeout`, say) converts with `Timeout.of`.
    """

    connect: float | None = 30.0
    read: float | None = 30.0

    @classmethod
    def of(cls, value: Any) -> Timeout:
        if isinstance(value, Timeout):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls(float(value), float(value))
        if value is None:
            return cls(None, None)
        if hasattr(value, "connect") and hasattr(value, "read"):
            return cls(value.connect, value.read)
        raise TypeError(f"timeout must be a number of seconds or a Timeout, not {value!r}")


# libcurl errors of a request that may not have reached the service, or
# whose answer never came: all retryable (every request is idempotent).
_CURL_FAILED = pycurl.error


class SyncPool:
    """Kept-alive libcurl handles, lent to one thread at a time.

    LangGraph runs a graph's saver calls on worker threads it starts for each
    run, so handles are not kept per thread (each run would open new
    connections and leave the old ones open): a call takes an idle handle,
    or makes one, and puts it back when done. libcurl keeps the handle's
    connection alive and, when the service has closed it meanwhile, opens a
    new one by itself. `close` closes the idle handles, and those in use
    when they come back; using the pool again makes new ones.
    """

    # Idle handles kept; more concurrent callers than this make handles that
    # are closed when they come back.
    MAX_IDLE = 32

    def __init__(self, base_url: str, timeout: Timeout) -> None:
        self._base = base_url.rstrip("/")
        self._timeout = timeout
        self._https = base_url.startswith("https:")
        self._lock = threading.Lock()
        self._idle: list[_Handle] = []
        self._generation = 0

    def send(self, method: str, target: str, content: bytes | None, headers: Mapping[str, str]) -> Reply:
        """Send one request on an idle handle and read the answer."""
        with self._lock:
            h = self._idle.pop() if self._idle else None
            generation = self._generation
        if h is None:
            h = _Handle(self._timeout, self._https)
        try:
            reply = h.send(method, self._base + target, content, headers)
        except _CURL_FAILED as exc:
            h.curl.close()  # a handle in an unknown state is not used again
            code, msg = exc.args if len(exc.args) == 2 else (0, str(exc))
            raise ConnectionFailed(f"curl error {code}: {msg}") from exc
        with self._lock:
            if generation == self._generation and len(self._idle) < self.MAX_IDLE:
                self._idle.append(h)
                h = None
        if h is not None:
            h.curl.close()
        return reply

    def close(self) -> None:
        with self._lock:
            self._generation += 1
            idle, self._idle = self._idle, []
        for h in idle:
            h.curl.close()


class _Handle:
    """A libcurl easy handle set up once, with the buffers of its answers."""

    def __init__(self, timeout: Timeout, https: bool) -> None:
        c = pycurl.Curl()
        c.setopt(pycurl.NOSIGNAL, 1)  # timeouts without signals: threads
        c.setopt(pycurl.TCP_NODELAY, 1)
        c.setopt(pycurl.FOLLOWLOCATION, 0)
        if timeout.connect is not None:
            c.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(timeout.connect * 1000)))
        if timeout.read is not None:
            # No byte for `read` seconds fails the request, as a read timeout
            # would; a long answer that keeps coming is not cut.
            c.setopt(pycurl.LOW_SPEED_LIMIT, 1)
            c.setopt(pycurl.LOW_SPEED_TIME, max(1, math.ceil(timeout.read)))
        if https:
            paths = ssl.get_default_verify_paths()  # honours SSL_CERT_FILE / SSL_CERT_DIR
            if paths.cafile:
                c.setopt(pycurl.CAINFO, paths.cafile)
            if paths.capath:
                c.setopt(pycurl.CAPATH, paths.capath)
        self.curl = c
        self._body = bytearray()
        self._headers: dict[str, str] = {}
        c.setopt(pycurl.WRITEFUNCTION, self._body.extend)
        c.setopt(pycurl.HEADERFUNCTION, self._header)
        self._method = ""

    def _header(self, line: bytes) -> None:
        name, sep, value = line.partition(b":")
        if sep:
            self._headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
        elif line.startswith(b"HTTP/"):
            self._headers.clear()  # a new answer (after a 100 Continue, say)

    def send(self, method: str, url: str, content: bytes | None, headers: Mapping[str, str]) -> Reply:
        c = self.curl
        self._body.clear()
        self._headers.clear()
        c.setopt(pycurl.URL, url)
        lines = [f"{k}: {v}" for k, v in headers.items()]
        # "Expect:" off: libcurl would wait for a 100 Continue on large bodies.
        lines.append("Expect:")
        if method == "GET":
            if self._method != "GET":
                c.unsetopt(pycurl.CUSTOMREQUEST)
                c.setopt(pycurl.HTTPGET, 1)
        else:
            c.setopt(pycurl.CUSTOMREQUEST, method)
            c.setopt(pycurl.POSTFIELDS, content or b"")
            if content is None:
                lines.append("Content-Type:")  # not libcurl's form type on an empty body
        self._method = method
        c.setopt(pycurl.HTTPHEADER, lines)
        c.perform()
        status = c.getinfo(pycurl.RESPONSE_CODE)
        return Reply(status, _phrase(status), dict(self._headers), bytes(self._body))


def _phrase(status: int) -> str:
    """The standard reason phrase of a status, as aiohttp reports one: libcurl
    gives the status line's code only."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


class _LoopSession:
    """An aiohttp session bound to one event loop, closed when that loop shuts down.

    asyncio has no "loop closing" callback, but it does finalise every live
    async generator of the loop in `shutdown_asyncgens()`, which `asyncio.run`
    and `asyncio.Runner` call before closing the loop. A generator parked at its
    first `yield` therefore runs its `finally` (closing the session's sockets on
    the right loop) exactly when the loop goes away.
    """

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session
        self._watcher: AsyncGenerator[None, None] | None = None

    async def watch(self, on_close: Callable[[], None]) -> None:
        async def watcher() -> AsyncGenerator[None, None]:
            try:
                yield
            finally:
                on_close()
                await self.session.close()

        # The loop only holds a weak reference to the generator; keep it alive.
        self._watcher = watcher()
        await self._watcher.__anext__()

    async def aclose(self) -> None:
        if self._watcher is not None:
            await self._watcher.aclose()  # runs the finally above
        else:
            await self.session.close()


class AsyncPool:
    """One aiohttp session per event loop: a session is bound to the loop it
    first ran on, so each loop gets its own; those of loops that have since
    closed are dropped."""

    def __init__(self, base_url: str, timeout: Timeout) -> None:
        self._base = base_url.rstrip("/")
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout.connect, sock_read=timeout.read)
        # The same certificate authorities as the sync side (SSL_CERT_FILE...).
        self._ssl: ssl.SSLContext | bool = ssl.create_default_context() if base_url.startswith("https:") else True
        self._lock = threading.Lock()
        self.sessions: dict[asyncio.AbstractEventLoop, _LoopSession] = {}

    async def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self.sessions.get(loop)
            if entry is not None and not entry.session.closed:
                return entry.session
            # Loops that closed without running our cleanup (never shut down
            # properly) can never use their sessions again: drop them.
            for old in [lp for lp in self.sessions if lp.is_closed()]:
                del self.sessions[old]
            entry = _LoopSession(
                aiohttp.ClientSession(
                    timeout=self._timeout,
                    connector=aiohttp.TCPConnector(limit=100, ssl=self._ssl),
                    # As the sync side: no compression asked for (nothing
                    # here would decompress it), no cookies kept.
                    auto_decompress=False,
                    skip_auto_headers=("User-Agent", "Accept-Encoding"),
                    cookie_jar=aiohttp.DummyCookieJar(),
                )
            )
            self.sessions[loop] = entry
        await entry.watch(lambda: self._forget(loop, entry))
        return entry.session

    def _forget(self, loop: asyncio.AbstractEventLoop, entry: _LoopSession) -> None:
        with self._lock:
            if self.sessions.get(loop) is entry:
                del self.sessions[loop]

    async def send(self, method: str, target: str, content: bytes | None, headers: Mapping[str, str]) -> Reply:
        session = await self._session()
        try:
            # encoded=True: the path's escapes (thread ids) go out as we made them.
            url = yarl.URL(self._base + target, encoded=True)
            async with session.request(method, url, data=content, headers=headers) as resp:
                data = await resp.read()
                return Reply(resp.status, resp.reason or "", {k.lower(): v for k, v in resp.headers.items()}, data)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise ConnectionFailed(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from exc

    def forget_all(self) -> None:
        """Forget every loop's session (each closes when its loop shuts down)."""
        with self._lock:
            self.sessions.clear()

    async def aclose(self) -> None:
        """Close the running loop's session."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self.sessions.pop(loop, None)
        if entry is not None:
            await entry.aclose()
