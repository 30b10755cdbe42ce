"""`HTTPSaver`: a LangGraph checkpoint saver that stores checkpoints in the saver service."""

from __future__ import annotations

import builtins
import logging
import os
import random
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from saver_client import _wire as wire
from saver_client._http import Timeout
from saver_client._transport import RetryPolicy, Transport
from saver_client._version import __version__
from saver_client._wire import SCOPE_KEY as SCOPE_KEY
from saver_client._wire import Call, check_scope
from saver_client._wire import Scope as Scope
from saver_client._wire import Wire as Wire
from saver_client.errors import ConflictError, NotFoundError
from saver_client.ledger import DEFAULT_WAIT_TIMEOUT, Claim, Idempotent
from saver_client.tree import (
    Branch,
    ResumeContext,
    ThreadTree,
    TreeNode,
    branches_from_wire,
    nodes_from_wire,
)

__all__ = ["HTTPSaver"]

logger = logging.getLogger("saver_client")

URL_ENV = "SAVER_URL"
API_KEY_ENV = "SAVER_API_KEY"


class HTTPSaver(BaseCheckpointSaver[str]):
    """A checkpoint saver backed by the saver HTTP service.

    A drop-in replacement for `InMemorySaver`: `graph.compile(checkpointer=HTTPSaver(url))`.
    Values are serialised on this side with `self.serde`, so an injected
    serializer (for example `EncryptedSerializer`) keeps working and the service
    only ever sees opaque bytes.

    Sync methods keep one connection per thread; async methods use one pool per
    event loop. Use it as a context manager, or call `close()` /
    `aclose()`, to release connections.

    Args:
        url: Base URL of the service, e.g. `http://127.0.0.1:8080`. Defaults to
            the `SAVER_URL` environment variable. An https URL is verified
            against the system's certificate authorities, or those of the
            bundle `SSL_CERT_FILE` names.
        serde: Serializer for checkpoints, channel values and writes.
        api_key: Sent as `Authorization: Bearer <api_key>`. Defaults to the
            `SAVER_API_KEY` environment variable.
        headers: Extra headers sent with every request.
        timeout: Seconds to wait for a connection and for each read of an
            answer, or a `Timeout` (or anything with `connect` and `read`
            attributes, such as an `httpx.Timeout`) to give them apart.
        retry: How connection failures and 503 answers are retried.
        scope: Retention of the threads this saver writes: `"session"` (expires
            after the service's session TTL, hours by default) or `"persistent"`.
            `None` takes the service's default. A run can choose per thread
            with `config["configurable"]["saver_scope"]`.
        detect_conflicts: Fail a run whose thread another writer moved under
            it. Each checkpoint an input or loop step puts is then stored only
            if its parent (the checkpoint the run read) is still the newest in
            its namespace; otherwise nothing is stored and `put` raises
            `ConflictError`, so two runs on one thread never fork it silently.
            Forks and `update_state` branch off older checkpoints on purpose
            and are stored unconditionally; a run that starts new input from an
            older `checkpoint_id` is not a fork and fails (fork it with
            `update_state` first). Off by default: LangGraph runs one writer
            per thread and does not need it. Give every writer of a thread the
            same setting: an unconditioned put racing a conditioned one can go
            unseen.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        serde: SerializerProtocol | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | Timeout = 30.0,
        retry: RetryPolicy | None = None,
        scope: Scope | None = None,
        detect_conflicts: bool = False,
    ) -> None:
        super().__init__(serde=serde)
        self.scope = check_scope(scope)
        self.detect_conflicts = bool(detect_conflicts)
        base_url = url or os.environ.get(URL_ENV)
        if not base_url:
            raise ValueError(f"HTTPSaver needs the service URL: pass url= or set {URL_ENV}")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        all_headers = {"User-Agent": f"saver-client/{__version__}"}
        api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        if api_key:
            all_headers["Authorization"] = f"Bearer {api_key}"
        all_headers.update(headers or {})
        self._transport = Transport(
            base_url.rstrip("/"),
            headers=all_headers,
            timeout=Timeout.of(timeout),
            retry=retry or RetryPolicy(),
        )

    @property
    def url(self) -> str:
        """The service's base URL."""
        return self._transport.base_url

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Release connections. The saver reconnects if it is used again."""
        self._transport.close()

    async def aclose(self) -> None:
        """Release connections, closing the running loop's pool cleanly."""
        await self._transport.aclose()

    def __enter__(self) -> HTTPSaver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> HTTPSaver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- versions ----------------------------------------------------------

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Next channel version, computed locally exactly as InMemorySaver does.

        The random suffix keeps two forks of one parent that both reach version
        N+1 from sharing a blob key. Core calls this many times per step on its
        hot path, so it must never touch the network.
        """
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        next_v = current_v + 1
        next_h = random.random()
        return f"{next_v:032}.{next_h:016}"

    # -- sending (the requests come from _wire) -----------------------------

    def _send(self, call: Call) -> Any:
        return self._transport.request(call.method, call.path, body=call.body, params=call.params)

    async def _asend(self, call: Call) -> Any:
        return await self._transport.arequest(
            call.method, call.path, body=call.body, params=call.params
        )

    # -- the LangGraph saver contract ------------------------------------------
    # Async methods are overridden on the class (not delegated to the base)
    # because both the conformance suite and the Agent Server detect
    # capabilities that way.

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by config, or the latest of (thread, ns); None if absent."""
        try:
            found = self._send(wire.get_call(config))
        except NotFoundError:
            return None
        return wire.to_tuple(self.serde, found)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async `get_tuple`."""
        try:
            found = await self._asend(wire.get_call(config))
        except NotFoundError:
            return None
        return wire.to_tuple(self.serde, found)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching the arguments, newest first, fetched page by page."""
        search = wire.Search(config, filter, before, limit)
        while (call := search.next()) is not None:
            for found in search.page(self._send(call)):
                yield wire.to_tuple(self.serde, found)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async `list`."""
        search = wire.Search(config, filter, before, limit)
        while (call := search.next()) is not None:
            for found in search.page(await self._asend(call)):
                yield wire.to_tuple(self.serde, found)

    def _put_request(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Call:
        return wire.put_call(
            self.serde,
            config,
            checkpoint,
            metadata,
            new_versions,
            scope=self.scope,
            detect_conflicts=self.detect_conflicts,
        )

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint and the blobs of its new channel versions.

        With `detect_conflicts`, raises ConflictError when another writer
        moved the thread's head since the run read it; nothing is stored then.
        """
        put = self._put_request(config, checkpoint, metadata, new_versions)
        try:
            return wire.stored_config(self._send(put))
        except ConflictError as exc:
            if not wire.conditioned(put):
                raise
            try:
                found = self._send(wire.landed_call(put))
            except NotFoundError:
                found = None
            return wire.landed_config(found, put, exc, config)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async `put`."""
        put = self._put_request(config, checkpoint, metadata, new_versions)
        try:
            return wire.stored_config(await self._asend(put))
        except ConflictError as exc:
            if not wire.conditioned(put):
                raise
            try:
                found = await self._asend(wire.landed_call(put))
            except NotFoundError:
                found = None
            return wire.landed_config(found, put, exc, config)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes against the checkpoint in config."""
        call = wire.writes_call(self.serde, config, writes, task_id, task_path, scope=self.scope)
        if call is not None:
            self._send(call)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async `put_writes`."""
        call = wire.writes_call(self.serde, config, writes, task_id, task_path, scope=self.scope)
        if call is not None:
            await self._asend(call)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The DeltaChannel histories at the checkpoint in config, in one request.

        Per channel, the writes of the checkpoint's ancestors on its parent
        chain, oldest first, back to the nearest one holding a value of the
        channel (its `seed`), as `BaseCheckpointSaver` defines it; the service
        walks the chain, however deep.
        """
        if not channels:
            return {}
        found = self._send(wire.delta_call(config, channels))
        return wire.to_histories(self.serde, found, channels)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async `get_delta_channel_history`."""
        if not channels:
            return {}
        found = await self._asend(wire.delta_call(config, channels))
        return wire.to_histories(self.serde, found, channels)

    # -- maintenance -----------------------------------------------------------

    def ping(self) -> None:
        """Check that the service is ready and accepts this saver's API key.

        Raises `UnauthorizedError` for a bad key, `UnavailableError` when the
        service's store does not answer, and a connection error when nothing
        listens at the URL.
        """
        for call in wire.ping_calls():
            self._send(call)

    async def aping(self) -> None:
        """Async `ping`."""
        for call in wire.ping_calls():
            await self._asend(call)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of a thread, in all namespaces."""
        self._send(wire.delete_thread_call(thread_id))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async `delete_thread`."""
        await self._asend(wire.delete_thread_call(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata run_id is in run_ids."""
        if (call := wire.delete_for_runs_call(run_ids)) is not None:
            self._send(call)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async `delete_for_runs`."""
        if (call := wire.delete_for_runs_call(run_ids)) is not None:
            await self._asend(call)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread with ids and parent links unchanged.

        Raises NotFoundError when the source has no checkpoint.
        """
        self._send(wire.copy_thread_call(source_thread_id, target_thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async `copy_thread`."""
        await self._asend(wire.copy_thread_call(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only the newest checkpoint per namespace ("keep_latest"), or delete all."""
        if (call := wire.prune_call(thread_ids, strategy)) is not None:
            self._send(call)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async `prune`."""
        if (call := wire.prune_call(thread_ids, strategy)) is not None:
            await self._asend(call)

    def pin(self, thread_id: str, checkpoint_id: str, checkpoint_ns: str = "") -> None:
        """Make a checkpoint, its channel values and its writes never expire."""
        self._send(wire.pin_call(thread_id, checkpoint_id, checkpoint_ns))

    async def apin(self, thread_id: str, checkpoint_id: str, checkpoint_ns: str = "") -> None:
        """Async `pin`."""
        await self._asend(wire.pin_call(thread_id, checkpoint_id, checkpoint_ns))

    # -- checkpoint tree -----------------------------------------------------
    # Not part of BaseCheckpointSaver: new names only, so that capability
    # detection (which looks at overridden base methods) is unaffected.
    # (`builtins.list` because `list` in this class body is the method.)

    def tree(self, thread_id: str) -> ThreadTree:
        """The thread's whole checkpoint tree, every namespace, parents before children.

        Raises NotFoundError when the thread has no checkpoint.
        """
        return ThreadTree.from_wire(self._send(wire.tree_call(thread_id, "")))

    async def atree(self, thread_id: str) -> ThreadTree:
        """Async `tree`."""
        return ThreadTree.from_wire(await self._asend(wire.tree_call(thread_id, "")))

    def path(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> builtins.list[TreeNode]:
        """The nodes from the root down to a checkpoint; to the head without checkpoint_id.

        A subgraph checkpoint's path crosses into the parent graph that ran it.
        """
        call = wire.tree_call(thread_id, "path", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(self._send(call))

    async def apath(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> builtins.list[TreeNode]:
        """Async `path`."""
        call = wire.tree_call(thread_id, "path", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(await self._asend(call))

    def children(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> builtins.list[TreeNode]:
        """A checkpoint's children (the head's without checkpoint_id), oldest first.

        Forks are siblings; subgraph runs under the checkpoint are children too.
        """
        call = wire.tree_call(thread_id, "children", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(self._send(call))

    async def achildren(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> builtins.list[TreeNode]:
        """Async `children`."""
        call = wire.tree_call(thread_id, "children", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(await self._asend(call))

    def leaves(self, thread_id: str) -> builtins.list[TreeNode]:
        """The branch heads of every namespace."""
        return nodes_from_wire(self._send(wire.tree_call(thread_id, "leaves")))

    async def aleaves(self, thread_id: str) -> builtins.list[TreeNode]:
        """Async `leaves`."""
        return nodes_from_wire(await self._asend(wire.tree_call(thread_id, "leaves")))

    def abandoned(self, thread_id: str) -> builtins.list[Branch]:
        """The root graph's branches that are not on the live path, oldest first."""
        return branches_from_wire(self._send(wire.tree_call(thread_id, "abandoned")))

    async def aabandoned(self, thread_id: str) -> builtins.list[Branch]:
        """Async `abandoned`."""
        return branches_from_wire(await self._asend(wire.tree_call(thread_id, "abandoned")))

    def resume_context(self, thread_id: str, *, limit: int | None = None) -> ResumeContext:
        """The live path as prompt text (`.text`, also `str()`) and the tree drawn (`.drawing`).

        With `limit`, the text keeps only the last `limit` steps.
        """
        return ResumeContext.from_wire(self._send(wire.context_call(thread_id, limit)))

    async def aresume_context(self, thread_id: str, *, limit: int | None = None) -> ResumeContext:
        """Async `resume_context`."""
        return ResumeContext.from_wire(await self._asend(wire.context_call(thread_id, limit)))

    # -- idempotency ledger ----------------------------------------------------

    def claim(self, key: str, *, lease: float | None = None, ttl: float | None = None) -> Claim:
        """Claim an idempotency key before a side effect.

        Of any number of concurrent claims, exactly one is granted (`claimed`,
        with a token). Others see `in_progress` (with the lease's end),
        `completed` (with the stored result, decoded with `serde`) or `failed`.
        A retryable failure is never reported: the next claim is granted.

        Args:
            key: The idempotency key, at most 256 bytes.
            lease: Seconds the claim holds before another caller may take over;
                the service's default (a minute) if None.
            ttl: Seconds the key's record is kept after its last change; the
                service's default (a day) if None.
        """
        return wire.to_claim(self.serde, self._send(wire.claim_call(key, lease, ttl)))

    async def aclaim(
        self, key: str, *, lease: float | None = None, ttl: float | None = None
    ) -> Claim:
        """Async `claim`."""
        return wire.to_claim(self.serde, await self._asend(wire.claim_call(key, lease, ttl)))

    def complete(self, key: str, token: str, result: Any) -> None:
        """Store the result of a claimed key (serialised with `serde`).

        Raises ConflictError when the token no longer holds the claim.
        """
        self._send(wire.complete_call(self.serde, key, token, result))

    async def acomplete(self, key: str, token: str, result: Any) -> None:
        """Async `complete`."""
        await self._asend(wire.complete_call(self.serde, key, token, result))

    def fail(self, key: str, token: str, message: str, *, retryable: bool = True) -> None:
        """Store a failure of a claimed key. A retryable one lets the next claim run again.

        Raises ConflictError when the token no longer holds the claim.
        """
        self._send(wire.fail_call(key, token, message, retryable))

    async def afail(self, key: str, token: str, message: str, *, retryable: bool = True) -> None:
        """Async `fail`."""
        await self._asend(wire.fail_call(key, token, message, retryable))

    def idempotent(
        self,
        key: str | Callable[..., str] | None = None,
        *,
        name: str | None = None,
        lease: float | None = None,
        ttl: float | None = None,
        timeout: float | None = DEFAULT_WAIT_TIMEOUT,
        non_retryable: tuple[type[BaseException], ...] = (),
        pass_key: str | None = None,
        config: RunnableConfig | None = None,
    ) -> Idempotent:
        """Run a side effect at most once per key, however often its step runs.

        As a decorator, sync or async::

            charge = saver.idempotent("charge-" + order_id)(charge_card)
            receipt = charge(order)

        or as a context manager (`with` / `async with`)::

            with saver.idempotent("charge-" + order_id) as call:
                if not call.done:
                    call.result = charge_card(order, idempotency_key=call.key)
            receipt = call.result

        The first call claims the key, runs, and stores its result (with
        `serde`); a later call under the same key returns the stored result
        without running. If the call raises, the failure is stored and the
        exception re-raised; the next call runs again, unless the exception is
        one of `non_retryable` (or has `retryable = False`), in which case later
        calls raise IdempotentCallFailed. While another caller holds the key,
        a call waits for its lease (polling, at most until the lease ends) and
        raises IdempotencyInProgress after `timeout` seconds.

        Args:
            key: The key, a function of the call's arguments returning it, or
                None to derive one from the running LangGraph task (see
                `derive_key`): inside a node or `@task` only.
            name: The step-local name in a derived key; default the wrapped
                function's qualified name (the block form: "idempotent"). Calls
                of one name in one task are numbered, so two calls of the same
                function in a step get different keys.
            lease: Seconds a claim holds before another caller may take over.
                Longer than the call can take. Default: the service's (a minute).
            ttl: Seconds the key is remembered. Default: the service's (a day).
            timeout: Seconds to wait for another caller's lease; None: no limit.
            non_retryable: Exception classes that fail the key for good.
            pass_key: Name of a keyword parameter of the wrapped function that
                receives the key, to pass on to a downstream API as that API's
                own idempotency key. Give the parameter a default (e.g.
                `idempotency_key: str | None = None`): callers do not pass it.
            config: The task's config, for deriving keys where
                `langgraph.config.get_config()` cannot find it (async code on
                Python 3.10).
        """
        return Idempotent(
            self,
            key,
            name=name,
            lease=lease,
            ttl=ttl,
            timeout=timeout,
            non_retryable=tuple(non_retryable),
            pass_key=pass_key,
            config=config,
        )
