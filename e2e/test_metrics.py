"""Metrics move as a graph run says they should."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import GetOp, PutOp
from typing_extensions import TypedDict

from saver_client import HTTPSaver, HTTPStore, InvalidRequestError

PUT = "/v1/threads/:thread_id/checkpoints"
WRITES = "/v1/threads/:thread_id/writes"
GET = "/v1/threads/:thread_id/checkpoint"


class State(TypedDict):
    n: int


def _scrape(url: str) -> dict[tuple[str, str, str], float]:
    """saver_http_requests_total by (route, method, status)."""
    out: dict[tuple[str, str, str], float] = {}
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        m = re.match(r'saver_http_requests_total\{method="(\w+)",route="([^"]+)",status="(\d+)"\} (\S+)', line)
        if m:
            out[(m.group(2), m.group(1), m.group(3))] = float(m.group(4))
    return out


def _store_ops(url: str) -> dict[str, float]:
    """saver_store_ops_total by kind."""
    out: dict[str, float] = {}
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        m = re.match(r'saver_store_ops_total\{kind="(\w+)"\} (\S+)', line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def test_store_ops_are_counted_by_kind(saver_url: str) -> None:
    ns = ("metrics", uuid.uuid4().hex)
    before = _store_ops(saver_url)
    with HTTPStore(saver_url) as store:
        store.put(ns, "a", {"n": 1})
        store.put(ns, "b", {"n": 2})
        assert store.get(ns, "a") is not None
        store.delete(ns, "b")
        assert [i.key for i in store.search(ns)] == ["a"]
        assert ns in store.list_namespaces(prefix=ns)
        # A batch the service refuses runs no op and counts none.
        with pytest.raises(InvalidRequestError):
            store.batch([GetOp(ns, "a"), PutOp(ns, "c", {"n": 3}), PutOp(("", "x"), "k", {"n": 4})])
    after = _store_ops(saver_url)
    moved = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert moved == {"get": 1, "put": 2, "delete": 1, "search": 1, "list_namespaces": 1}
    # The label has those five values only.
    assert set(after) <= {"get", "put", "delete", "search", "list_namespaces"}


def test_counters_follow_a_graph_run(saver: HTTPSaver, saver_url: str, thread_id: str) -> None:
    b = StateGraph(State)
    for name in ("a", "b", "c"):
        b.add_node(name, lambda s: {"n": s["n"] + 1})
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    b.add_edge("c", END)
    graph = b.compile(checkpointer=saver)

    before = _scrape(saver_url)
    config: Any = {"configurable": {"thread_id": thread_id}}
    assert graph.invoke({"n": 0}, config, durability="sync") == {"n": 3}
    after = _scrape(saver_url)

    def moved(route: str, method: str, status: str) -> float:
        return after.get((route, method, status), 0) - before.get((route, method, status), 0)

    # START -> a -> b -> c: one get on entry, one put for the input and one per
    # step (4 steps: __start__, a, b, c), one put_writes per task (4).
    assert moved(GET, "GET", "404") == 1  # a new thread has no checkpoint yet
    assert moved(PUT, "POST", "200") == 5
    assert moved(WRITES, "POST", "204") == 4
    text = httpx.get(f"{saver_url}/metrics").text
    assert f'saver_http_request_duration_seconds_count{{method="POST",route="{PUT}"}}' in text
    assert thread_id not in text  # labels carry routes, never ids
