"""`HTTPSaver`: a LangGraph checkpoint saver that stores checkpoints in the saver service."""

from __future__ import annotations

import base64
import builtins
import datetime as _dt
import enum
import logging
import math
import os
import random
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, cast
from urllib.parse import quote, urlsplit

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from saver_client._http import Timeout
from saver_client._transport import RetryPolicy, Transport
from saver_client._version import __version__
from saver_client.errors import BadResponseError, ConflictError, NotFoundError
from saver_client.ledger import (
    DEFAULT_WAIT_TIMEOUT,
    MAX_MESSAGE_BYTES,
    Claim,
    Idempotent,
    StoredFailure,
)
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

# The blob stored for a channel that has a new version but no value, exactly as
# InMemorySaver stores it; the service skips such blobs when resolving values.
_EMPTY: dict[str, Any] = {"type": "empty", "data": b""}

_PRUNE_STRATEGIES = ("keep_latest", "delete")

Scope = Literal["session", "persistent"]
# The configurable key a run sets to choose its thread's retention scope.
SCOPE_KEY = "saver_scope"

# Metadata sources of the puts that continue the head a run read: LangGraph's
# input and loop steps. Forks and state updates ("fork", "update") branch
# off an older checkpoint on purpose and are never conditioned.
_CONDITIONED_SOURCES = ("input", "loop")


def _check_scope(scope: Any) -> Scope | None:
    if scope not in (None, "session", "persistent"):
        raise ValueError(f"scope must be 'session' or 'persistent', not {scope!r}")
    return cast("Scope | None", scope)

Wire = dict[str, Any]


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
        self.scope = _check_scope(scope)
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

    # -- request building (shared by sync and async) -------------------------

    def _typed(self, value: Any) -> Wire:
        type_, data = self.serde.dumps_typed(value)
        return {"type": type_, "data": data}

    def _untyped(self, typed: Any) -> Any:
        if not isinstance(typed, Mapping):
            raise BadResponseError("bad_response", f"expected a typed value, got {typed!r:.80}")
        data = typed.get("data", b"")
        if isinstance(data, str):  # a JSON response carries bytes as base64
            data = base64.b64decode(data)
        return self.serde.loads_typed((str(typed["type"]), bytes(data)))

    def _put_request(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> tuple[str, Wire]:
        conf = config["configurable"]
        thread_id = str(conf["thread_id"])
        skeleton: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = skeleton.pop("channel_values", None) or {}
        body = {
            "checkpoint_ns": conf.get("checkpoint_ns") or "",
            "checkpoint_id": checkpoint["id"],
            # In put, the config names the parent: the checkpoint this one follows.
            "parent_checkpoint_id": conf.get("checkpoint_id") or "",
            "checkpoint": self._typed(skeleton),
            "metadata": _jsonable(get_serializable_checkpoint_metadata(config, metadata)),
            "channel_versions": {ch: str(v) for ch, v in checkpoint["channel_versions"].items()},
            "blobs": [
                {
                    "channel": ch,
                    "version": str(v),
                    "value": self._typed(values[ch]) if ch in values else _EMPTY,
                }
                for ch, v in new_versions.items()
            ],
            "scope": self._scope(conf),
        }
        if self.detect_conflicts and metadata.get("source") in _CONDITIONED_SOURCES:
            # The parent is the head the run read ("" for a new thread).
            body["expected_head"] = body["parent_checkpoint_id"]
        return f"/v1/threads/{_seg(thread_id)}/checkpoints", body

    @staticmethod
    def _landed_request(path: str, body: Wire) -> tuple[str, dict[str, str]]:
        """The read that tells whether a conditioned put was stored after all."""
        params = {"checkpoint_ns": body["checkpoint_ns"], "checkpoint_id": body["checkpoint_id"]}
        return path.removesuffix("/checkpoints") + "/checkpoint", params

    @staticmethod
    def _landed(wire: Any, body: Wire) -> bool:
        """Whether a stored checkpoint is the one the put sent.

        Checkpoint ids are unique per checkpoint, so a checkpoint under the
        put's id and with its parent is the put's own: an earlier try of it,
        retried after a lost answer, which the service refuses because the
        head is now that very checkpoint.
        """
        return (
            isinstance(wire, Mapping)
            and (wire.get("parent_checkpoint_id") or "") == body["parent_checkpoint_id"]
        )

    @staticmethod
    def _conflict(exc: ConflictError, body: Wire, thread_id: str) -> ConflictError:
        parent = body["parent_checkpoint_id"]
        where = f"checkpoint {parent!r}" if parent else "its start"
        return ConflictError(
            exc.code,
            f"thread {thread_id!r} (namespace {body['checkpoint_ns']!r}) moved on from "
            f"{where}, where this run was: another writer stored checkpoints since (or the "
            f"run gave new input to an older checkpoint; fork with update_state for that). "
            f"Checkpoint {body['checkpoint_id']!r} was not stored; read the thread again "
            f"and run from its head. ({exc.message})",
            status=exc.status,
            request_id=exc.request_id,
        )

    def _scope(self, conf: Mapping[str, Any]) -> str:
        return _check_scope(conf.get(SCOPE_KEY) or self.scope) or ""

    def _writes_request(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> tuple[str, Wire] | None:
        conf = config["configurable"]
        by_key: dict[int, Wire] = {}
        for pos, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, pos)
            # A later write to the same special channel replaces an earlier one,
            # as in InMemorySaver; the service rejects duplicate keys in one call.
            by_key[idx] = {
                "task_id": task_id,
                "task_path": task_path,
                "idx": idx,
                "channel": channel,
                "value": self._typed(value),
            }
        if not by_key:
            return None
        body = {
            "checkpoint_ns": conf.get("checkpoint_ns") or "",
            "checkpoint_id": conf["checkpoint_id"],
            "writes": list(by_key.values()),
            "scope": self._scope(conf),
        }
        return f"/v1/threads/{_seg(str(conf['thread_id']))}/writes", body

    @staticmethod
    def _get_request(config: RunnableConfig) -> tuple[str, dict[str, str]]:
        conf = config["configurable"]
        params = {"checkpoint_ns": conf.get("checkpoint_ns") or ""}
        if checkpoint_id := get_checkpoint_id(config):
            params["checkpoint_id"] = checkpoint_id
        return f"/v1/threads/{_seg(str(conf['thread_id']))}/checkpoint", params

    @staticmethod
    def _delta_request(config: RunnableConfig, channels: Sequence[str]) -> tuple[str, Wire]:
        conf = config["configurable"]
        body = {
            "checkpoint_ns": conf.get("checkpoint_ns") or "",
            "checkpoint_id": get_checkpoint_id(config) or "",
            "channels": [str(ch) for ch in channels],
        }
        return f"/v1/threads/{_seg(str(conf['thread_id']))}/delta-history", body

    def _to_histories(
        self, wire: Any, channels: Sequence[str]
    ) -> dict[str, DeltaChannelHistory]:
        try:
            by_channel = wire["channels"]
            out: dict[str, DeltaChannelHistory] = {}
            for ch in channels:
                entry = by_channel[ch]
                history: DeltaChannelHistory = {
                    "writes": [
                        (w["task_id"], w["channel"], self._untyped(w["value"]))
                        for w in entry.get("writes") or ()
                    ]
                }
                if entry.get("seed") is not None:
                    history["seed"] = self._untyped(entry["seed"])
                out[ch] = history
        except (KeyError, TypeError, AttributeError) as exc:
            raise BadResponseError("bad_response", f"malformed delta history: {exc!r}") from exc
        return out

    @staticmethod
    def _search_request(
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
    ) -> Wire:
        conf: Mapping[str, Any] = (config or {}).get("configurable") or {}
        thread_id = conf.get("thread_id")
        # An absent checkpoint_ns means every namespace; "" means the root graph.
        ns = conf.get("checkpoint_ns")
        return {
            "thread_id": None if thread_id is None else str(thread_id),
            "checkpoint_ns": ns,
            "checkpoint_id": (get_checkpoint_id(config) if config else None) or None,
            "before": (get_checkpoint_id(before) if before else None) or None,
            "filter": _jsonable(filter) if filter else None,
        }

    def _to_tuple(self, wire: Any) -> CheckpointTuple:
        try:
            thread_id = wire["thread_id"]
            ns = wire["checkpoint_ns"]
            checkpoint_id = wire["checkpoint_id"]
            skeleton = self._untyped(wire["checkpoint"])
            values = {
                v["channel"]: self._untyped(v["value"])
                for v in wire.get("values") or ()
                if v["value"]["type"] != "empty"
            }
            pending = [
                (w["task_id"], w["channel"], self._untyped(w["value"]))
                for w in wire.get("writes") or ()
            ]
            parent_id = wire.get("parent_checkpoint_id") or None
            metadata = wire.get("metadata") or {}
        except (KeyError, TypeError) as exc:
            raise BadResponseError("bad_response", f"malformed checkpoint tuple: {exc!r}") from exc
        return CheckpointTuple(
            config=_config(thread_id, ns, checkpoint_id),
            checkpoint=cast(Checkpoint, {**skeleton, "channel_values": values}),
            metadata=cast(CheckpointMetadata, metadata),
            parent_config=_config(thread_id, ns, parent_id) if parent_id else None,
            pending_writes=pending,
        )

    @staticmethod
    def _page(result: Any) -> tuple[list[Any], str | None]:
        if not isinstance(result, Mapping) or not isinstance(result.get("tuples"), list):
            raise BadResponseError("bad_response", "search answered without a tuples list")
        cursor = result.get("next_cursor") or None
        if cursor is not None and not result["tuples"]:
            # Following it would loop forever without making progress.
            raise BadResponseError("bad_response", "search returned an empty page with a cursor")
        return result["tuples"], cursor

    @staticmethod
    def _tree_request(
        thread_id: str,
        query: str,
        checkpoint_id: str | None = None,
        checkpoint_ns: str = "",
    ) -> tuple[str, dict[str, str]]:
        params: dict[str, str] = {}
        if checkpoint_id:
            params = {"checkpoint_ns": checkpoint_ns or "", "checkpoint_id": checkpoint_id}
        elif checkpoint_ns:
            raise ValueError("checkpoint_ns needs a checkpoint_id")
        suffix = f"/{query}" if query else ""
        return f"/v1/threads/{_seg(str(thread_id))}/tree{suffix}", params

    @staticmethod
    def _context_params(limit: int | None) -> dict[str, str]:
        if limit is None:
            return {}
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError("limit must be a non-negative int (0 or None: no limit)")
        return {"limit": str(limit)}

    @staticmethod
    def _claim_body(key: str, lease: float | None, ttl: float | None) -> Wire:
        if not isinstance(key, str) or not key:
            raise ValueError("an idempotency key must be a non-empty str")
        # One claim id for every try of this call: when an answer is lost
        # and the transport sends the claim again, the service recognises
        # the resend and grants the same lease, rather than answer
        # in_progress (held by this very call) until the lease runs out.
        # Not uuid.uuid4: tests patch it to make the ids a graph assigns
        # reproducible, and a call of ours would shift them.
        body: Wire = {"key": key, "claim_id": secrets.token_hex(16)}
        if lease is not None:
            body["lease_ms"] = _millis(lease, "lease")
        if ttl is not None:
            body["ttl_ms"] = _millis(ttl, "ttl")
        return body

    def _to_claim(self, wire: Any) -> Claim:
        try:
            state = wire["state"]
            if state not in ("claimed", "in_progress", "completed", "failed"):
                raise ValueError(f"unknown state {state!r}")
            lease_ms = wire.get("lease_expires_at_ms") or 0
            err = wire.get("error")
            return Claim(
                key=str(wire["key"]),
                state=state,
                attempt=int(wire.get("attempt") or 0),
                token=str(wire["token"]) if wire.get("token") else None,
                lease_expires_at=lease_ms / 1000 if lease_ms else None,
                result=(
                    self._untyped(wire["result"])
                    if state == "completed" and wire.get("result") is not None
                    else None
                ),
                error=(
                    StoredFailure(str(err.get("message") or ""), bool(err.get("retryable")))
                    if err
                    else None
                ),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadResponseError("bad_response", f"malformed claim answer: {exc!r}") from exc

    def _complete_body(self, key: str, token: str, result: Any) -> Wire:
        return {"key": key, "token": token, "result": self._typed(result)}

    @staticmethod
    def _fail_body(key: str, token: str, message: str, retryable: bool) -> Wire:
        data = str(message).encode()
        if len(data) > MAX_MESSAGE_BYTES:  # the service refuses longer messages
            message = data[:MAX_MESSAGE_BYTES].decode(errors="ignore")
        return {
            "key": key,
            "token": token,
            "error": {"message": str(message), "retryable": bool(retryable)},
        }

    # -- sync API ----------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by config, or the latest of (thread, ns); None if absent."""
        path, params = self._get_request(config)
        try:
            wire = self._transport.request("GET", path, params=params)
        except NotFoundError:
            return None
        return self._to_tuple(wire)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching the arguments, newest first, fetched page by page."""
        if limit is not None and limit <= 0:
            return
        search = self._search_request(config, filter, before)
        remaining, cursor = limit, None
        while True:
            result = self._transport.request(
                "POST",
                "/v1/checkpoints/search",
                body={**search, "limit": remaining, "cursor": cursor},
            )
            tuples, cursor = self._page(result)
            for wire in tuples[:remaining]:
                yield self._to_tuple(wire)
            if remaining is not None:
                remaining -= len(tuples)
                if remaining <= 0:
                    return
            if cursor is None:
                return

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
        path, body = self._put_request(config, checkpoint, metadata, new_versions)
        try:
            return _stored_config(self._transport.request("POST", path, body=body))
        except ConflictError as exc:
            if "expected_head" not in body:
                raise
            read, params = self._landed_request(path, body)
            try:
                wire = self._transport.request("GET", read, params=params)
            except NotFoundError:
                wire = None
            if self._landed(wire, body):
                return _stored_config(wire)
            raise self._conflict(exc, body, str(config["configurable"]["thread_id"])) from exc

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes against the checkpoint in config."""
        req = self._writes_request(config, writes, task_id, task_path)
        if req is not None:
            self._transport.request("POST", req[0], body=req[1])

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
        path, body = self._delta_request(config, channels)
        return self._to_histories(self._transport.request("POST", path, body=body), channels)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of a thread, in all namespaces."""
        self._transport.request("DELETE", f"/v1/threads/{_seg(str(thread_id))}")

    def ping(self) -> None:
        """Check that the service is ready and accepts this saver's API key.

        Raises `UnauthorizedError` for a bad key, `UnavailableError` when the
        service's store does not answer, and a connection error when nothing
        listens at the URL.
        """
        self._transport.request("GET", "/readyz")
        # An empty page: the cheapest call that needs the key.
        self._transport.request("POST", "/v1/checkpoints/search", body={"limit": 0})

    def pin(self, thread_id: str, checkpoint_id: str, checkpoint_ns: str = "") -> None:
        """Make a checkpoint, its channel values and its writes never expire."""
        self._transport.request(
            "POST",
            f"/v1/threads/{_seg(str(thread_id))}/checkpoints/pin",
            body={"checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id},
        )

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata run_id is in run_ids."""
        if run_ids:
            self._transport.request(
                "POST", "/v1/runs/delete", body={"run_ids": [str(r) for r in run_ids]}
            )

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread with ids and parent links unchanged.

        Raises NotFoundError when the source has no checkpoint.
        """
        self._transport.request(
            "POST",
            f"/v1/threads/{_seg(str(source_thread_id))}/copy",
            body={"target_thread_id": str(target_thread_id)},
        )

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only the newest checkpoint per namespace ("keep_latest"), or delete all."""
        _check_strategy(strategy)
        if thread_ids:
            self._transport.request(
                "POST",
                "/v1/threads/prune",
                body={"thread_ids": [str(t) for t in thread_ids], "strategy": strategy},
            )

    # -- checkpoint tree -----------------------------------------------------
    # Not part of BaseCheckpointSaver: new names only, so that capability
    # detection (which looks at overridden base methods) is unaffected.
    # (`builtins.list` because `list` in this class body is the method.)

    def tree(self, thread_id: str) -> ThreadTree:
        """The thread's whole checkpoint tree, every namespace, parents before children.

        Raises NotFoundError when the thread has no checkpoint.
        """
        path, params = self._tree_request(thread_id, "")
        return ThreadTree.from_wire(self._transport.request("GET", path, params=params))

    def path(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> builtins.list[TreeNode]:
        """The nodes from the root down to a checkpoint; to the head without checkpoint_id.

        A subgraph checkpoint's path crosses into the parent graph that ran it.
        """
        path, params = self._tree_request(thread_id, "path", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(self._transport.request("GET", path, params=params))

    def children(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> builtins.list[TreeNode]:
        """A checkpoint's children (the head's without checkpoint_id), oldest first.

        Forks are siblings; subgraph runs under the checkpoint are children too.
        """
        path, params = self._tree_request(thread_id, "children", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(self._transport.request("GET", path, params=params))

    def leaves(self, thread_id: str) -> builtins.list[TreeNode]:
        """The branch heads of every namespace."""
        path, params = self._tree_request(thread_id, "leaves")
        return nodes_from_wire(self._transport.request("GET", path, params=params))

    def abandoned(self, thread_id: str) -> builtins.list[Branch]:
        """The root graph's branches that are not on the live path, oldest first."""
        path, params = self._tree_request(thread_id, "abandoned")
        return branches_from_wire(self._transport.request("GET", path, params=params))

    def resume_context(self, thread_id: str, *, limit: int | None = None) -> ResumeContext:
        """The live path as prompt text (`.text`, also `str()`) and the tree drawn (`.drawing`).

        With `limit`, the text keeps only the last `limit` steps.
        """
        path, params = self._tree_request(thread_id, "context")
        params.update(self._context_params(limit))
        return ResumeContext.from_wire(self._transport.request("GET", path, params=params))

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
        body = self._claim_body(key, lease, ttl)
        return self._to_claim(self._transport.request("POST", "/v1/idempotency/claim", body=body))

    def complete(self, key: str, token: str, result: Any) -> None:
        """Store the result of a claimed key (serialised with `serde`).

        Raises ConflictError when the token no longer holds the claim.
        """
        body = self._complete_body(key, token, result)
        self._transport.request("POST", "/v1/idempotency/complete", body=body)

    def fail(self, key: str, token: str, message: str, *, retryable: bool = True) -> None:
        """Store a failure of a claimed key. A retryable one lets the next claim run again.

        Raises ConflictError when the token no longer holds the claim.
        """
        body = self._fail_body(key, token, message, retryable)
        self._transport.request("POST", "/v1/idempotency/fail", body=body)

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

    # -- async API ---------------------------------------------------------
    # Overridden on the class (not delegated to the base) because both the
    # conformance suite and the Agent Server detect capabilities that way.

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async `get_tuple`."""
        path, params = self._get_request(config)
        try:
            wire = await self._transport.arequest("GET", path, params=params)
        except NotFoundError:
            return None
        return self._to_tuple(wire)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async `list`."""
        if limit is not None and limit <= 0:
            return
        search = self._search_request(config, filter, before)
        remaining, cursor = limit, None
        while True:
            result = await self._transport.arequest(
                "POST",
                "/v1/checkpoints/search",
                body={**search, "limit": remaining, "cursor": cursor},
            )
            tuples, cursor = self._page(result)
            for wire in tuples[:remaining]:
                yield self._to_tuple(wire)
            if remaining is not None:
                remaining -= len(tuples)
                if remaining <= 0:
                    return
            if cursor is None:
                return

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async `put`."""
        path, body = self._put_request(config, checkpoint, metadata, new_versions)
        try:
            return _stored_config(await self._transport.arequest("POST", path, body=body))
        except ConflictError as exc:
            if "expected_head" not in body:
                raise
            read, params = self._landed_request(path, body)
            try:
                wire = await self._transport.arequest("GET", read, params=params)
            except NotFoundError:
                wire = None
            if self._landed(wire, body):
                return _stored_config(wire)
            raise self._conflict(exc, body, str(config["configurable"]["thread_id"])) from exc

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async `put_writes`."""
        req = self._writes_request(config, writes, task_id, task_path)
        if req is not None:
            await self._transport.arequest("POST", req[0], body=req[1])

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async `get_delta_channel_history`."""
        if not channels:
            return {}
        path, body = self._delta_request(config, channels)
        wire = await self._transport.arequest("POST", path, body=body)
        return self._to_histories(wire, channels)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async `delete_thread`."""
        await self._transport.arequest("DELETE", f"/v1/threads/{_seg(str(thread_id))}")

    async def aping(self) -> None:
        """Async `ping`."""
        await self._transport.arequest("GET", "/readyz")
        await self._transport.arequest("POST", "/v1/checkpoints/search", body={"limit": 0})

    async def apin(self, thread_id: str, checkpoint_id: str, checkpoint_ns: str = "") -> None:
        """Async `pin`."""
        await self._transport.arequest(
            "POST",
            f"/v1/threads/{_seg(str(thread_id))}/checkpoints/pin",
            body={"checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id},
        )

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async `delete_for_runs`."""
        if run_ids:
            await self._transport.arequest(
                "POST", "/v1/runs/delete", body={"run_ids": [str(r) for r in run_ids]}
            )

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async `copy_thread`."""
        await self._transport.arequest(
            "POST",
            f"/v1/threads/{_seg(str(source_thread_id))}/copy",
            body={"target_thread_id": str(target_thread_id)},
        )

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async `prune`."""
        _check_strategy(strategy)
        if thread_ids:
            await self._transport.arequest(
                "POST",
                "/v1/threads/prune",
                body={"thread_ids": [str(t) for t in thread_ids], "strategy": strategy},
            )

    # -- async checkpoint tree and ledger --------------------------------------

    async def atree(self, thread_id: str) -> ThreadTree:
        """Async `tree`."""
        path, params = self._tree_request(thread_id, "")
        return ThreadTree.from_wire(await self._transport.arequest("GET", path, params=params))

    async def apath(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> builtins.list[TreeNode]:
        """Async `path`."""
        path, params = self._tree_request(thread_id, "path", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(await self._transport.arequest("GET", path, params=params))

    async def achildren(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> builtins.list[TreeNode]:
        """Async `children`."""
        path, params = self._tree_request(thread_id, "children", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(await self._transport.arequest("GET", path, params=params))

    async def aleaves(self, thread_id: str) -> builtins.list[TreeNode]:
        """Async `leaves`."""
        path, params = self._tree_request(thread_id, "leaves")
        return nodes_from_wire(await self._transport.arequest("GET", path, params=params))

    async def aabandoned(self, thread_id: str) -> builtins.list[Branch]:
        """Async `abandoned`."""
        path, params = self._tree_request(thread_id, "abandoned")
        return branches_from_wire(await self._transport.arequest("GET", path, params=params))

    async def aresume_context(self, thread_id: str, *, limit: int | None = None) -> ResumeContext:
        """Async `resume_context`."""
        path, params = self._tree_request(thread_id, "context")
        params.update(self._context_params(limit))
        return ResumeContext.from_wire(await self._transport.arequest("GET", path, params=params))

    async def aclaim(
        self, key: str, *, lease: float | None = None, ttl: float | None = None
    ) -> Claim:
        """Async `claim`."""
        body = self._claim_body(key, lease, ttl)
        return self._to_claim(
            await self._transport.arequest("POST", "/v1/idempotency/claim", body=body)
        )

    async def acomplete(self, key: str, token: str, result: Any) -> None:
        """Async `complete`."""
        body = self._complete_body(key, token, result)
        await self._transport.arequest("POST", "/v1/idempotency/complete", body=body)

    async def afail(self, key: str, token: str, message: str, *, retryable: bool = True) -> None:
        """Async `fail`."""
        body = self._fail_body(key, token, message, retryable)
        await self._transport.arequest("POST", "/v1/idempotency/fail", body=body)


def _seg(value: str) -> str:
    """Percent-escape a path segment: thread ids may hold '/', '%', spaces, unicode."""
    return quote(value, safe="")


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _stored_config(wire: Any) -> RunnableConfig:
    try:
        return _config(wire["thread_id"], wire["checkpoint_ns"], wire["checkpoint_id"])
    except (KeyError, TypeError) as exc:
        raise BadResponseError("bad_response", f"malformed put answer: {exc!r}") from exc


def _millis(seconds: float, what: str) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{what} is in seconds, a number")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} must be a positive number of seconds")
    return max(1, math.ceil(seconds * 1000))


def _check_strategy(strategy: str) -> None:
    if strategy not in _PRUNE_STRATEGIES:
        raise ValueError(f"unknown prune strategy {strategy!r}; use one of {_PRUNE_STRATEGIES}")


def _jsonable(value: Any, _depth: int = 0) -> Any:
    """Metadata as the JSON-like values the service stores and filters on.

    Tuples become lists (as in any JSON store: `counters_since_delta_snapshot`
    holds tuples); a few common scalars take their JSON spelling. Anything else
    is refused here rather than stored in a shape nobody can filter on.
    """
    if _depth > 32:
        raise TypeError("metadata nested too deeply")
    if isinstance(value, enum.Enum):  # before str/int: StrEnum and IntEnum are both
        return _jsonable(value.value, _depth + 1)
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(k, enum.Enum):
                k = k.value
            if isinstance(k, bool) or k is None:
                k = "true" if k is True else "false" if k is False else "null"
            elif isinstance(k, (int, float)):
                k = str(k)  # as json.dumps spells non-string keys
            elif not isinstance(k, str):
                raise TypeError(f"metadata key {k!r} is not a string")
            out[k] = _jsonable(v, _depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, _depth + 1) for v in value]
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(
        f"metadata value of type {type(value).__name__} is not JSON-like; "
        "use str, int, float, bool, None, list or dict"
    )
