"""Agent Server wiring: the async context manager named in langgraph.json."""

from __future__ import annotations

import json
import logging
import operator
import threading
import time
import uuid
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from typing_extensions import TypedDict

from saver_client import HTTPSaver, HTTPStore, SaverConnectionError
from saver_client.agent_server import checkpointer, store_config_from_env
from saver_client.agent_server import store as agent_store

from support.compare import Durability
from support.processes import ServiceProcess


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


# -- the store --------------------------------------------------------------------

EMBED_FILE = """
import hashlib

def embed(texts):
    out = []
    for text in texts:
        v = [0.0] * 4
        for word in text.split():
            h = hashlib.sha256(word.encode()).digest()
            for i in range(4):
                v[i] += h[i] - 127.5
        out.append(v)
    return out
"""


async def test_store_yields_a_working_store_configured_by_langgraph_json(
    saver_url: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "embed.py").write_text(EMBED_FILE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAVER_URL", saver_url)
    section = {
        "path": "./store.py:store",
        "index": {"dims": 4, "embed": "./embed.py:embed", "fields": ["text"]},
        "ttl": {"default_ttl": 60, "refresh_on_read": False, "sweep_interval_minutes": 5},
    }
    monkeypatch.setenv("LANGGRAPH_STORE", json.dumps(section))
    caplog.set_level(logging.INFO, logger="saver_client")
    ns = ("users", uuid.uuid4().hex, "memories")
    async with agent_store() as s:
        assert isinstance(s, HTTPStore) and isinstance(s, BaseStore)
        assert s.ttl_config == {"default_ttl": 60, "refresh_on_read": False}
        await s.aput(ns, "m1", {"text": "likes green tea"})
        await s.aput(ns, "m2", {"text": "climbs mountains"})
        hits = await s.asearch(ns, query="green tea")
        assert [h.key for h in hits][0] == "m1" and hits[0].score is not None
    assert "semantic search on, 4 dims" in caplog.text
    assert "SAVER_SWEEP_EVERY" in caplog.text
    assert "saver store closing" in caplog.text
    # Keyword arguments win over the section: no index, so no scores.
    async with agent_store(index=None) as s:
        assert s.index_config is None
        assert [h.score for h in await s.asearch(ns)] == [None, None]


def test_store_config_from_the_environment() -> None:
    assert store_config_from_env({}) == {}
    assert store_config_from_env({"LANGGRAPH_STORE": '{"path": "./s.py:store"}'}) == {}
    section = {
        "index": {"dims": 3, "embed": "openai:text-embedding-3-small"},
        "ttl": {"default_ttl": 5},
    }
    assert store_config_from_env({"LANGGRAPH_STORE": json.dumps(section)}) == section
    absent = {"index": {"dims": 3, "embed": "./absent.py:embed"}}
    with pytest.raises(ValueError, match="no such file"):
        store_config_from_env({"LANGGRAPH_STORE": json.dumps(absent)})
    with pytest.raises(ValueError, match="LANGGRAPH_STORE"):
        store_config_from_env({"LANGGRAPH_STORE": "{"})


async def test_store_fails_fast_on_a_dead_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAVER_URL", "http://127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.delenv("LANGGRAPH_STORE", raising=False)
    from saver_client import RetryPolicy

    with pytest.raises(SaverConnectionError):
        async with agent_store(retry=RetryPolicy(max_attempts=1)):
            pass


# -- the retry budget, and what each durability mode does while the service is away --


def test_retry_budget_from_the_environment() -> None:
    from saver_client.agent_server import DEFAULT_RETRY_BUDGET, retry_policy_from_env

    assert DEFAULT_RETRY_BUDGET == 60
    assert retry_policy_from_env({}).max_delay == 60
    policy = retry_policy_from_env({"SAVER_RETRY_BUDGET": "90"})
    assert policy.max_delay == 90
    # The budget, not a count of tries, stops the retries.
    assert policy.max_attempts * policy.backoff > policy.max_delay
    assert retry_policy_from_env({"SAVER_RETRY_BUDGET": "0"}).max_attempts == 1
    for bad in ("soon", "-1", "nan", "inf"):
        with pytest.raises(ValueError, match="SAVER_RETRY_BUDGET"):
            retry_policy_from_env({"SAVER_RETRY_BUDGET": bad})


def test_notes_that_checkpointer_ttl_is_agent_servers(caplog: pytest.LogCaptureFixture) -> None:
    from saver_client.agent_server import _note_ttl

    caplog.set_level(logging.INFO, logger="saver_client")
    _note_ttl({"LANGGRAPH_CHECKPOINTER": '{"path": "./c.py:checkpointer"}'})
    assert "checkpointer.ttl" not in caplog.text
    ttl = '{"path": "./c.py:c", "ttl": {"strategy": "delete", "default_ttl": 60}}'
    _note_ttl({"LANGGRAPH_CHECKPOINTER": ttl})
    assert "SAVER_SCOPE=session" in caplog.text


class Chain(TypedDict):
    log: Annotated[list[int], operator.add]


async def _run_through_outage(
    service: ServiceProcess, durability: Durability, outage: float
) -> dict[str, Any]:
    """Six nodes in a chain; the second kills the service (kill -9), which
    comes back on the same port `outage` seconds later. Returns when each
    node started, when the service was down and started again, the run's outcome
    and the steps stored once the service is back."""
    t0 = time.monotonic()
    at: dict[str, float] = {}
    timer: list[threading.Timer] = []

    def restart() -> None:
        # The service may answer the run before restart() has seen it
        # ready, so "up" is when it was started again: no request can
        # succeed before that.
        at["up"] = time.monotonic() - t0
        service.restart()

    def node(i: int) -> Any:
        def run(state: Chain) -> Chain:
            at[f"n{i}"] = time.monotonic() - t0
            if i == 1:
                service.kill()
                at["down"] = time.monotonic() - t0
                timer.append(threading.Timer(outage, restart))
                timer[0].start()
            return {"log": [i]}

        return run

    b = StateGraph(Chain)
    for i in range(6):
        b.add_node(f"n{i}", node(i))  # type: ignore[call-overload]
    b.add_edge(START, "n0")
    for i in range(5):
        b.add_edge(f"n{i}", f"n{i + 1}")
    b.add_edge("n5", END)
    config: Any = {"configurable": {"thread_id": f"outage-{durability}-{uuid.uuid4()}"}}
    async with checkpointer() as saver:
        graph = b.compile(checkpointer=saver)
        try:
            out: Any = await graph.ainvoke({"log": []}, config, durability=durability)
        except SaverConnectionError as exc:
            out = exc
        timer[0].join()
        history = [s async for s in graph.aget_state_history(config)]
    return {"at": at, "out": out, "steps": sorted(s.metadata["step"] for s in history)}


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
async def test_a_run_outlasts_a_service_restart(
    spawn_service: Callable[[], ServiceProcess],
    monkeypatch: pytest.MonkeyPatch,
    durability: Durability,
) -> None:
    service = spawn_service()
    monkeypatch.setenv("SAVER_URL", service.url)
    monkeypatch.setenv("SAVER_RETRY_BUDGET", "30")
    r = await _run_through_outage(service, durability, outage=1.5)
    at = r["at"]
    assert r["out"] == {"log": [0, 1, 2, 3, 4, 5]}
    if durability == "sync":
        # No step starts before the previous one's checkpoint is stored.
        assert at["n2"] > at["up"]
        assert r["steps"] == list(range(-1, 7))
    elif durability == "async":
        # The run goes on while its checkpoints wait for the service; they
        # are all stored once it is back.
        assert at["n5"] < at["up"]
        assert r["steps"] == list(range(-1, 7))
    else:
        # Nothing is stored until the run ends.
        assert at["n5"] < at["up"]
        assert r["steps"] == [6]


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
async def test_an_outage_longer_than_the_budget(
    spawn_service: Callable[[], ServiceProcess],
    monkeypatch: pytest.MonkeyPatch,
    durability: Durability,
) -> None:
    service = spawn_service()
    monkeypatch.setenv("SAVER_URL", service.url)
    monkeypatch.setenv("SAVER_RETRY_BUDGET", "0.3")
    r = await _run_through_outage(service, durability, outage=1.5)
    assert isinstance(r["out"], SaverConnectionError)
    if durability == "sync":
        # The thread keeps every step completed before the outage: a resume
        # runs only what was cut off.
        assert r["steps"] == [-1, 0, 1]
    elif durability == "async":
        # At most what was stored before the outage; the steps run since
        # will run again on resume.
        assert set(r["steps"]) <= {-1, 0, 1}
    else:
        assert r["steps"] == []
