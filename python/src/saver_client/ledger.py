"""The idempotency ledger: a side effect runs once, however often its step runs.

A step claims a key before the side effect. The first claim wins a lease and
runs the call; its result is stored under the key. A step that runs again (a
retry, a resume after a crash) claims the same key, finds the stored result and
returns it instead of acting twice. `HTTPSaver.idempotent` wraps this around a
call in one line; `derive_key` is how a key is derived from the running task
when none is given.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import logging
import math
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, ParamSpec, Protocol, TypeVar, cast, overload

from langchain_core.runnables import RunnableConfig

from saver_client.errors import (
    IdempotencyInProgress,
    IdempotentCallFailed,
    SaverError,
)

__all__ = [
    "Claim",
    "ClaimState",
    "Idempotent",
    "IdempotentCall",
    "StoredFailure",
    "derive_key",
]

logger = logging.getLogger("saver_client")

P = ParamSpec("P")
R = TypeVar("R")

ClaimState = Literal["claimed", "in_progress", "completed", "failed"]

# The service's limits: keys are ids (at most 256 bytes), failure messages at
# most 4096 bytes.
MAX_KEY_BYTES = 256
MAX_MESSAGE_BYTES = 4096

# How long a caller waits for another caller's lease by default, in seconds.
DEFAULT_WAIT_TIMEOUT = 120.0
# Polls of a key held by another caller start this far apart and back off to
# the cap; a poll never sleeps past the holder's lease deadline.
_FIRST_POLL = 0.05
_MAX_POLL = 1.0


@dataclass(frozen=True)
class StoredFailure:
    """A failure stored against a key."""

    message: str
    retryable: bool


@dataclass(frozen=True)
class Claim:
    """What a claim on an idempotency key found.

    - `claimed`: the caller holds the lease (`token`) until `lease_expires_at`
      and must `complete` or `fail` the key; `error` is the previous attempt's
      retryable failure, if any.
    - `in_progress`: another caller holds the lease until `lease_expires_at`.
    - `completed`: the call happened; `result` is what it returned.
    - `failed`: the call failed for good; `error` says why.
    """

    key: str
    state: ClaimState
    attempt: int
    """Claims granted on this key so far, starting at 1."""
    token: str | None = None
    lease_expires_at: float | None = None
    """Epoch seconds, as `time.time()`; None when no lease is held."""
    result: Any = None
    error: StoredFailure | None = None


class Ledger(Protocol):
    """The ledger's calls `Idempotent` makes: what `HTTPSaver` offers.

    Declared here so that this module needs nothing of the saver's.
    """

    def claim(self, key: str, *, lease: float | None = None, ttl: float | None = None) -> Claim: ...

    def complete(self, key: str, token: str, result: Any) -> None: ...

    def fail(self, key: str, token: str, message: str, *, retryable: bool = True) -> None: ...

    async def aclaim(
        self, key: str, *, lease: float | None = None, ttl: float | None = None
    ) -> Claim: ...

    async def acomplete(self, key: str, token: str, result: Any) -> None: ...

    async def afail(
        self, key: str, token: str, message: str, *, retryable: bool = True
    ) -> None: ...


# -- keys derived from the running task ------------------------------------------

# Configurable keys LangGraph sets for a running task (langgraph._internal.
# _constants; the tests check these spellings against the installed version).
CONFIG_KEY_TASK_ID = "__pregel_task_id"
CONFIG_KEY_SCRATCHPAD = "__pregel_scratchpad"
CONFIG_KEY_RUNTIME = "__pregel_runtime"
CONFIG_KEY_CHECKPOINT_MAP = "checkpoint_map"


@dataclass(frozen=True)
class _TaskScope:
    """The running task: what makes a derived key unique and stable across replays."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    attempt: int
    # One object per execution of the task (a new one for each retry or
    # resume), shared by everything the task runs; None if unknown.
    execution: object | None

    def key(self, name: str, index: int) -> str:
        parts = (self.thread_id, self.checkpoint_ns, self.checkpoint_id, self.task_id, name)
        h = hashlib.sha256()
        for part in parts:
            data = part.encode()
            h.update(len(data).to_bytes(8, "big") + data)  # unambiguous framing
        h.update(str(index).encode())
        prefix = f"lg:{h.hexdigest()[:40]}:"
        label = f"#{index}"
        room = MAX_KEY_BYTES - len(prefix) - len(label)
        # The name is only there to be read in logs; the digest covers it whole.
        return prefix + _truncate(name, room) + label


def _task_config(config: RunnableConfig | None) -> RunnableConfig:
    if config is not None:
        return config
    try:
        from langgraph.config import get_config
    except ImportError as exc:  # pragma: no cover - langgraph is what runs nodes
        raise RuntimeError("deriving an idempotency key needs langgraph installed") from exc
    try:
        return get_config()
    except RuntimeError as exc:
        raise RuntimeError(
            "no idempotency key given and no LangGraph task is running: call this "
            "inside a node or @task (on Python 3.10, async code must pass config=), "
            "or pass key="
        ) from exc


def _task_scope(config: RunnableConfig | None) -> _TaskScope:
    conf: Mapping[str, Any] = _task_config(config).get("configurable") or {}
    thread_id = conf.get("thread_id")
    task_id = conf.get(CONFIG_KEY_TASK_ID)
    if thread_id is None or not task_id:
        raise RuntimeError(
            "cannot derive an idempotency key: the running config has no "
            + ("thread_id (compile the graph with a checkpointer)" if thread_id is None else "")
            + (" task id (not inside a node or @task)" if not task_id else "")
            + "; pass key="
        )
    ns = str(conf.get("checkpoint_ns") or "")
    info = getattr(conf.get(CONFIG_KEY_RUNTIME), "execution_info", None)
    checkpoint_id = getattr(info, "checkpoint_id", None)
    attempt = getattr(info, "node_attempt", 1)
    if not checkpoint_id:
        # The checkpoint a task runs from is its graph's entry in the map; the
        # graph's namespace is the task's minus its last "name:task_id" part.
        graph_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
        checkpoint_id = (conf.get(CONFIG_KEY_CHECKPOINT_MAP) or {}).get(graph_ns)
    if not checkpoint_id:
        raise RuntimeError("cannot derive an idempotency key: no checkpoint id in the config")
    return _TaskScope(
        thread_id=str(thread_id),
        checkpoint_ns=ns,
        checkpoint_id=str(checkpoint_id),
        task_id=str(task_id),
        attempt=int(attempt) if isinstance(attempt, int) else 1,
        execution=conf.get(CONFIG_KEY_SCRATCHPAD),
    )


class _CallCounters:
    """Counts the calls of each name within one execution of a task.

    Entries hold their execution object, so an id is never reused while its
    entry lives; the oldest entries go once there are `size` of them.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[Any, tuple[object | None, Counter[str]]] = OrderedDict()

    def next(self, scope: _TaskScope, name: str) -> int:
        ident = (
            (id(scope.execution), scope.attempt)
            if scope.execution is not None
            else (scope.thread_id, scope.checkpoint_ns, scope.checkpoint_id, scope.task_id)
        )
        with self._lock:
            entry = self._entries.get(ident)
            if entry is None or entry[0] is not scope.execution:
                entry = (scope.execution, Counter())
                self._entries[ident] = entry
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
            self._entries.move_to_end(ident)
            entry[1][name] += 1
            return entry[1][name]


_COUNTERS = _CallCounters()


def derive_key(name: str, index: int = 1, *, config: RunnableConfig | None = None) -> str:
    """The idempotency key of the `index`-th call named `name` in the running task.

    Derived from the thread id, the task's checkpoint namespace, the checkpoint
    the task runs from and the task id, all of which LangGraph reproduces when
    the same step runs again from the same checkpoint (a retry, a resume after
    a failure or a crash). Call it inside a node or `@task`, or pass the task's
    `config`. `HTTPSaver.idempotent()` without a key uses this, numbering the
    calls of each name in one execution of the task from 1.
    """
    if index < 1:
        raise ValueError("index counts from 1")
    return _task_scope(config).key(name, index)


def _next_task_key(name: str, config: RunnableConfig | None) -> str:
    scope = _task_scope(config)
    return scope.key(name, _COUNTERS.next(scope, name))


def _truncate(text: str, max_bytes: int) -> str:
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    return data[: max(0, max_bytes)].decode(errors="ignore")


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return _truncate(text, MAX_MESSAGE_BYTES)


def _callable_name(fn: Callable[..., Any]) -> str:
    target = fn
    while isinstance(target, functools.partial):
        target = target.func
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return str(name)


# -- the helper --------------------------------------------------------------------


class IdempotentCall:
    """The context-manager form's handle on one idempotent call.

    `done` is True when the call already happened (its stored result is
    `result`): skip the side effect. Otherwise perform it, passing `key`
    downstream if the API takes an idempotency key, and set `result`; leaving
    the block stores it. An exception leaving the block stores a failure.
    """

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self._result: Any = claim.result

    @property
    def key(self) -> str:
        return self.claim.key

    @property
    def done(self) -> bool:
        return self.claim.state == "completed"

    @property
    def attempt(self) -> int:
        return self.claim.attempt

    @property
    def result(self) -> Any:
        return self._result

    @result.setter
    def result(self, value: Any) -> None:
        if self.done:
            raise RuntimeError(f"key {self.key!r} is already completed; its result is stored")
        self._result = value


class Idempotent:
    """Runs a call once per key: as a decorator, a context manager, sync or async.

    Made by `HTTPSaver.idempotent`; see there.
    """

    def __init__(
        self,
        saver: Ledger,
        key: str | Callable[..., str] | None,
        *,
        name: str | None,
        lease: float | None,
        ttl: float | None,
        timeout: float | None,
        non_retryable: tuple[type[BaseException], ...],
        pass_key: str | None,
        config: RunnableConfig | None,
    ) -> None:
        if isinstance(key, str) and not key:
            raise ValueError("an idempotency key must not be empty")
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must not be negative")
        self._saver = saver
        self._key = key
        self._name = name
        self._lease = lease
        self._ttl = ttl
        self._timeout = timeout
        self._non_retryable = non_retryable
        self._pass_key = pass_key
        self._config = config
        self._active: list[IdempotentCall] = []

    # -- keys, waits and outcomes -------------------------------------------------

    def _resolve_key(self, default_name: str, args: Any = (), kwargs: Any = None) -> str:
        if isinstance(self._key, str):
            return self._key
        if self._key is not None:
            key = self._key(*args, **(kwargs or {}))
            if not isinstance(key, str) or not key:
                raise ValueError(f"the key function returned {key!r}, not a non-empty str")
            return key
        return _next_task_key(self._name or default_name, self._config)

    def _deadline(self) -> float:
        return math.inf if self._timeout is None else time.monotonic() + self._timeout

    @staticmethod
    def _wait(claim: Claim, deadline: float, poll: float) -> float:
        """Seconds to sleep before claiming a key held by someone else again."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise IdempotencyInProgress(
                claim.key,
                f"another caller still holds the lease (attempt {claim.attempt})",
                claim.lease_expires_at,
            )
        wait = poll
        if claim.lease_expires_at is not None:
            until_lease = claim.lease_expires_at - time.time()
            if until_lease > 0:
                # Wake just after the lease ends, when the claim will be granted.
                wait = min(poll, until_lease + 0.005)
        return min(wait, remaining)

    @staticmethod
    def _outcome(claim: Claim) -> Claim:
        if claim.state == "failed":
            message = claim.error.message if claim.error else "failed"
            raise IdempotentCallFailed(claim.key, message, claim.attempt)
        if claim.state not in ("claimed", "completed"):
            raise SaverError("bad_response", f"unexpected claim state {claim.state!r}")
        return claim

    def _retryable(self, exc: BaseException) -> bool:
        if self._non_retryable and isinstance(exc, self._non_retryable):
            return False
        return getattr(exc, "retryable", True) is not False

    def _call_kwargs(self, key: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self._pass_key is None:
            return kwargs
        return {**kwargs, self._pass_key: key}

    # -- sync ---------------------------------------------------------------------

    def _acquire(self, key: str) -> Claim:
        deadline, poll = self._deadline(), _FIRST_POLL
        while True:
            claim = self._saver.claim(key, lease=self._lease, ttl=self._ttl)
            if claim.state != "in_progress":
                return self._outcome(claim)
            time.sleep(self._wait(claim, deadline, poll))
            poll = min(poll * 2, _MAX_POLL)

    def _complete(self, claim: Claim, result: Any) -> None:
        assert claim.token is not None
        try:
            self._saver.complete(claim.key, claim.token, result)
        except (SaverError, TypeError, ValueError) as exc:
            _log_unrecorded(claim, exc)

    def _fail(self, claim: Claim, exc: BaseException) -> None:
        assert claim.token is not None
        try:
            self._saver.fail(claim.key, claim.token, _describe(exc), retryable=self._retryable(exc))
        except SaverError as err:
            logger.warning("could not record the failure of key %r: %s", claim.key, err)

    def _run(self, fn: Callable[..., R], args: Any, kwargs: dict[str, Any]) -> R:
        key = self._resolve_key(_callable_name(fn), args, kwargs)
        claim = self._acquire(key)
        if claim.state == "completed":
            return cast(R, claim.result)
        try:
            result = fn(*args, **self._call_kwargs(key, kwargs))
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                raise TypeError(
                    f"{_callable_name(fn)} returned an awaitable: wrap async callables "
                    "in an async function so the async form is used"
                )
        except Exception as exc:
            self._fail(claim, exc)
            raise
        self._complete(claim, result)
        return result

    def __enter__(self) -> IdempotentCall:
        call = IdempotentCall(self._acquire(self._resolve_key("idempotent")))
        self._active.append(call)
        return call

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        call = self._active.pop()
        if call.done:
            return
        if exc is None:
            self._complete(call.claim, call.result)
        elif isinstance(exc, Exception):
            self._fail(call.claim, exc)
        # Anything else (KeyboardInterrupt, cancellation) records nothing: the
        # lease runs out and the next claim is granted.

    # -- async --------------------------------------------------------------------

    async def _aacquire(self, key: str) -> Claim:
        deadline, poll = self._deadline(), _FIRST_POLL
        while True:
            claim = await self._saver.aclaim(key, lease=self._lease, ttl=self._ttl)
            if claim.state != "in_progress":
                return self._outcome(claim)
            await asyncio.sleep(self._wait(claim, deadline, poll))
            poll = min(poll * 2, _MAX_POLL)

    async def _acomplete(self, claim: Claim, result: Any) -> None:
        assert claim.token is not None
        try:
            await self._saver.acomplete(claim.key, claim.token, result)
        except (SaverError, TypeError, ValueError) as exc:
            _log_unrecorded(claim, exc)

    async def _afail(self, claim: Claim, exc: BaseException) -> None:
        assert claim.token is not None
        try:
            await self._saver.afail(
                claim.key, claim.token, _describe(exc), retryable=self._retryable(exc)
            )
        except SaverError as err:
            logger.warning("could not record the failure of key %r: %s", claim.key, err)

    async def _arun(self, fn: Callable[..., Awaitable[R]], args: Any, kwargs: dict[str, Any]) -> R:
        key = self._resolve_key(_callable_name(fn), args, kwargs)
        claim = await self._aacquire(key)
        if claim.state == "completed":
            return cast(R, claim.result)
        try:
            result = await fn(*args, **self._call_kwargs(key, kwargs))
        except Exception as exc:
            await self._afail(claim, exc)
            raise
        await self._acomplete(claim, result)
        return result

    async def __aenter__(self) -> IdempotentCall:
        call = IdempotentCall(await self._aacquire(self._resolve_key("idempotent")))
        self._active.append(call)
        return call

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        call = self._active.pop()
        if call.done:
            return
        if exc is None:
            await self._acomplete(call.claim, call.result)
        elif isinstance(exc, Exception):
            await self._afail(call.claim, exc)

    # -- the decorator ------------------------------------------------------------

    @overload
    def __call__(
        self, fn: Callable[P, Coroutine[Any, Any, R]]
    ) -> Callable[P, Coroutine[Any, Any, R]]: ...

    @overload
    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]: ...

    def __call__(self, fn: Callable[P, Any]) -> Callable[P, Any]:
        """Wrap fn: each call runs it at most once per key (see `HTTPSaver.idempotent`)."""
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
                return await self._arun(fn, args, kwargs)

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
            return self._run(fn, args, kwargs)

        return wrapper


def _log_unrecorded(claim: Claim, exc: BaseException) -> None:
    # The call happened and its result is returned; only the ledger missed it.
    # Until the lease ends the key stays in progress, then a replay would run
    # the call again, which is why the key should also go downstream.
    logger.warning(
        "the call under key %r succeeded but its result was not recorded: %s",
        claim.key,
        exc,
    )
