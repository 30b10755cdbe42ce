"""Crash the service mid-conversation; the thread continues where it stopped."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from saver_client import HTTPSaver

from support.compare import history_sig
from support.graphs import chat_config, chat_graph, interrupt_graph
from support.processes import ServiceProcess


def test_resume_after_kill_9(spawn_service: Callable[[], ServiceProcess]) -> None:
    service = spawn_service()
    calls: Counter[str] = Counter()
    config: RunnableConfig = {"configurable": {"thread_id": f"restart-{uuid.uuid4()}"}}

    with HTTPSaver(service.url) as saver:
        graph = interrupt_graph(saver, calls)
        out = graph.invoke({"log": ["in"]}, config)
        assert [i.value for i in out["__interrupt__"]] == [{"question": "name?"}]
        before = graph.get_state(config)
        history_before = [
            s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)
        ]

        # No graceful shutdown: whatever was acknowledged must be on disk.
        service.crash_and_restart()

        # The same saver reconnects to the restarted service on the same port.
        after = graph.get_state(config)
        assert after.config == before.config
        assert after.values == before.values == {"log": ["in", "before"]}
        assert after.next == ("ask",)
        assert [i.value for i in after.interrupts] == [{"question": "name?"}]

        final = graph.invoke(Command(resume="Ada"), config)

    assert final == {"log": ["in", "before", "ask", "hello Ada"], "name": "Ada"}
    # It continued from the interrupted step: "before" did not run again.
    assert calls == {"before": 1, "ask": 2, "after": 1}
    with HTTPSaver(service.url) as fresh:
        history = [t.config["configurable"]["checkpoint_id"] for t in fresh.list(config)]
    # The new checkpoints extend the old chain; none of the old ones was lost.
    assert history[-len(history_before) :] == history_before
    assert len(history) > len(history_before)


def test_async_resume_after_kill_9(spawn_service: Callable[[], ServiceProcess]) -> None:
    service = spawn_service()
    calls: Counter[str] = Counter()
    config: RunnableConfig = {"configurable": {"thread_id": f"restart-{uuid.uuid4()}"}}
    saver = HTTPSaver(service.url)
    graph = interrupt_graph(saver, calls)

    async def until_interrupt() -> Any:
        try:
            return await graph.ainvoke({"log": ["in"]}, config, durability="async")
        finally:
            await saver.aclose()

    async def resume() -> Any:
        try:
            return await graph.ainvoke(Command(resume="Bo"), config, durability="async")
        finally:
            await saver.aclose()

    asyncio.run(until_interrupt())
    service.crash_and_restart()
    assert asyncio.run(resume()) == {"log": ["in", "before", "ask", "hello Bo"], "name": "Bo"}
    assert calls == {"before": 1, "ask": 2, "after": 1}
    saver.close()


def test_kill_and_resume(spawn_service: Callable[..., Any]) -> None:
    """kill -9 mid-thread: the restarted service rebuilds the channel from its chain."""
    svc = spawn_service()
    expected_saver = InMemorySaver()
    expected_graph = chat_graph(expected_saver)
    config = chat_config()
    saver = HTTPSaver(svc.url)
    graph = chat_graph(saver)
    for i in range(7):
        graph.invoke({"messages": [f"hi {i}"]}, config)
        expected_graph.invoke({"messages": [f"hi {i}"]}, config)
    svc.crash_and_restart()
    for i in range(7, 11):
        graph.invoke({"messages": [f"hi {i}"]}, config)
        expected_graph.invoke({"messages": [f"hi {i}"]}, config)
    assert history_sig(list(graph.get_state_history(config))) == history_sig(
        list(expected_graph.get_state_history(config))
    )
    saver.close()
