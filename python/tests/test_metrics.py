"""Metrics move as a graph run says they should."""

from __future__ import annotations

import re
from typing import Any

import httpx
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from saver_client import HTTPSaver

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
