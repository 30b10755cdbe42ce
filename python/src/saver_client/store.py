"""`HTTPStore`: LangGraph's long-term memory (a `BaseStore`) kept by the saver service."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from saver_client._client import ServiceClient, make_transport
from saver_client._http import Timeout
from saver_client._transport import RetryPolicy

__all__ = ["HTTPStore"]

BATCH_PATH = "/v1/store/batch"


class HTTPStore(ServiceClient, BaseStore):
    """A LangGraph store backed by the saver service: `graph.compile(store=HTTPStore(url))`.

    Items live in the service per tenant (the API key's), under namespaces
    such as `("users", user_id, "memories")`, so every process and thread of
    an application shares them. `batch` and `abatch` send each batch of ops
    in one request; the other methods are `BaseStore`'s, which call them.

    Values are JSON: what a Python process puts, a TypeScript one reads, and
    the other way round; a value that `json` cannot write is refused here.

    Args:
        url: Base URL of the service; defaults to the `SAVER_URL` variable.
        index: LangGraph's `IndexConfig` (`dims`, `embed`, `fields`) for
            semantic search. Texts are embedded here with `embed` and
            LangGraph's own helpers, per put (`index=False` or a field list
            override `fields`) and per search query; the service keeps the
            vectors and ranks them by cosine similarity.
        ttl: LangGraph's `TTLConfig`: `default_ttl` (minutes) for puts that
            give none, and `refresh_on_read` for reads that do not say. An
            expired item is never returned, whenever its storage is reclaimed
            (the embedded store's sweep, `SAVER_SWEEP_EVERY`; DynamoDB's TTL).
        api_key, headers, timeout, retry: as for `HTTPSaver`.
    """

    supports_ttl = True

    def __init__(
        self,
        url: str | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | Timeout = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._transport = make_transport(
            "HTTPStore", url, api_key=api_key, headers=headers, timeout=timeout, retry=retry
        )
        self.ttl_config = ttl
        self.index_config = dict(index) if index else None
        self.embeddings = None
        self._fields: list[tuple[str, Any]] = []
        if self.index_config:
            self.embeddings = ensure_embeddings(self.index_config.get("embed"))
            self._fields = [
                (p, p if p == "$" else tokenize_path(p))
                for p in (self.index_config.get("fields") or ["$"])
            ]

    # -- batches -----------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        texts_of, texts, queries = self._texts(ops)
        vectors: list[list[float]] = []
        query_vectors: dict[str, list[float]] = {}
        if self.embeddings is not None:
            if texts:
                vectors = self.embeddings.embed_documents(texts)
            query_vectors = {q: self.embeddings.embed_query(q) for q in queries}
        body = self._body(ops, texts_of, texts, vectors, query_vectors)
        return _results(ops, self._transport.request("POST", BATCH_PATH, body=body))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        texts_of, texts, queries = self._texts(ops)
        vectors: list[list[float]] = []
        query_vectors: dict[str, list[float]] = {}
        if self.embeddings is not None:
            if texts:
                vectors = await self.embeddings.aembed_documents(texts)
            for q in queries:
                query_vectors[q] = await self.embeddings.aembed_query(q)
        body = self._body(ops, texts_of, texts, vectors, query_vectors)
        return _results(ops, await self._transport.arequest("POST", BATCH_PATH, body=body))

    # -- building a batch ----------------------------------------------------

    def _texts(self, ops: Sequence[Op]) -> tuple[dict[int, list[str]], list[str], list[str]]:
        """The texts of each put by op index, the distinct texts among them,
        and the distinct queries: what to embed, each text once.

        A put embeds the texts at its index paths (the config's fields, or
        its own list; none with index=False), one vector per text, as
        InMemoryStore and PostgresStore do; only the last put of a key, the
        one the service keeps. A search embeds its query.
        """
        if self.embeddings is None:
            return {}, [], []
        last = {(op.namespace, op.key): i for i, op in enumerate(ops) if isinstance(op, PutOp)}
        texts_of: dict[int, list[str]] = {}
        texts: dict[str, None] = {}
        queries: dict[str, None] = {}
        for i, op in enumerate(ops):
            if isinstance(op, PutOp) and op.value is not None and op.index is not False:
                if last[(op.namespace, op.key)] != i:
                    continue
                paths = self._fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
                ts = [t for _, path in paths for t in get_text_at_path(op.value, path)]
                if ts:
                    texts_of[i] = ts
                    texts.update(dict.fromkeys(ts))
            elif isinstance(op, SearchOp) and op.query:
                queries[op.query] = None
        return texts_of, list(texts), list(queries)

    def _body(
        self,
        ops: Sequence[Op],
        texts_of: dict[int, list[str]],
        texts: list[str],
        vectors: list[list[float]],
        query_vectors: dict[str, list[float]],
    ) -> dict[str, Any]:
        if len(vectors) != len(texts):
            raise ValueError(f"the embedding function returned {len(vectors)} vectors for {len(texts)} texts")
        vector_of = {t: _vector(v) for t, v in zip(texts, vectors, strict=True)}
        per_put = {i: [vector_of[t] for t in ts] for i, ts in texts_of.items()}
        wire: list[dict[str, Any]] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                wire.append(
                    {"op": "get", "namespace": list(op.namespace), "key": op.key, "refresh_ttl": op.refresh_ttl}
                )
            elif isinstance(op, PutOp):
                w: dict[str, Any] = {"op": "put", "namespace": list(op.namespace), "key": op.key}
                if op.value is not None:
                    w["value"] = _dump(op.value)
                    if i in per_put:
                        w["vectors"] = per_put[i]
                    if op.ttl is not None:
                        w["ttl"] = float(op.ttl)
                wire.append(w)
            elif isinstance(op, SearchOp):
                w = {
                    "op": "search",
                    "namespace_prefix": list(op.namespace_prefix),
                    "limit": op.limit,
                    "offset": op.offset,
                    "refresh_ttl": op.refresh_ttl,
                }
                if op.filter:
                    w["filter"] = _dump(op.filter)
                if op.query and op.query in query_vectors:
                    w["query"] = _vector(query_vectors[op.query])
                wire.append(w)
            elif isinstance(op, ListNamespacesOp):
                w = {"op": "list_namespaces", "limit": op.limit, "offset": op.offset}
                if op.match_conditions:
                    w["match_conditions"] = [
                        {"match_type": c.match_type, "path": list(c.path)} for c in op.match_conditions
                    ]
                if op.max_depth is not None:
                    w["max_depth"] = op.max_depth
                wire.append(w)
            else:
                raise ValueError(f"unknown operation type: {type(op)}")
        body: dict[str, Any] = {"ops": wire}
        if self.index_config:
            body["dims"] = int(self.index_config["dims"])
        return body


def _vector(v: Sequence[float]) -> bytes | list[float]:
    """A vector as the service takes it: little-endian float32s in a msgpack
    bin (docs/api.md), a third of the time to pack of a list of floats, 1.5
    KB instead of 3.5 at 384 dims, and no number to decode one by one. A
    number past float32's range, or not a number, goes as a list of floats,
    so that it is refused as it always was (by the service: "holds a NaN or
    infinite number"; here: TypeError)."""
    try:
        return struct.pack(f"<{len(v)}f", *v)
    except (OverflowError, struct.error):
        return [float(x) for x in v]


def _dump(value: Any) -> bytes:
    """A value or filter as the JSON the service keeps: UTF-8, no NaN."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def _item(w: Mapping[str, Any], cls: type[Item] = Item) -> Any:
    kwargs: dict[str, Any] = {
        "namespace": tuple(w["namespace"]),
        "key": w["key"],
        "value": json.loads(w["value"]),
        "created_at": datetime.fromisoformat(w["created_at"]),
        "updated_at": datetime.fromisoformat(w["updated_at"]),
    }
    if cls is SearchItem:
        kwargs["score"] = w.get("score")
    return cls(**kwargs)


def _results(ops: Sequence[Op], answer: Mapping[str, Any]) -> list[Result]:
    results = answer["results"]
    if len(results) != len(ops):
        raise ValueError(f"the service answered {len(results)} results for {len(ops)} ops")
    out: list[Result] = []
    for op, r in zip(ops, results, strict=True):
        if isinstance(op, GetOp):
            out.append(_item(r["item"]) if r.get("item") else None)
        elif isinstance(op, SearchOp):
            out.append([_item(w, SearchItem) for w in r.get("items") or []])
        elif isinstance(op, ListNamespacesOp):
            out.append([tuple(ns) for ns in r.get("namespaces") or []])
        else:
            out.append(None)
    return out
