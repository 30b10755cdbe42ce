"""Agent Server wiring: the async context manager named in langgraph.json."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from saver_client import HTTPSaver
from saver_client.agent_server import checkpointer


class State(TypedDict):
    n: int


def _graph(saver: BaseCheckpointSaver[Any]) -> Any:
    b = StateGraph(State)
    b.add_node("inc", lambda s: {"n": s["n"] + 1})
    b.add_edge(START, "inc")
    b.add_edge("inc", END)
    return b.compile(checkpointer=saver)


async def test_checkpointer_yields_a_working_saver(
    saver_url: str, thread_id: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SAVER_URL", saver_url)
    monkeypatch.setenv("SAVER_SCOPE", "session")
    caplog.set_level(logging.INFO, logger="saver_client")
    async with checkpointer() as saver:
        assert isinstance(saver, HTTPSaver) and saver.scope == "session"
        config: Any = {"configurable": {"thread_id": thread_id}}
        assert (await _graph(saver).ainvoke({"n": 1}, config)) == {"n": 2}
        state = await _graph(saver).aget_state(config)
        assert state.values == {"n": 2}
    assert "saver checkpointer ready" in caplog.text
    assert "saver checkpointer closing" in caplog.text


async def test_checkpointer_fails_fast_on_a_dead_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAVER_URL", "http://127.0.0.1:9")  # discard port: nothing listens
    from saver_client import RetryPolicy, SaverConnectionError

    with pytest.raises(SaverConnectionError):
        async with checkpointer(retry=RetryPolicy(max_attempts=1)):
            pass
