"""HTTPStore against InMemoryStore, op by op, and in a real graph.

The same randomized op sequences run on HTTPStore (the service) and on
LangGraph's InMemoryStore, and every result is compared. Where the service
follows PostgresStore rather than InMemoryStore (docs/api.md), the reference
is adjusted, and each adjustment says why:

- A search without a query is ordered newest update first (PostgresStore's
  ORDER BY updated_at DESC), ties by namespace then key; InMemoryStore keeps
  insertion order. The reference's full result is re-sorted by the batch each
  item was last put in.
- A search with a query returns only items with vectors (PostgresStore joins
  its vectors table); InMemoryStore fills a short page with unscored items.
- A put replaces the item's vectors; InMemoryStore (and PostgresStore) keep
  the vectors of fields the new value no longer embeds, so the reference
  deletes a key before putting it.
- created_at is kept across updates (PostgresStore); InMemoryStore resets it.
- list_namespaces lists only namespaces that hold items (PostgresStore);
  InMemoryStore also lists those a get touched or whose items were deleted.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import random
import time
from typing import Any

import pytest
from langgraph.config import get_store
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore
from typing_extensions import TypedDict

from saver_client import HTTPSaver, HTTPStore, InvalidRequestError, NoRouteError

DIMS = 8
WORDS = ["apple", "pizza", "sushi", "river", "mountain", "code", "music", "tea", "rain", "book"]

def fake_embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: each word adds a direction from its hash."""
    out = []
    for text in texts:
        v = [0.0] * DIMS
        for word in text.split():
            h = hashlib.sha256(word.encode()).digest()
            for i in range(DIMS):
                v[i] += (h[i] - 127.5) / 127.5
        out.append(v)
    return out


INDEX: Any = {"dims": DIMS, "embed": fake_embed, "fields": ["text"]}
# TTLs (minutes) of the random puts: one no run of the test outlives, and
# one that has run out by the next batch (Model.wait_out).
LONG_TTL = 60.0
SHORT_TTL = 0.0002


@pytest.fixture
def store(saver_url: str) -> Any:
    with HTTPStore(saver_url, index=INDEX) as s:
        yield s


def test_route_served(saver_url: str) -> None:
    """Every store serves the Store's route, the DynamoDB one included."""
    with HTTPStore(saver_url) as s:
        try:
            got = s.get((f"fresh-{os.urandom(4).hex()}",), "k")
        except NoRouteError:
            pytest.fail("the service does not serve POST /v1/store/batch")
        assert got is None


class Model:
    """Random ops in a tenant-private root label, and what the reference
    needs to follow the service's ordering rules."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.root = f"r{seed}-{os.urandom(4).hex()}"
        self.put_batch: dict[tuple[tuple[str, ...], str], int] = {}
        self.batch_no = 0
        # Keys whose last put had a TTL so short that it has run out by the
        # next batch (see wait_out): gone from the reference then.
        self.ephemeral: set[tuple[tuple[str, ...], str]] = set()
        self.expired = 0
        self.last_batch = 0.0

    def ns(self) -> tuple[str, ...]:
        return (self.root, *self.rng.choice([("a",), ("a", "b"), ("b",), ("a", "c", "d")]))

    def value(self) -> dict[str, Any]:
        r = self.rng
        return {
            "text": " ".join(r.choice(WORDS) for _ in range(r.randint(1, 3))),
            "n": r.choice([0, 1, 2, 2.5, 3, True]),
            "tag": r.choice(["x", "y"]),
            "meta": {"k": r.choice(["p", "q"]), "list": [1, r.choice([2, 3])]},
        }

    def op(self) -> Op:
        r = self.rng
        kind = r.choices(["put", "delete", "get", "search", "list"], [5, 1, 2, 4, 2])[0]
        key = f"k{r.randint(0, 7)}"
        if kind == "put":
            # No TTL, one that outlives the test (refreshes of it change
            # nothing a read sees), or one that has run out by the next batch.
            ttl = r.choice([None, None, LONG_TTL, SHORT_TTL])
            return PutOp(self.ns(), key, self.value(), index=r.choice([None, None, False, ["text"], ["tag"]]), ttl=ttl)
        if kind == "delete":
            return PutOp(self.ns(), key, None)
        if kind == "get":
            return GetOp(self.ns(), key, refresh_ttl=r.choice([True, False]))
        if kind == "search":
            filt = r.choice(
                [
                    None,
                    {"tag": "x"},
                    {"n": {"$gte": 2}},
                    {"n": {"$gt": 0, "$lt": 3}},
                    {"n": 1},
                    {"meta": {"k": "p"}},
                    {"meta": {"list": [1, 2]}},
                    {"tag": {"$ne": "y"}},
                ]
            )
            prefix = r.choice([(self.root,), (self.root, "a"), (self.root, "a", "b"), (self.root, "z")])
            query = r.choice([None, " ".join(r.choice(WORDS) for _ in range(2))])
            return SearchOp(prefix, filt, r.randint(1, 6), r.randint(0, 3), query, refresh_ttl=r.choice([True, False]))
        conds = r.choice(
            [
                (MatchCondition("prefix", (self.root,)),),
                (MatchCondition("prefix", (self.root, "*", "b")), MatchCondition("suffix", ("b",))),
                (MatchCondition("prefix", (self.root,)), MatchCondition("suffix", ("*", "d"))),
                (MatchCondition("prefix", (self.root, "a")),),
            ]
        )
        return ListNamespacesOp(conds, r.choice([None, 1, 2, 3]), r.randint(1, 5), r.randint(0, 2))

    def batch(self) -> list[Op]:
        self.batch_no += 1
        return [self.op() for _ in range(self.rng.randint(1, 4))]

    def wait_out(self) -> None:
        """Lets SHORT_TTL run out since the last batch was answered: a
        clock to pass, not an event to poll for."""
        left = self.last_batch + SHORT_TTL * 60 - time.monotonic()
        if self.ephemeral and left > 0:
            time.sleep(left)

    def answered(self) -> None:
        self.last_batch = time.monotonic()

    def apply_to_reference(self, ref: InMemoryStore, ops: list[Op]) -> list[Any]:
        """The reference's results: reads in one batch (they see the state
        before the batch, as the service's do), then the puts, each key
        deleted first so that its old vectors go (see the module's doc).
        Items put with SHORT_TTL in an earlier batch have expired: they go
        first."""
        if self.ephemeral:
            self.expired += len(self.ephemeral)
            ref.batch([PutOp(ns, k, None) for ns, k in self.ephemeral])
            for k in self.ephemeral:
                self.put_batch.pop(k, None)
            self.ephemeral.clear()
        reads: list[Op] = []
        for op in ops:
            if isinstance(op, SearchOp):
                reads.append(SearchOp(op.namespace_prefix, op.filter, 10_000, 0, op.query))
            elif isinstance(op, GetOp):
                reads.append(GetOp(op.namespace, op.key))
            elif not isinstance(op, PutOp):
                reads.append(op)
        results = iter([self.read(ref, op) for op in reads])
        out = [None if isinstance(op, PutOp) else next(results) for op in ops]
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp):
                out[i] = self.page(op, out[i])
        puts = {(op.namespace, op.key): op for op in ops if isinstance(op, PutOp)}
        ref.batch([PutOp(ns, k, None) for ns, k in puts])
        # One put a batch: InMemoryStore embeds a text two puts of a batch
        # share once but counts it twice, and raises.
        for op in puts.values():
            ref.batch([op])
        for k, op in puts.items():
            if op.value is None:
                self.put_batch.pop(k, None)
            else:
                self.put_batch[k] = self.batch_no
            if op.value is not None and op.ttl == SHORT_TTL:
                self.ephemeral.add(k)
        return out

    @staticmethod
    def read(ref: InMemoryStore, op: Op) -> Any:
        """One read on the reference. InMemoryStore lists namespaces that
        hold no item (one a get touched, or whose items were deleted: its
        dict of namespaces is a defaultdict); PostgresStore lists only those
        with items, as the service does, so the empty ones go first."""
        for ns in [ns for ns, items in ref._data.items() if not items]:
            del ref._data[ns]
        return ref.batch([op])[0]

    def page(self, op: SearchOp, items: list[Any]) -> list[Any]:
        """The reference's full search ordered and paged as the service does."""
        if op.query:
            items = [it for it in items if it.score is not None]
            items.sort(key=lambda it: (-round(it.score, 6), -self.put_batch[(it.namespace, it.key)], it.namespace, it.key))
        else:
            items.sort(key=lambda it: (-self.put_batch[(it.namespace, it.key)], it.namespace, it.key))
        return items[op.offset : op.offset + op.limit]


def compare(ops: list[Op], got: list[Any], want: list[Any]) -> None:
    assert len(got) == len(ops)
    for op, g, w in zip(ops, got, want, strict=True):
        where = f"{op!r}"
        if isinstance(op, PutOp):
            assert g is None, where
        elif isinstance(op, GetOp):
            assert (g is None) == (w is None), where
            if g is not None:
                assert (g.namespace, g.key, g.value) == (w.namespace, w.key, w.value), where
                assert g.created_at <= g.updated_at, where
        elif isinstance(op, SearchOp):
            assert [(i.namespace, i.key) for i in g] == [(i.namespace, i.key) for i in w], where
            assert [i.value for i in g] == [i.value for i in w], where
            for gi, wi in zip(g, w, strict=True):
                if op.query:
                    assert gi.score == pytest.approx(wi.score, abs=1e-5), where
                else:
                    assert gi.score is None, where
        else:
            assert g == w, where


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_ops_match_in_memory_store(store: HTTPStore, seed: int) -> None:
    model, ref = Model(seed), InMemoryStore(index=INDEX)
    for _ in range(60):
        ops = model.batch()
        model.wait_out()
        compare(ops, store.batch(ops), model.apply_to_reference(ref, ops))
        model.answered()
    assert model.expired > 0, "no item of the sequence expired: the TTL rules went untested"


@pytest.mark.parametrize("seed", [11, 12])
def test_random_ops_match_in_memory_store_async(saver_url: str, seed: int) -> None:
    async def run() -> None:
        async with HTTPStore(saver_url, index=INDEX) as store:
            model, ref = Model(seed), InMemoryStore(index=INDEX)
            for _ in range(60):
                ops = model.batch()
                model.wait_out()
                compare(ops, await store.abatch(ops), model.apply_to_reference(ref, ops))
                model.answered()
            assert model.expired > 0, "no item of the sequence expired: the TTL rules went untested"

    asyncio.run(run())


def test_methods_and_created_at(store: HTTPStore) -> None:
    ns = ("users", os.urandom(4).hex(), "memories")
    store.put(ns, "m1", {"text": "likes pizza", "n": 1})
    first = store.get(ns, "m1")
    assert first is not None and first.value == {"text": "likes pizza", "n": 1}
    store.put(ns, "m1", {"text": "likes sushi", "n": 2})
    second = store.get(ns, "m1")
    assert second is not None and second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    hits = store.search(ns[:2], query="likes sushi")
    assert [h.key for h in hits] == ["m1"] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert store.list_namespaces(prefix=ns[:2]) == [ns]
    store.delete(ns, "m1")
    assert store.get(ns, "m1") is None


def test_bad_input_is_refused(store: HTTPStore) -> None:
    ns = ("bad", os.urandom(4).hex())
    with pytest.raises(InvalidRequestError, match=r"ops\[1\]: filter\.n\.\$gt"):
        store.batch([PutOp(ns, "kept", {"a": 1}), SearchOp(ns, {"n": {"$gt": "x"}})])
    assert store.get(ns, "kept") is None
    unindexed = HTTPStore(store.url)
    with pytest.raises(InvalidRequestError, match="key takes"):
        unindexed.put(ns, "!" * 200, {"a": 1})


def test_ttl_and_refresh(saver_url: str) -> None:
    ns = ("ttl", os.urandom(4).hex())
    with HTTPStore(saver_url, ttl={"default_ttl": 0.05, "refresh_on_read": False}) as store:
        store.put(ns, "refreshed", {"a": 1})
        store.put(ns, "left", {"a": 2})
        store.put(ns, "forever", {"a": 3}, ttl=None)
        deadline = time.monotonic() + 4.5  # past the 3 s TTL
        while time.monotonic() < deadline:
            assert store.get(ns, "refreshed", refresh_ttl=True) is not None
            time.sleep(0.5)
        assert store.get(ns, "left") is None
        assert store.get(ns, "forever") is not None
        # A refresh moves the expiry, not updated_at: newest put first.
        assert [i.key for i in store.search(ns, refresh_ttl=False)] == ["forever", "refreshed"]


class State(TypedDict):
    user: str
    text: str
    found: list[str]


def remember(state: State, runtime: Runtime) -> dict[str, Any]:
    assert runtime.store is not None
    runtime.store.put(("users", state["user"], "memories"), f"m{len(state['text'])}", {"text": state["text"]})
    return {}


def recall(state: State) -> dict[str, Any]:
    store = get_store()  # the other way a node reaches the graph's store
    hits = store.search(("users", state["user"], "memories"), query=state["text"], limit=3)
    return {"found": [h.value["text"] for h in hits]}


def test_graph_nodes_use_the_store(saver_url: str) -> None:
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    user = os.urandom(4).hex()
    with HTTPSaver(saver_url) as saver, HTTPStore(saver_url, index=INDEX) as store:
        graph = builder.compile(checkpointer=saver, store=store)
        for i, text in enumerate(["likes pizza", "drinks green tea daily"]):
            cfg = {"configurable": {"thread_id": f"t-{user}-{i}"}}
            out = graph.invoke({"user": user, "text": text, "found": []}, cfg)
        # The second thread found what the first remembered: the store spans threads.
        assert set(out["found"]) == {"likes pizza", "drinks green tea daily"}
        assert out["found"][0] == "drinks green tea daily"

    async def arun() -> list[str]:
        async with HTTPSaver(saver_url) as saver, HTTPStore(saver_url, index=INDEX) as store:
            graph = builder.compile(checkpointer=saver, store=store)
            cfg = {"configurable": {"thread_id": f"t-{user}-async"}}
            out = await graph.ainvoke({"user": user, "text": "likes pizza", "found": []}, cfg)
            return out["found"]

    assert asyncio.run(arun())[0] == "likes pizza"


def test_vectors_go_as_float32_bytes(store: HTTPStore) -> None:
    """A put's vectors and a search's query travel as little-endian float32s
    (a msgpack bin); a number float32 cannot hold goes as a list, which the
    service refuses by name, and nothing of its batch is stored."""
    import struct

    from saver_client.store import _vector

    v = [0.5, -0.25, 3, 1e-3]
    assert _vector(v) == struct.pack("<4f", *v)
    assert struct.unpack("<4f", _vector(v)) == struct.unpack("<4f", struct.pack("<4f", *v))
    assert _vector([1.0, 1e39]) == [1.0, 1e39]
    with pytest.raises(TypeError):
        _vector([1.0, None])  # type: ignore[list-item]
    ns = ("bytes", os.urandom(4).hex())
    ops = [PutOp(ns, "a", {"text": "pizza tea"}), SearchOp(ns, query="pizza")]
    texts_of, texts, queries = store._texts(ops)
    query_vectors = {q: fake_embed([q])[0] for q in queries}
    body = store._body(ops, texts_of, texts, fake_embed(texts), query_vectors)
    (sent,) = body["ops"][0]["vectors"]
    assert isinstance(sent, bytes) and len(sent) == 4 * DIMS
    assert isinstance(body["ops"][1]["query"], bytes)
    huge = [1e39] * DIMS
    with HTTPStore(store.url, index={**INDEX, "embed": lambda texts: [huge for _ in texts]}) as s:
        refused = r"ops\[1\]: vectors\[0\] holds a NaN or infinite"
        with pytest.raises(InvalidRequestError, match=refused):
            s.batch([PutOp(ns, "kept", {"a": 1}, index=False), PutOp(ns, "b", {"text": "rain"})])
        assert s.get(ns, "kept") is None


def test_cosine_of_fake_embedding_is_not_degenerate() -> None:
    # The comparison above needs distinct texts to score apart.
    a, b = fake_embed(["pizza", "sushi"])
    cos = sum(x * y for x, y in zip(a, b, strict=True)) / math.hypot(*a) / math.hypot(*b)
    assert abs(cos) < 0.99


def test_each_distinct_text_is_embedded_once(saver_url: str) -> None:
    """A batch embeds each distinct text of its puts once, and only the
    texts of the last put of a key (the one the service keeps), sync and
    async; every put still gets the vector of each of its texts."""
    docs: list[str] = []

    def counting_embed(texts: list[str]) -> list[list[float]]:
        docs.extend(texts)
        return fake_embed(texts)

    def ops(ns: tuple[str, ...]) -> list[Op]:
        return [
            PutOp(ns, "a", {"text": "pizza tea"}),
            PutOp(ns, "b", {"text": "pizza tea"}),
            PutOp(ns, "c", {"text": "rain"}),
            PutOp(ns, "c", {"text": "book"}),
            PutOp(ns, "d", {"text": "pizza tea", "title": "tea"}, index=["text", "title"]),
        ]

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
            sum(x * x for x in a) * sum(y * y for y in b)
        )

    with HTTPStore(saver_url, index={**INDEX, "embed": counting_embed}) as s:
        for run in ("sync", "async"):
            ns = (f"dedupe-{run}-{os.urandom(4).hex()}",)
            docs.clear()
            if run == "sync":
                s.batch(ops(ns))
            else:
                asyncio.run(s.abatch(ops(ns)))
            assert sorted(docs) == ["book", "pizza tea", "tea"], run
            (tea,) = fake_embed(["tea"])
            got = {it.key: it.score for it in s.search(ns, query="tea", limit=10)}
            (pizza_tea, book) = fake_embed(["pizza tea", "book"])
            want = {"a": cosine(tea, pizza_tea), "b": cosine(tea, pizza_tea), "c": cosine(tea, book), "d": 1.0}
            assert got.keys() == want.keys(), run
            for k, score in want.items():
                assert got[k] == pytest.approx(score, abs=1e-6), (run, k)
