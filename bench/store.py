"""The Store benchmark (LangGraph's `BaseStore`, long-term memory): the same
ops through BaseStore's public API (put, get, search) on every store, side by
side in one run: our HTTPStore on the embedded and on the DynamoDB store,
InMemoryStore, SqliteStore (sqlite-vec) and PostgresStore (no pgvector here:
compared on the ops without a query).

Each store gets a namespace of `ns_items` items, each a small JSON value
with one text embedded (384 dims). The vectors are random but seeded and
computed before anything is timed; every store with an index is given the
same `IndexConfig` whose `embed` looks them up, so the embedding costs the
same (nearly nothing) everywhere and the figures are the stores' own.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import workloads as wl

DIMS = 384
TAGS_PER_NS = 1000  # a filter on one tag matches ns_items / 1,000 items: 10 of 10,000
FILL_BATCH = 200  # puts per batch while filling (not timed)

# Display order and names of the stores compared.
STORES = {
    "ours_bolt": "HTTPStore (embedded)",
    "ours_dynamo": "HTTPStore (DynamoDB)",
    "memory": "InMemoryStore",
    "sqlite": "SqliteStore",
    "postgres": "PostgresStore",
}
# The stores that search by vector (PostgresStore would need pgvector).
INDEXED = ("ours", "ours_bolt", "ours_dynamo", "memory", "sqlite")

OPS = ("get", "put", "put_plain", "search_filter", "search_query", "search_filter_plain")


class Vectors:
    """Seeded random vectors, one per document text "d<i>" and per query
    text "q<j>", computed once; `embed` is a lookup."""

    def __init__(self, docs: int, queries: int, seed: int = 19) -> None:
        rng = np.random.default_rng(seed)
        self.docs = rng.standard_normal((docs, DIMS), dtype=np.float32)
        self.queries = rng.standard_normal((queries, DIMS), dtype=np.float32)

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for t in texts:
            table = self.docs if t[0] == "d" else self.queries
            out.append(table[int(t[1:])].tolist())
        return out

    def index(self) -> dict[str, Any]:
        return {"dims": DIMS, "embed": self.embed, "fields": ["text"]}


def value(i: int, rng: random.Random) -> dict[str, Any]:
    """Item i: its text (embedded), a tag shared by one item in 1,000, a
    number and ~100 bytes of words: about 170 bytes of JSON."""
    return {"text": f"d{i}", "tag": f"t{i % TAGS_PER_NS}", "n": i, "note": wl.text(rng, 100)}


def one_value(i: int) -> dict[str, Any]:
    return value(i, random.Random(i))


# -- the stores -------------------------------------------------------------------------


def build_stores(services: dict[str, Any], pg_dsn: str, run_dir: Path, vectors: Vectors) -> tuple[dict[str, Any], list[Callable[[], None]]]:
    """The five stores, and what closes them. `services` are our running
    services (the harness's), by the checkpoint savers' names."""
    from langgraph.store.memory import InMemoryStore
    from langgraph.store.postgres import PostgresStore
    from langgraph.store.sqlite import SqliteStore
    from psycopg import Connection
    from psycopg.rows import dict_row

    from saver_client import HTTPStore

    closers: list[Callable[[], None]] = []
    stores: dict[str, Any] = {}
    for name in ("ours_bolt", "ours_dynamo", "ours_dynamo_counted"):
        s = HTTPStore(services[name].url, index=vectors.index())
        closers.append(s.close)
        stores[name] = s
    stores["memory"] = InMemoryStore(index=vectors.index())

    path = run_dir / "sqlite" / "store.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    # As SqliteStore.from_conn_string opens it, but with pysqlite3: sqlite-vec
    # is a loadable extension, which a Python built without loadable
    # extensions (pyenv's default) cannot load with its own sqlite3.
    import pysqlite3.dbapi2 as sqlite3

    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    closers.append(conn.close)
    # SqliteStore reads its fields from "text_fields" (langgraph-checkpoint-sqlite
    # 3.1.2), where the other stores read "fields"; without it, it embeds the
    # whole value.
    stores["sqlite"] = SqliteStore(conn, index={**vectors.index(), "text_fields": ["text"]})  # type: ignore[arg-type, typeddict-unknown-key]
    stores["sqlite"].setup()

    # As PostgresStore.from_conn_string opens it (one connection, no pipeline).
    pg = Connection.connect(pg_dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    closers.append(pg.close)
    stores["postgres"] = PostgresStore(pg)
    stores["postgres"].setup()
    return stores, closers


# -- filling ------------------------------------------------------------------------------


def fill(store: Any, ns: tuple[str, ...], start: int, stop: int, seed: int, index: bool = True) -> None:
    """Put items start..stop-1 into ns, FILL_BATCH a batch (not timed);
    with index False, without vectors (as PostgresStore keeps them here)."""
    from langgraph.store.base import PutOp

    rng = random.Random(seed * 1_000_003 + start)
    for lo in range(start, stop, FILL_BATCH):
        store.batch([PutOp(ns, f"k{i}", value(i, rng), index=None if index else False)
                     for i in range(lo, min(stop, lo + FILL_BATCH))])


def plain(ns: tuple[str, ...]) -> tuple[str, ...]:
    """The namespace beside ns whose items have no vectors."""
    return (*ns[:-1], "plain")


# -- timing -------------------------------------------------------------------------------


def stats(samples: list[float]) -> dict[str, float]:
    ms = [s * 1e3 for s in samples]
    return {"p50_ms": wl.median(ms), "p99_ms": wl.pct(ms, 0.99), "n": len(ms)}


def interleaved(calls: dict[str, Callable[[int], Any]], n: int, budget_s: float,
                at_least: int = 3) -> dict[str, list[float]]:
    """Seconds per call of each store's call(0), call(1), ...: the stores
    take turns call by call, so that a burst of load from another process
    hits them alike. A store stops after n calls, or once its calls have
    taken budget_s (at least at_least calls): searches that read a whole
    namespace on a slow store."""
    names = list(calls)
    out: dict[str, list[float]] = {name: [] for name in names}
    spent = dict.fromkeys(names, 0.0)
    for i in range(n):
        k = i % len(names)
        for name in names[k:] + names[:k]:
            if len(out[name]) >= at_least and spent[name] > budget_s:
                continue
            t0 = time.perf_counter()
            calls[name](i)
            dt = time.perf_counter() - t0
            out[name].append(dt)
            spent[name] += dt
    return out


def op_calls(store: Any, name: str, ns: tuple[str, ...], size: int, n: int, seed: int) -> dict[str, Callable[[int], Any]]:
    """One store's calls of each op on its filled namespace of `size` items:
    get and put (an update: a new note, the same text) of random keys, a
    search filtered on one tag (size / 1,000 items match; 10 returned) and
    a semantic search (top 10) with a precomputed query, for the stores
    with an index, and the filtered search again in the namespace beside
    (`plain`) whose items have no vectors, as PostgresStore's have none
    here. The same keys, tags and queries on every store."""
    rng = random.Random(seed)
    keys = [rng.randrange(size) for _ in range(n)]
    tags = [rng.randrange(TAGS_PER_NS) for _ in range(n)]
    queries = [rng.randrange(1000) for _ in range(n)]
    vrng = random.Random(seed + 1)
    puts = [value(k, vrng) for k in keys]

    def get(i: int) -> None:
        if store.get(ns, f"k{keys[i]}") is None:
            raise RuntimeError(f"{name}: k{keys[i]} missing")

    def put(i: int) -> None:
        store.put(ns, f"k{keys[i]}", puts[i])

    def put_plain(i: int) -> None:
        # The same update in the namespace whose items have no vectors: the
        # put PostgresStore makes here (it has no index), like for like.
        store.put(plain(ns), f"k{keys[i]}", puts[i], index=False)

    def search_filter(i: int) -> None:
        got = store.search(ns, filter={"tag": f"t{tags[i]}"}, limit=10)
        if len(got) != min(10, size // TAGS_PER_NS):
            raise RuntimeError(f"{name}: filtered search returned {len(got)} items")

    def search_query(i: int) -> None:
        got = store.search(ns, query=f"q{queries[i]}", limit=10)
        if len(got) != 10:
            raise RuntimeError(f"{name}: semantic search returned {len(got)} items")

    def search_filter_plain(i: int) -> None:
        got = store.search(plain(ns), filter={"tag": f"t{tags[i]}"}, limit=10)
        if len(got) != min(10, size // TAGS_PER_NS):
            raise RuntimeError(f"{name}: filtered search returned {len(got)} items")

    calls = {"get": get, "put": put, "put_plain": put_plain, "search_filter": search_filter, "search_filter_plain": search_filter_plain}
    if name in INDEXED:
        calls["search_query"] = search_query
    return calls


def store_round(stores: dict[str, Any], ns: dict[str, tuple[str, ...]], size: int, n_point: int, n_search: int,
                budget_s: float, seed: int, ops: tuple[str, ...] = OPS) -> dict[str, dict[str, dict[str, float]]]:
    """p50 and p99 of each op on each store, the stores interleaved call by
    call: {store: {op: stats}}."""
    per = {name: op_calls(s, name, ns[name], size, max(n_point, n_search), seed) for name, s in stores.items()}
    out: dict[str, dict[str, dict[str, float]]] = {name: {} for name in stores}
    for op in ops:
        n = n_point if op in ("get", "put", "put_plain") else n_search
        calls = {name: c[op] for name, c in per.items() if op in c}
        for name, samples in interleaved(calls, n, budget_s).items():
            out[name][op] = stats(samples)
    return out


def semantic_p50(store: Any, ns: tuple[str, ...], n: int, budget_s: float, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    queries = [rng.randrange(1000) for _ in range(n)]
    return stats(interleaved({"s": lambda i: store.search(ns, query=f"q{queries[i]}", limit=10)}, n, budget_s)["s"])
