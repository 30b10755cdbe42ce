"""Conflict detection: two writers on one thread, `HTTPSaver(detect_conflicts=True)`.

Run A reads the thread and stops inside its node; run B reads the same head,
runs to the end and moves the head; then A's node finishes and A puts its
next checkpoint as a child of the head it read. With detect_conflicts the
service refuses that put (409) and A fails with ConflictError, the thread
staying one line; by default A's checkpoint is stored beside B's, a fork
nobody was told about.
"""

from __future__ import annotations

import asyncio
import operator
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Annotated, Any, cast

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.base.id import uuid6
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from saver_client import ConflictError, HTTPSaver

# Bounds on waiting for the other run; generous because CI machines are small.
WAIT = 30.0


class State(TypedDict):
    log: Annotated[list[str], operator.add]


class Gate:
    """Holds run A inside its node until run B is done."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()


def build(saver: HTTPSaver, gate: Gate) -> Any:
    def work(state: State, config: RunnableConfig) -> dict[str, list[str]]:
        writer = config["configurable"].get("writer", "another")
        if writer == "a":
            gate.entered.set()
            assert gate.release.wait(WAIT), "run B never finished"
        return {"log": [f"worked by {writer}"]}

    builder = StateGraph(State)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    builder.add_edge("work", END)
    return builder.compile(checkpointer=saver)


def run(graph: Any, api: str, thread_id: str, writer: str) -> None:
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "writer": writer}}
    # Sync durability: a run's checkpoint is stored before its next step, so
    # B reads A's latest checkpoint for certain.
    if api == "invoke":
        graph.invoke({"log": [writer]}, config, durability="sync")
    else:
        asyncio.run(graph.ainvoke({"log": [writer]}, config, durability="sync"))


def interleave(url: str, api: str, thread_id: str, **saver_args: Any) -> BaseException | None:
    """Run A and B on one thread as the module doc says; return A's error."""
    gate = Gate()
    failure: list[BaseException] = []
    with HTTPSaver(url, **saver_args) as sa, HTTPSaver(url, **saver_args) as sb:

        def run_a() -> None:
            try:
                run(build(sa, gate), api, thread_id, "a")
            except BaseException as exc:  # handed to the test thread
                failure.append(exc)
            finally:
                gate.entered.set()  # never leave the test waiting

        a = threading.Thread(target=run_a, name="run-a")
        a.start()
        try:
            assert gate.entered.wait(WAIT), "run A never reached its node"
            assert not failure, f"run A failed before its node: {failure[0]!r}"
            run(build(sb, gate), api, thread_id, "b")
        finally:
            gate.release.set()
            a.join(WAIT)
        assert not a.is_alive(), "run A did not finish"
    return failure[0] if failure else None


def history(url: str, thread_id: str) -> list[CheckpointTuple]:
    with HTTPSaver(url) as reader:
        return list(reader.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}))


def parent_id(t: CheckpointTuple) -> str | None:
    return (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")


def checkpoint_id(t: CheckpointTuple) -> str:
    return str(t.config["configurable"]["checkpoint_id"])


@pytest.mark.parametrize("api", ["invoke", "ainvoke"])
def test_second_writer_conflicts(saver_url: str, thread_id: str, api: str) -> None:
    err = interleave(saver_url, api, thread_id, detect_conflicts=True)
    assert isinstance(err, ConflictError), f"run A ended with {err!r}, want ConflictError"
    assert err.status == 409
    assert "another writer stored checkpoints since" in err.message

    tuples = history(saver_url, thread_id)
    # Newest first, each the child of the next: one line, A's refused put absent.
    for newer, older in zip(tuples, tuples[1:], strict=False):
        assert parent_id(newer) == checkpoint_id(older), "the history forked"
    assert parent_id(tuples[-1]) is None
    assert [t.metadata.get("source") for t in tuples] == ["loop", "loop", "input", "loop", "input"]
    assert tuples[0].checkpoint["channel_values"]["log"] == ["a", "b", "worked by b"]


@pytest.mark.parametrize("api", ["invoke", "ainvoke"])
def test_default_stores_the_fork(saver_url: str, thread_id: str, api: str) -> None:
    assert interleave(saver_url, api, thread_id) is None

    tuples = history(saver_url, thread_id)
    children: dict[str | None, list[str]] = {}
    for t in tuples:
        children.setdefault(parent_id(t), []).append(checkpoint_id(t))
    forks = [p for p, c in children.items() if len(c) > 1]
    assert len(forks) == 1, f"want A's and B's checkpoints both under the head A read: {children}"
    leaves = [t for t in tuples if checkpoint_id(t) not in children]
    logs = sorted(t.checkpoint["channel_values"]["log"] for t in leaves)
    assert logs == [["a", "b", "worked by b"], ["a", "worked by a"]]


def test_branches_on_purpose(saver_url: str, thread_id: str) -> None:
    """Time travel and update_state branch off older checkpoints and are not refused;
    new input to an older checkpoint is, being no fork."""
    with HTTPSaver(saver_url, detect_conflicts=True) as saver:
        graph = build(saver, Gate())
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "writer": "c"}}
        graph.invoke({"log": ["1"]}, config)
        graph.invoke({"log": ["2"]}, config)
        old = list(graph.get_state_history(config))[-2].config
        graph.invoke(None, old)
        graph.invoke(None, graph.update_state(old, {"log": ["u"]}))
        with pytest.raises(ConflictError):
            graph.invoke({"log": ["x"]}, old)


# -- puts made by hand ---------------------------------------------------------


def checkpoint() -> Checkpoint:
    cp = {
        "v": 4,
        "id": str(uuid6(clock_seq=-1)),
        "ts": datetime.now(timezone.utc).isoformat(),
        "channel_values": {},
        "channel_versions": {},
        "versions_seen": {},
        "updated_channels": None,
    }
    return cast(Checkpoint, cp)


def meta(source: str, step: int = 0) -> CheckpointMetadata:
    return cast(CheckpointMetadata, {"source": source, "step": step, "parents": {}})


def conf(thread_id: str, parent: str | None) -> RunnableConfig:
    c: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if parent:
        c["checkpoint_id"] = parent
    return {"configurable": c}


@pytest.fixture
def put(saver_url: str) -> Iterator[Callable[..., str]]:
    """put(thread, parent, source="loop", detect=True) puts a checkpoint; returns its id."""
    with HTTPSaver(saver_url, detect_conflicts=True) as on, HTTPSaver(saver_url) as off:

        def put_(thread: str, parent: str | None, source: str = "loop", detect: bool = True) -> str:
            cp = checkpoint()
            (on if detect else off).put(conf(thread, parent), cp, meta(source), {})
            return cp["id"]

        yield put_


def test_stale_parent(put: Callable[..., str], thread_id: str) -> None:
    first = put(thread_id, None)
    second = put(thread_id, first)
    with pytest.raises(ConflictError):
        put(thread_id, first)
    with pytest.raises(ConflictError):
        put(thread_id, None, "input")
    put(thread_id, second, "input")


def children(url: str, thread_id: str) -> dict[str | None, set[str]]:
    """The thread's checkpoint ids by parent id."""
    out: dict[str | None, set[str]] = {}
    for t in history(url, thread_id):
        out.setdefault(parent_id(t), set()).add(checkpoint_id(t))
    return out


@pytest.mark.parametrize("source", ["update", "fork"])
def test_branches_are_not_conditioned(
    put: Callable[..., str], saver_url: str, thread_id: str, source: str
) -> None:
    first = put(thread_id, None)
    second = put(thread_id, first)
    branch = put(thread_id, first, source)
    # Stored under the older checkpoint it branches off, beside the head it
    # did not follow, and the thread's head now.
    assert children(saver_url, thread_id) == {None: {first}, first: {second, branch}}
    head = history(saver_url, thread_id)[0]
    assert (checkpoint_id(head), head.metadata["source"]) == (branch, source)


def test_default_sends_no_condition(put: Callable[..., str], saver_url: str, thread_id: str) -> None:
    first = put(thread_id, None, detect=False)
    second = put(thread_id, first, detect=False)
    stale = put(thread_id, first, detect=False)
    # Without the condition the stale put is stored: a fork of first, the
    # one nobody was told about that detect_conflicts refuses.
    assert children(saver_url, thread_id) == {None: {first}, first: {second, stale}}
    assert checkpoint_id(history(saver_url, thread_id)[0]) == stale


def test_retried_put_that_landed(saver_url: str, thread_id: str) -> None:
    """A put tried again after its answer was lost finds itself the head: no conflict."""
    with HTTPSaver(saver_url, detect_conflicts=True) as saver:
        first = checkpoint()
        saver.put(conf(thread_id, None), first, meta("input", -1), {})
        cp = checkpoint()
        want = saver.put(conf(thread_id, first["id"]), cp, meta("loop"), {})
        assert saver.put(conf(thread_id, first["id"]), cp, meta("loop"), {}) == want
        assert asyncio.run(saver.aput(conf(thread_id, first["id"]), cp, meta("loop"), {})) == want
