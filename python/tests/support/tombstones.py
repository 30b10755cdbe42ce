"""Runs whose thread is deleted under them (LangGraph issue 7206), for the
tombstone tests: the client's (python/tests/test_tombstones.py) and across
replicas (e2e/test_tombstone_replicas.py)."""

from __future__ import annotations

import operator
import threading
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from saver_client import GoneError, HTTPSaver

# Bound on waiting for the run to reach its node; generous for small CI machines.
WAIT = 30.0


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def build(saver: HTTPSaver, entered: threading.Event, release: threading.Event) -> Any:
    """A graph of two nodes; the first waits for release when asked to."""

    def first(state: State, config: RunnableConfig) -> dict[str, list[str]]:
        if config["configurable"].get("hold"):
            entered.set()
            assert release.wait(WAIT), "never released"
        return {"log": ["first"]}

    def second(state: State) -> dict[str, list[str]]:
        return {"log": ["second"]}

    builder = StateGraph(State)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    return builder.compile(checkpointer=saver)


def thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def listed(saver: HTTPSaver, thread_id: str) -> list[Any]:
    return list(saver.list(thread_config(thread_id)))


def late_run(run_on: HTTPSaver, delete_on: HTTPSaver, thread_id: str) -> BaseException | None:
    """Start a run on run_on, delete its thread through delete_on while the
    run is inside its first node, let the node finish; return what the run
    raised."""
    entered, release = threading.Event(), threading.Event()
    graph = build(run_on, entered, release)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            # Durability "sync": the checkpoints before the node are stored
            # before it runs, so the deletion finds them.
            graph.invoke({"log": ["input"]}, {"configurable": {"thread_id": thread_id, "hold": True}}, durability="sync")
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            raised.append(e)

    t = threading.Thread(target=run)
    t.start()
    assert entered.wait(WAIT), "the run never reached its node"
    assert listed(delete_on, thread_id), "the run stored nothing before its node"
    delete_on.delete_thread(thread_id)
    release.set()
    t.join(WAIT)
    assert not t.is_alive(), "the run did not end"
    return raised[0] if raised else None


def check_late_writes(run_on: HTTPSaver, delete_on: HTTPSaver, thread_id: str) -> None:
    err = late_run(run_on, delete_on, thread_id)
    assert isinstance(err, GoneError), f"the late run raised {err!r}, want GoneError"
    assert err.status == 410 and err.code == "gone"
    for s in (run_on, delete_on):
        assert listed(s, thread_id) == [], "the deleted thread came back"
        assert s.get_tuple(thread_config(thread_id)) is None

    # A fresh run on the same thread id starts over and is stored.
    graph = build(run_on, threading.Event(), threading.Event())
    out = graph.invoke({"log": ["again"]}, thread_config(thread_id))
    assert out["log"] == ["again", "first", "second"]
    assert len(listed(delete_on, thread_id)) == 4  # input, first, second, and the loop's start
