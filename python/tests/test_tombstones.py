"""Deleted threads stay deleted (LangGraph issue 7206).

A run is inside a node when its thread is deleted; when the node finishes,
LangGraph puts the node's writes and the next checkpoint with the config it
held from before the deletion. Without tombstones those late writes bring
the deleted thread back. The service refuses them with 410 `gone` (the
client raises GoneError), the thread stays empty, and a fresh run on the
same thread id works. On DynamoDB the same holds across replicas: one
service deletes, another receives the late writes.
"""

from __future__ import annotations

import asyncio
import operator
import threading
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from saver_client import GoneError, HTTPSaver

from support.figures import dynamodb_only
from support.processes import ServiceProcess

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


def test_late_run_after_delete_thread(saver: HTTPSaver, thread_id: str) -> None:
    check_late_writes(saver, saver, thread_id)


def test_late_put_and_put_writes_with_old_config(saver: HTTPSaver, thread_id: str) -> None:
    graph = build(saver, threading.Event(), threading.Event())
    graph.invoke({"log": ["input"]}, thread_config(thread_id))
    old = graph.get_state(thread_config(thread_id)).config
    saver.delete_thread(thread_id)

    with pytest.raises(GoneError) as put_err:
        saver.put(old, empty_checkpoint(), {"source": "loop", "step": 3, "parents": {}}, {})
    assert "was deleted" in put_err.value.message
    with pytest.raises(GoneError):
        saver.put_writes(old, [("log", ["late"])], "late-task")

    async def async_calls() -> None:
        with pytest.raises(GoneError):
            await saver.aput(old, empty_checkpoint(), {"source": "loop", "step": 3, "parents": {}}, {})
        with pytest.raises(GoneError):
            await saver.aput_writes(old, [("log", ["late"])], "late-task")

    asyncio.run(async_calls())
    assert listed(saver, thread_id) == []

    # A put without a parent (a fresh run) is stored, and so is its next step.
    fresh = saver.put(thread_config(thread_id), empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {})
    saver.put_writes(fresh, [("log", ["fresh"])], "task")
    saver.put(fresh, empty_checkpoint(), {"source": "loop", "step": 0, "parents": {}}, {})
    assert len(listed(saver, thread_id)) == 2


def test_late_run_after_delete_for_runs(saver: HTTPSaver, thread_id: str) -> None:
    graph = build(saver, threading.Event(), threading.Event())
    run = f"{thread_id}-run"
    # As Agent Server runs do: run_id in configurable lands in the metadata.
    graph.invoke({"log": ["input"]}, {"configurable": {"thread_id": thread_id, "run_id": run}})
    old = graph.get_state(thread_config(thread_id)).config
    saver.delete_for_runs([run])
    assert listed(saver, thread_id) == []
    with pytest.raises(GoneError):
        saver.put(old, empty_checkpoint(), {"source": "loop", "step": 3, "parents": {}}, {})
    with pytest.raises(GoneError):
        saver.put_writes(old, [("log", ["late"])], "late-task")
    assert listed(saver, thread_id) == []
    out = graph.invoke({"log": ["again"]}, thread_config(thread_id))
    assert out["log"] == ["again", "first", "second"]


@dynamodb_only
def test_replicas(spawn_service: Callable[..., ServiceProcess], thread_id: str) -> None:
    """Two services on one table: one deletes, the other gets the late writes."""
    a, b = spawn_service(), spawn_service()
    with HTTPSaver(a.url) as on_a, HTTPSaver(b.url) as on_b:
        check_late_writes(on_a, on_b, thread_id)
        check_late_writes(on_b, on_a, thread_id + "-2")
