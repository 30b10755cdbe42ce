"""A graph to put load on the service, and driving a run of it through failures."""

from __future__ import annotations

import operator
import threading
from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from saver_client.errors import SaverConnectionError, UnavailableError


class RunState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    data: str


def load_graph(
    saver: Any,
    *,
    steps: int = 10,
    payload: int = 64,
    calls: Counter[str] | None = None,
    before: Callable[[str], None] | None = None,
) -> Any:
    """A chain of `steps` nodes with a fan-out of three parallel nodes in the
    middle; each node appends its name to `log`, and chain nodes put
    `payload` bytes in `data` (a new blob every step). `before(name)` runs
    at the start of every node."""
    lock = threading.Lock()

    def node(name: str, chain: bool) -> Callable[[RunState], RunState]:
        def run(state: RunState) -> RunState:
            if before is not None:
                before(name)
            if calls is not None:
                with lock:
                    calls[name] += 1
            out: RunState = {"log": [name]}
            if chain:
                out["data"] = (name * payload)[:payload]
            return out

        return run

    g = StateGraph(RunState)
    for n in chain_names(steps):
        g.add_node(n, node(n, True))  # type: ignore[call-overload]
    for n in FAN:
        g.add_node(n, node(n, False))  # type: ignore[call-overload]
    wire_chain(g, steps)
    return g.compile(checkpointer=saver)


FAN = ("f0", "f1", "f2")
"""The fan-out of a load graph: three nodes run in parallel mid-chain."""


def chain_names(steps: int) -> list[str]:
    """The chain's nodes of a load graph of `steps` steps."""
    return [f"s{i:02d}" for i in range(steps)]


def wire_chain(g: StateGraph[Any], steps: int) -> None:
    """Wires the load graphs' shape, whose nodes g has: a chain of `steps`
    nodes, with FAN run in parallel after the middle one."""
    names = chain_names(steps)
    g.add_edge(START, names[0])
    mid = names[steps // 2]
    for a, b in zip(names, names[1:]):
        if a == mid:
            for f in FAN:
                g.add_edge(a, f)
            g.add_edge(list(FAN), b)
        else:
            g.add_edge(a, b)
    g.add_edge(names[-1], END)


def expected_run(steps: int = 10, payload: int = 64) -> dict[str, Any]:
    """The final state of load_graph, run on InMemorySaver."""
    graph = load_graph(InMemorySaver(), steps=steps, payload=payload)
    out: dict[str, Any] = graph.invoke(
        {"log": ["in"]}, {"configurable": {"thread_id": "expected"}}, durability="sync"
    )
    return out


TRANSIENT = (SaverConnectionError, UnavailableError)


def drive(graph: Any, config: Any, inp: Any, max_resumes: int = 50) -> int:
    """Run the thread to completion, resuming from its last checkpoint after
    every transient failure; return how many times it resumed."""
    resumes = 0
    while True:
        try:
            state = graph.get_state(config)
            if state.created_at is None:
                graph.invoke(inp, config, durability="sync")
            elif state.tasks:
                # Not `state.next`: a task whose writes were stored before
                # the failure is left out of next, though its step still has
                # to be finished.
                graph.invoke(None, config, durability="sync")
            else:
                return resumes
        except TRANSIENT:
            resumes += 1
            if resumes > max_resumes:
                raise
