"""The service's requests and answers, without I/O: shared by sync and async calls.

Each builder returns a `Call` (method, path, body, query) for the transport to
send, and each parser turns a decoded answer into the client's types, raising
`BadResponseError` on a malformed one. Values go through the saver's serde,
passed in at each call because `with_allowlist` makes a copy with another.
"""

from __future__ import annotations

import base64
import datetime as _dt
import enum
import math
import secrets
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast
from urllib.parse import quote

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from saver_client._decoded import Decoded
from saver_client._version import __version__
from saver_client.errors import BadResponseError, ConflictError, NoRouteError
from saver_client.ledger import MAX_MESSAGE_BYTES, Claim, StoredFailure

Wire = dict[str, Any]

Scope = Literal["session", "persistent"]
# The configurable key a run sets to choose its thread's retention scope.
SCOPE_KEY = "saver_scope"

# The blob stored for a channel that has a new version but no value, exactly as
# InMemorySaver stores it; the service skips such blobs when resolving values.
_EMPTY: dict[str, Any] = {"type": "empty", "data": b""}

_PRUNE_STRATEGIES = ("keep_latest", "delete")

_DELTA_HISTORY = "/delta-history"

# Metadata sources of the puts that continue the head a run read: LangGraph's
# input and loop steps. Forks and state updates ("fork", "update") branch
# off an older checkpoint on purpose and are never conditioned.
_CONDITIONED_SOURCES = ("input", "loop")


@dataclass(frozen=True)
class Call:
    """One request to the service: what the transport sends."""

    method: str
    path: str
    body: Wire | None = None
    params: dict[str, str] | None = None


def check_scope(scope: Any) -> Scope | None:
    if scope not in (None, "session", "persistent"):
        raise ValueError(f"scope must be 'session' or 'persistent', not {scope!r}")
    return cast("Scope | None", scope)


def thread_path(thread_id: Any, suffix: str = "") -> str:
    # Percent-escaped: thread ids may hold '/', '%', spaces, unicode.
    return f"/v1/threads/{quote(str(thread_id), safe='')}{suffix}"


def config_of(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def typed(serde: SerializerProtocol, value: Any) -> Wire:
    type_, data = serde.dumps_typed(value)
    return {"type": type_, "data": data}


def untyped(serde: SerializerProtocol, value: Any) -> Any:
    return serde.loads_typed(wire_parts(value))


def wire_parts(value: Any) -> tuple[str, bytes]:
    """A typed value's (type, bytes) as the serializer takes them."""
    if not isinstance(value, Mapping):
        raise BadResponseError("bad_response", f"expected a typed value, got {value!r:.80}")
    data = value.get("data", b"")
    if isinstance(data, str):  # a JSON response carries bytes as base64
        data = base64.b64decode(data)
    return str(value["type"]), bytes(data)


def jsonable(value: Any, _depth: int = 0) -> Any:
    """Metadata as the JSON-like values the service stores and filters on.

    Tuples become lists (as in any JSON store: `counters_since_delta_snapshot`
    holds tuples); a few common scalars take their JSON spelling. Anything else
    is refused here rather than stored in a shape nobody can filter on.
    """
    if _depth > 32:
        raise TypeError("metadata nested too deeply")
    if isinstance(value, enum.Enum):  # before str/int: StrEnum and IntEnum are both
        return jsonable(value.value, _depth + 1)
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
            out[k] = jsonable(v, _depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [jsonable(v, _depth + 1) for v in value]
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(
        f"metadata value of type {type(value).__name__} is not JSON-like; "
        "use str, int, float, bool, None, list or dict"
    )


# -- checkpoints: the LangGraph saver contract ----------------------------------


def scope_of(conf: Mapping[str, Any], default: Scope | None) -> str:
    return check_scope(conf.get(SCOPE_KEY) or default) or ""


def put_call(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    *,
    scope: Scope | None,
    detect_conflicts: bool,
) -> Call:
    conf = config["configurable"]
    path = thread_path(conf["thread_id"], "/checkpoints")
    skeleton: dict[str, Any] = dict(checkpoint)
    values: dict[str, Any] = skeleton.pop("channel_values", None) or {}
    body = {
        "checkpoint_ns": conf.get("checkpoint_ns") or "",
        "checkpoint_id": checkpoint["id"],
        # In put, the config names the parent: the checkpoint this one follows.
        "parent_checkpoint_id": conf.get("checkpoint_id") or "",
        "checkpoint": typed(serde, skeleton),
        "metadata": jsonable(get_serializable_checkpoint_metadata(config, metadata)),
        "channel_versions": {ch: str(v) for ch, v in checkpoint["channel_versions"].items()},
        "blobs": [
            {
                "channel": ch,
                "version": str(v),
                "value": typed(serde, values[ch]) if ch in values else _EMPTY,
            }
            for ch, v in new_versions.items()
        ],
        "scope": scope_of(conf, scope),
    }
    if detect_conflicts and metadata.get("source") in _CONDITIONED_SOURCES:
        # The parent is the head the run read ("" for a new thread).
        body["expected_head"] = body["parent_checkpoint_id"]
    return Call("POST", path, body=body)


def stored_config(wire: Any) -> RunnableConfig:
    try:
        return config_of(wire["thread_id"], wire["checkpoint_ns"], wire["checkpoint_id"])
    except (KeyError, TypeError) as exc:
        raise BadResponseError("bad_response", f"malformed put answer: {exc!r}") from exc


def conditioned(put: Call) -> bool:
    return put.body is not None and "expected_head" in put.body


def landed_call(put: Call) -> Call:
    """The read that tells whether a conditioned put was stored after all."""
    assert put.body is not None
    params = {
        "checkpoint_ns": put.body["checkpoint_ns"],
        "checkpoint_id": put.body["checkpoint_id"],
    }
    return Call("GET", put.path.removesuffix("/checkpoints") + "/checkpoint", params=params)


def landed_config(
    wire: Any, put: Call, exc: ConflictError, config: RunnableConfig
) -> RunnableConfig:
    """The put's config if the checkpoint read back is the put's own; else its conflict.

    Checkpoint ids are unique per checkpoint, so a checkpoint under the put's
    id and with its parent is the put's own: an earlier try of it, retried
    after a lost answer, which the service refuses because the head is now
    that very checkpoint.
    """
    body = put.body
    assert body is not None
    if (
        isinstance(wire, Mapping)
        and (wire.get("parent_checkpoint_id") or "") == body["parent_checkpoint_id"]
    ):
        return stored_config(wire)
    parent = body["parent_checkpoint_id"]
    where = f"checkpoint {parent!r}" if parent else "its start"
    thread_id = str(config["configurable"]["thread_id"])
    raise ConflictError(
        exc.code,
        f"thread {thread_id!r} (namespace {body['checkpoint_ns']!r}) moved on from "
        f"{where}, where this run was: another writer stored checkpoints since (or the "
        f"run gave new input to an older checkpoint; fork with update_state for that). "
        f"Checkpoint {body['checkpoint_id']!r} was not stored; read the thread again "
        f"and run from its head. ({exc.message})",
        status=exc.status,
        request_id=exc.request_id,
    ) from exc


def writes_call(
    serde: SerializerProtocol,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    *,
    scope: Scope | None,
) -> Call | None:
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
            "value": typed(serde, value),
        }
    if not by_key:
        return None
    body = {
        "checkpoint_ns": conf.get("checkpoint_ns") or "",
        "checkpoint_id": conf["checkpoint_id"],
        "writes": list(by_key.values()),
        "scope": scope_of(conf, scope),
    }
    return Call("POST", thread_path(conf["thread_id"], "/writes"), body=body)


def get_call(config: RunnableConfig) -> Call:
    conf = config["configurable"]
    params = {"checkpoint_ns": conf.get("checkpoint_ns") or ""}
    if checkpoint_id := get_checkpoint_id(config):
        params["checkpoint_id"] = checkpoint_id
    return Call("GET", thread_path(conf["thread_id"], "/checkpoint"), params=params)


def to_tuple(serde: SerializerProtocol, wire: Any) -> CheckpointTuple:
    try:
        thread_id = wire["thread_id"]
        ns = wire["checkpoint_ns"]
        checkpoint_id = wire["checkpoint_id"]
        skeleton = untyped(serde, wire["checkpoint"])
        values = {
            v["channel"]: untyped(serde, v["value"])
            for v in wire.get("values") or ()
            if v["value"]["type"] != "empty"
        }
        pending = [
            (w["task_id"], w["channel"], untyped(serde, w["value"]))
            for w in wire.get("writes") or ()
        ]
        parent_id = wire.get("parent_checkpoint_id") or None
        metadata = wire.get("metadata") or {}
    except (KeyError, TypeError) as exc:
        raise BadResponseError("bad_response", f"malformed checkpoint tuple: {exc!r}") from exc
    return CheckpointTuple(
        config=config_of(thread_id, ns, checkpoint_id),
        checkpoint=cast(Checkpoint, {**skeleton, "channel_values": values}),
        metadata=cast(CheckpointMetadata, metadata),
        parent_config=config_of(thread_id, ns, parent_id) if parent_id else None,
        pending_writes=pending,
    )


def _search(
    config: RunnableConfig | None, filter: dict[str, Any] | None, before: RunnableConfig | None
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
        "filter": jsonable(filter) if filter else None,
    }


class Search:
    """A search's pages: the next page's call, and the tuples each answer holds.

    `next()` is None when the search is over: `limit` tuples were taken, the
    service gave no cursor, or the limit asked for none.
    """

    def __init__(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> None:
        self._remaining = limit
        self._cursor: str | None = None
        self._done = limit is not None and limit <= 0
        self._search = {} if self._done else _search(config, filter, before)

    def next(self) -> Call | None:
        if self._done:
            return None
        body = {**self._search, "limit": self._remaining, "cursor": self._cursor}
        return Call("POST", "/v1/checkpoints/search", body=body)

    def page(self, result: Any) -> list[Any]:
        """The answer's tuples, still on the wire, up to the limit."""
        if not isinstance(result, Mapping) or not isinstance(result.get("tuples"), list):
            raise BadResponseError("bad_response", "search answered without a tuples list")
        tuples: list[Any] = result["tuples"]
        cursor = result.get("next_cursor") or None
        if cursor is not None and not tuples:
            # Following it would loop forever without making progress.
            raise BadResponseError("bad_response", "search returned an empty page with a cursor")
        taken = tuples[: self._remaining]
        if self._remaining is not None:
            self._remaining -= len(tuples)
            self._done = self._remaining <= 0
        self._cursor = cursor
        self._done = self._done or cursor is None
        return taken


def delta_call(
    config: RunnableConfig, channels: Sequence[str], checkpoint_id: str, known: str | None = None
) -> Call:
    conf = config["configurable"]
    body: dict[str, Any] = {
        "checkpoint_ns": conf.get("checkpoint_ns") or "",
        "checkpoint_id": checkpoint_id,
        "channels": [str(ch) for ch in channels],
        "paged": True,
    }
    if known:
        body["known"] = known
    return Call("POST", thread_path(conf["thread_id"], _DELTA_HISTORY), body=body)


def missing_delta_route(exc: NoRouteError) -> NoRouteError:
    """The error for a service that answered `no_route` to a delta-history call.

    It is older than this client. The saver never falls back to walking the
    checkpoints one request each (the base class's way), which would hide the
    version mismatch and turn one request into one per checkpoint.
    """
    return NoRouteError(
        exc.code,
        "the saver service has no delta-history route "
        f"(POST /v1/threads/{{thread_id}}{_DELTA_HISTORY}), which DeltaChannel histories "
        "need: the service is older than this client "
        f"(saver-client {__version__}); upgrade the service. ({exc.message})",
        status=exc.status,
        request_id=exc.request_id,
    )


class DeltaPages:
    """Puts together a delta history the service answers in pages.

    A history within the service's page is one answer. A longer one comes
    newest part first: each channel whose history goes on names, as `next`,
    the ancestor whose own history comes before its writes; the next call
    asks for it there. The pages put together are the whole history, kept on
    the wire (`raw`) until `result` decodes it.

    With `held`, the histories at `known`, an ancestor of the target, the
    service stops there: a channel whose `next` is `known` has its held
    history before the pages' writes.
    """

    def __init__(
        self,
        config: RunnableConfig,
        channels: Sequence[str],
        known: str | None = None,
        held: Mapping[str, RawHistory] | None = None,
    ):
        self._config = config
        self._known = known if held is not None else None
        self._held = held or {}
        self._spliced: set[str] = set()
        self._channels = [str(ch) for ch in channels]
        self._target = get_checkpoint_id(config) or ""
        self._seen: set[str] = set()
        self._seeds: dict[str, Any] = {}
        # Each channel's pages, newest first: joined once in raw(), since
        # prepending page by page would copy the writes once per page.
        self._pages: dict[str, list[list[Any]]] = {ch: [] for ch in self._channels}

    def call(self) -> Call | None:
        """The next request, or None once the history is whole."""
        if not self._channels:
            return None
        return delta_call(self._config, self._channels, self._target, self._known)

    def take(self, wire: Any) -> None:
        """Take one answer: its writes come before those taken so far."""
        going_on: list[str] = []
        target = None
        try:
            by_channel = wire["channels"]
            for ch in self._channels:
                entry = by_channel[ch]
                writes = entry.get("writes") or []
                if not isinstance(writes, list):
                    raise TypeError(f"writes of {ch!r} are not a list")
                self._pages[ch].append(writes)
                self._seeds[ch] = entry.get("seed")
                nxt = entry.get("next")
                if nxt and nxt == self._known:
                    self._spliced.add(ch)
                elif nxt:
                    if not isinstance(nxt, str) or (target is not None and nxt != target):
                        raise BadResponseError(
                            "bad_response", f"delta history page goes on at {nxt!r}"
                        )
                    target = nxt
                    going_on.append(ch)
        except (KeyError, TypeError, AttributeError) as exc:
            raise BadResponseError("bad_response", f"malformed delta history: {exc!r}") from exc
        if target is not None:
            if target in self._seen:
                raise BadResponseError("bad_response", f"delta history goes round at {target!r}")
            self._seen.add(target)
            self._target = target
        self._channels = going_on

    def raw(self) -> dict[str, RawHistory]:
        """The whole history of each channel, on the wire."""
        out = {}
        for ch, pages in self._pages.items():
            writes = [w for page in reversed(pages) for w in page]
            if ch in self._spliced:
                held = self._held[ch]
                out[ch] = RawHistory(held.writes + writes, held.seed)
            else:
                out[ch] = RawHistory(writes, self._seeds.get(ch))
        return out


@dataclass(frozen=True)
class RawHistory:
    """A channel's delta history on the wire: its writes, oldest first, and
    its seed's typed value (None: start empty)."""

    writes: list[Any]
    seed: Any


def to_histories(
    serde: SerializerProtocol, raw: Mapping[str, RawHistory], decoded: Decoded | None = None
) -> dict[str, DeltaChannelHistory]:
    """Decode histories: each value an object of its own, as every saver
    hands out, so that a reducer that changes its writes in place
    (add_messages gives messages ids) changes the state it rebuilds and no
    other. With decoded, a value seen before is a copy of its first
    decoding (see `_decoded`)."""

    def value(wire: Any) -> Any:
        parts = wire_parts(wire)
        if decoded is None:
            return serde.loads_typed(parts)
        return decoded.value(serde, parts, lambda: serde.loads_typed(parts))

    out: dict[str, DeltaChannelHistory] = {}
    try:
        for ch, h in raw.items():
            history: DeltaChannelHistory = {
                "writes": [(w["task_id"], w["channel"], value(w["value"])) for w in h.writes]
            }
            if h.seed is not None:
                history["seed"] = value(h.seed)
            out[ch] = history
    except (KeyError, TypeError, AttributeError) as exc:
        raise BadResponseError("bad_response", f"malformed delta history: {exc!r}") from exc
    return out


# -- maintenance ----------------------------------------------------------------


def ping_calls() -> tuple[Call, Call]:
    # The second is an empty page: the cheapest call that needs the key.
    return Call("GET", "/readyz"), Call("POST", "/v1/checkpoints/search", body={"limit": 0})


def delete_thread_call(thread_id: str) -> Call:
    return Call("DELETE", thread_path(thread_id))


def pin_call(thread_id: str, checkpoint_id: str, checkpoint_ns: str) -> Call:
    body = {"checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}
    return Call("POST", thread_path(thread_id, "/checkpoints/pin"), body=body)


def delete_for_runs_call(run_ids: Sequence[str]) -> Call | None:
    if not run_ids:
        return None
    return Call("POST", "/v1/runs/delete", body={"run_ids": [str(r) for r in run_ids]})


def copy_thread_call(source_thread_id: str, target_thread_id: str) -> Call:
    body = {"target_thread_id": str(target_thread_id)}
    return Call("POST", thread_path(source_thread_id, "/copy"), body=body)


def prune_call(thread_ids: Sequence[str], strategy: str) -> Call | None:
    if strategy not in _PRUNE_STRATEGIES:
        raise ValueError(f"unknown prune strategy {strategy!r}; use one of {_PRUNE_STRATEGIES}")
    if not thread_ids:
        return None
    body = {"thread_ids": [str(t) for t in thread_ids], "strategy": strategy}
    return Call("POST", "/v1/threads/prune", body=body)


# -- tree queries ---------------------------------------------------------------


# The tree queries whose answers are nodes, which the service sends as columns.
_NODE_QUERIES = frozenset(("", "path", "children", "leaves"))


def tree_call(
    thread_id: str, query: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
) -> Call:
    params: dict[str, str] = {}
    if checkpoint_id:
        params = {"checkpoint_ns": checkpoint_ns or "", "checkpoint_id": checkpoint_id}
    elif checkpoint_ns:
        raise ValueError("checkpoint_ns needs a checkpoint_id")
    if query in _NODE_QUERIES:
        # One array per field: a long answer unpacks in a quarter of the
        # time of a map per node (tree.nodes_from_wire builds the nodes).
        params["layout"] = "columns"
    return Call(
        "GET", thread_path(thread_id, f"/tree/{query}" if query else "/tree"), params=params
    )


def context_call(
    thread_id: str,
    limit: int | None,
    values: bool = False,
    value_bytes: int | None = None,
    checkpoint_ns: str | None = None,
) -> Call:
    params: dict[str, str] = {}
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError("limit must be a non-negative int (0 or None: no limit)")
        params["limit"] = str(limit)
    if values:
        params["values"] = "true"
        if value_bytes is not None:
            if isinstance(value_bytes, bool) or not isinstance(value_bytes, int) or value_bytes < 0:
                raise ValueError("value_bytes must be a non-negative int")
            params["value_bytes"] = str(value_bytes)
        if checkpoint_ns:
            params["checkpoint_ns"] = checkpoint_ns
    elif value_bytes is not None or checkpoint_ns:
        raise ValueError("value_bytes and checkpoint_ns need values=True")
    return Call("GET", thread_path(thread_id, "/tree/context"), params=params)


def messages_call(thread_id: str, checkpoint_ns: str | None) -> Call:
    params = {"checkpoint_ns": checkpoint_ns} if checkpoint_ns else {}
    return Call("GET", thread_path(thread_id, "/tree/messages"), params=params)


# -- the idempotency ledger -------------------------------------------------------


def _millis(seconds: float, what: str) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{what} is in seconds, a number")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} must be a positive number of seconds")
    return max(1, math.ceil(seconds * 1000))


def claim_call(key: str, lease: float | None, ttl: float | None) -> Call:
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
    return Call("POST", "/v1/idempotency/claim", body=body)


def to_claim(serde: SerializerProtocol, wire: Any) -> Claim:
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
                untyped(serde, wire["result"])
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


def complete_call(serde: SerializerProtocol, key: str, token: str, result: Any) -> Call:
    body = {"key": key, "token": token, "result": typed(serde, result)}
    return Call("POST", "/v1/idempotency/complete", body=body)


def fail_call(key: str, token: str, message: str, retryable: bool) -> Call:
    data = str(message).encode()
    if len(data) > MAX_MESSAGE_BYTES:  # the service refuses longer messages
        message = data[:MAX_MESSAGE_BYTES].decode(errors="ignore")
    body = {
        "key": key,
        "token": token,
        "error": {"message": str(message), "retryable": bool(retryable)},
    }
    return Call("POST", "/v1/idempotency/fail", body=body)
