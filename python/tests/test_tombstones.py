"""Deleted threads stay deleted (LangGraph issue 7206).

A run is inside a node when its thread is deleted; when the node finishes,
LangGraph puts the node's writes and the next checkpoint with the config it
held from before the deletion. Without tombstones those late writes bring
the deleted thread back. The service refuses them with 410 `gone` (the
client raises GoneError), the thread stays empty, and a fresh run on the
same thread id works. On DynamoDB the same holds across replicas: one
service deletes, another receives the late writes
(e2e/test_tombstone_replicas.py).
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from saver_client import GoneError, HTTPSaver

from support.tombstones import build, check_late_writes, listed, thread_config


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
