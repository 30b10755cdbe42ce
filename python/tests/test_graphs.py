"""Real graphs through HTTPSaver, each compared with the same graph on InMemorySaver.

Every scenario runs twice, once per saver, and returns a trace: run outputs,
state snapshots, full state history, how often each node ran. The two traces
must be equal; a few absolute checks make sure the scenario did what it claims
(two savers that are wrong in the same way would otherwise pass).
"""

from __future__ import annotations

import operator
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

from saver_client import HTTPSaver

from support.compare import (
    APIS,
    DURABILITIES,
    Api,
    Durability,
    Graph,
    Runner,
    history_sig,
    norm,
    snapshot_sig,
)
from support.graphs import Ask, interrupt_graph

Trace = dict[str, Any]
Scenario = Callable[[Runner], Trace]


@pytest.fixture
def compare(saver_url: str) -> Iterator[Callable[[Scenario, Api, Durability], Trace]]:
    """Run a scenario on InMemorySaver and on HTTPSaver; assert equal traces."""
    savers: list[HTTPSaver] = []

    def run(scenario: Scenario, api: Api, durability: Durability) -> Trace:
        expected = scenario(Runner(InMemorySaver(), api, durability))
        saver = HTTPSaver(saver_url)
        savers.append(saver)
        got = scenario(Runner(saver, api, durability))
        assert got == expected
        return got

    yield run
    for s in savers:
        s.close()


def new_config() -> RunnableConfig:
    return {"configurable": {"thread_id": f"graph-{uuid.uuid4()}"}}


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    n: int


def sequential_graph(saver: Any, calls: Counter[str]) -> Graph:
    def step(name: str) -> Callable[[Log], Log]:
        def node(state: Log) -> Log:
            calls[name] += 1
            return {"log": [name], "n": state.get("n", 0) + 1}

        return node

    g = StateGraph(Log)
    for name in ("a", "b", "c"):
        g.add_node(name, step(name))  # type: ignore[call-overload]  # a closure, not a literal function
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile(checkpointer=saver)


# -- sequential ---------------------------------------------------------------


def scenario_sequential(r: Runner) -> Trace:
    calls: Counter[str] = Counter()
    graph = sequential_graph(r.saver, calls)
    config = new_config()
    out1 = r.run(graph, {"log": ["in"], "n": 0}, config)
    out2 = r.run(graph, {"log": ["again"]}, config)
    return {
        "outputs": [out1, out2],
        "state": snapshot_sig(r.state(graph, config), {}),
        "history": history_sig(r.history(graph, config)),
        "calls": dict(calls),
        "all_namespaces": r.count_checkpoints(config["configurable"]["thread_id"]),
    }


@pytest.mark.parametrize("durability", DURABILITIES)
@pytest.mark.parametrize("api", APIS)
def test_sequential(compare: Any, api: Api, durability: Durability) -> None:
    trace = compare(scenario_sequential, api, durability)
    assert trace["state"]["values"] == {
        "log": ["in", "a", "b", "c", "again", "a", "b", "c"],
        "n": 6,
    }
    assert trace["state"]["next"] == ()
    assert trace["calls"] == {"a": 2, "b": 2, "c": 2}
    # Two runs of input + 3 steps each (+ the first step) when every step is saved.
    assert len(trace["history"]) == (2 if durability == "exit" else 10)


# -- interrupt and resume ------------------------------------------------------


def scenario_interrupt(r: Runner) -> Trace:
    calls: Counter[str] = Counter()
    graph = interrupt_graph(r.saver, calls)
    config = new_config()
    out1 = r.run(graph, {"log": ["in"]}, config)
    waiting = snapshot_sig(r.state(graph, config), {})
    out2 = r.run(graph, Command(resume="Ada"), config)
    return {
        "outputs": [out1, out2],
        "waiting": waiting,
        "state": snapshot_sig(r.state(graph, config), {}),
        "history": history_sig(r.history(graph, config)),
        "calls": dict(calls),
    }


@pytest.mark.parametrize("durability", DURABILITIES)
@pytest.mark.parametrize("api", APIS)
def test_interrupt_resume(compare: Any, api: Api, durability: Durability) -> None:
    trace = compare(scenario_interrupt, api, durability)
    assert trace["waiting"]["next"] == ("ask",)
    assert trace["waiting"]["interrupts"] == [{"question": "name?"}]
    assert trace["state"]["values"] == {
        "log": ["in", "before", "ask", "hello Ada"],
        "name": "Ada",
    }
    assert trace["state"]["next"] == ()
    # "before" finished before the interrupt: resuming must not run it again.
    assert trace["calls"] == {"before": 1, "ask": 2, "after": 1}


# -- subgraph --------------------------------------------------------------------


class Deep(TypedDict, total=False):
    deeplog: Annotated[list[str], operator.add]


class Sub(Deep, total=False):
    sublog: Annotated[list[str], operator.add]
    name: str


class Outer(Ask, total=False):
    sublog: Annotated[list[str], operator.add]


def subgraph_graph(saver: Any, calls: Counter[str]) -> Graph:
    def s1(state: Sub) -> Sub:
        calls["s1"] += 1
        return {"sublog": ["s1"]}

    def s2(state: Sub) -> Sub:
        calls["s2"] += 1
        return {"sublog": ["s2"], "name": interrupt("sub: name?")}

    def deep(state: Deep) -> Deep:
        calls["deep"] += 1
        return {"deeplog": ["deep"]}

    # A subgraph inside the subgraph: its namespace nests ("sub:<id>|inner:<id>").
    inner = StateGraph(Deep)
    inner.add_node("deep", deep)
    inner.add_edge(START, "deep")
    inner.add_edge("deep", END)

    # Each level has its own log key: a subgraph returns its whole state, which
    # the parent's reducer would otherwise add to what the parent already had.
    sub = StateGraph(Sub)
    sub.add_node("s1", s1)
    sub.add_node("inner", inner.compile())
    sub.add_node("s2", s2)
    sub.add_edge(START, "s1")
    sub.add_edge("s1", "inner")
    sub.add_edge("inner", "s2")
    sub.add_edge("s2", END)

    def p1(state: Outer) -> Outer:
        calls["p1"] += 1
        return {"log": ["p1"]}

    def p2(state: Outer) -> Outer:
        calls["p2"] += 1
        return {"log": [f"p2 {state['name']}"]}

    g = StateGraph(Outer)
    g.add_node("p1", p1)
    g.add_node("sub", sub.compile())
    g.add_node("p2", p2)
    g.add_edge(START, "p1")
    g.add_edge("p1", "sub")
    g.add_edge("sub", "p2")
    g.add_edge("p2", END)
    return g.compile(checkpointer=saver)


def scenario_subgraph(r: Runner) -> Trace:
    calls: Counter[str] = Counter()
    graph = subgraph_graph(r.saver, calls)
    config = new_config()
    out1 = r.run(graph, {"log": ["in"]}, config)
    waiting = r.state(graph, config, subgraphs=True)
    sub_state = waiting.tasks[0].state
    assert sub_state is not None and not isinstance(sub_state, dict)
    sub_conf = sub_state.config["configurable"]
    # The subgraph's whole chain: its namespace without a checkpoint id.
    sub_history = history_sig(
        r.history(
            graph,
            {
                "configurable": {
                    "thread_id": sub_conf["thread_id"],
                    "checkpoint_ns": sub_conf["checkpoint_ns"],
                }
            },
        )
    )
    out2 = r.run(graph, Command(resume="Ada"), config)
    return {
        "outputs": [out1, out2],
        "waiting": snapshot_sig(waiting, {}),
        "sub_history": sub_history,
        "state": snapshot_sig(r.state(graph, config, subgraphs=True), {}),
        "history": history_sig(r.history(graph, config)),
        "calls": dict(calls),
        "all_namespaces": r.count_checkpoints(config["configurable"]["thread_id"]),
    }


@pytest.mark.parametrize("api", APIS)
def test_subgraph(compare: Any, api: Api) -> None:
    trace = compare(scenario_subgraph, api, "async")
    waiting = trace["waiting"]
    assert waiting["next"] == ("sub",)
    sub = waiting["tasks"][0]["state"]
    assert sub["ns"] == ("sub",)
    assert sub["next"] == ("s2",)
    assert sub["interrupts"] == ["sub: name?"]
    assert sub["values"] == {"sublog": ["s1"], "deeplog": ["deep"]}
    assert [h["step"] for h in trace["sub_history"]] == [2, 1, 0, -1]
    assert trace["state"]["values"] == {
        "log": ["in", "p1", "p2 Ada"],
        "sublog": ["s1", "s2"],
        "name": "Ada",
    }
    assert trace["calls"] == {"p1": 1, "s1": 1, "deep": 1, "s2": 2, "p2": 1}
    # The subgraphs' own checkpoints live in other namespaces of the thread:
    # the inner graph's 3 and the subgraph's chain, beyond the root history.
    assert trace["all_namespaces"] >= len(trace["history"]) + len(trace["sub_history"]) + 3


# -- time travel and update_state -------------------------------------------------


def scenario_time_travel(r: Runner) -> Trace:
    calls: Counter[str] = Counter()
    graph = sequential_graph(r.saver, calls)
    config = new_config()
    r.run(graph, {"log": ["in"], "n": 0}, config)
    first = r.history(graph, config)
    before_b = next(s for s in first if s.next == ("b",))
    before_c = next(s for s in first if s.next == ("c",))

    # Replay from before "b": a fork whose new steps chain from that checkpoint.
    replay = r.run(graph, None, before_b.config)
    after_replay = snapshot_sig(r.state(graph, config), {})

    # Edit an old checkpoint of the first branch, then continue from the edit.
    edited = r.update(graph, before_c.config, {"log": ["edited"]}, as_node="b")
    edited_state = snapshot_sig(r.state(graph, edited), {})
    resumed = r.run(graph, None, edited)

    # A sibling copy of an old checkpoint: a put that writes no new blobs
    # (new_versions is empty), so its values must resolve from the original's.
    copied = r.update(graph, before_c.config, None, as_node="__copy__")
    copied_state = snapshot_sig(r.state(graph, copied), {})

    return {
        "replay": replay,
        "after_replay": after_replay,
        "edited_state": edited_state,
        "resumed": resumed,
        "copied_state": copied_state,
        "state": snapshot_sig(r.state(graph, config), {}),
        "history": history_sig(r.history(graph, config)),
        "calls": dict(calls),
    }


@pytest.mark.parametrize("api", APIS)
def test_time_travel_and_update_state(compare: Any, api: Api) -> None:
    trace = compare(scenario_time_travel, api, "async")
    assert trace["after_replay"]["values"]["log"] == ["in", "a", "b", "c"]
    assert trace["edited_state"]["values"]["log"] == ["in", "a", "b", "edited"]
    assert trace["edited_state"]["source"] == "update"
    assert trace["copied_state"]["values"] == {"log": ["in", "a", "b"], "n": 2}
    assert trace["copied_state"]["next"] == ("c",)
    assert trace["copied_state"]["source"] == "fork"
    assert trace["state"]["values"] == trace["copied_state"]["values"]  # the copy is newest
    assert trace["calls"] == {"a": 1, "b": 2, "c": 3}
    sources = [h["source"] for h in trace["history"]]
    assert "fork" in sources or sources.count("loop") > 4  # the replay branched
    assert "update" in sources


# -- Send fan-out --------------------------------------------------------------------


class Fan(TypedDict, total=False):
    items: list[int]
    results: Annotated[list[int], operator.add]
    total: int


def fanout_graph(saver: Any, calls: Counter[str], lock: threading.Lock) -> Graph:
    def plan(state: Fan) -> Fan:
        calls["plan"] += 1
        return {}

    def route(state: Fan) -> list[Send]:
        return [Send("work", {"items": [x]}) for x in state["items"]]

    def work(state: Fan) -> Fan:
        with lock:  # sync graphs run Send tasks on pool threads
            calls["work"] += 1
        x = state["items"][0]
        return {"results": [x * x]}

    def reduce(state: Fan) -> Fan:
        calls["reduce"] += 1
        return {"total": sum(state["results"])}

    g = StateGraph(Fan)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_node("reduce", reduce)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", route, ["work"])
    g.add_edge("work", "reduce")
    g.add_edge("reduce", END)
    return g.compile(checkpointer=saver)


def scenario_fanout(r: Runner) -> Trace:
    calls: Counter[str] = Counter()
    graph = fanout_graph(r.saver, calls, threading.Lock())
    config = new_config()
    out = r.run(graph, {"items": list(range(8))}, config)
    return {
        "output": out,
        "state": snapshot_sig(r.state(graph, config), {}),
        "history": history_sig(r.history(graph, config)),
        "calls": dict(calls),
    }


@pytest.mark.parametrize("api", APIS)
def test_send_fanout(compare: Any, api: Api) -> None:
    trace = compare(scenario_fanout, api, "async")
    assert sorted(trace["state"]["values"]["results"]) == [x * x for x in range(8)]
    assert trace["state"]["values"]["total"] == sum(x * x for x in range(8))
    assert trace["calls"] == {"plan": 1, "work": 8, "reduce": 1}


class FanResult(TypedDict, total=False):
    results: Annotated[list[int], operator.add]


def fanout_subgraphs_graph(saver: Any, calls: Counter[str], lock: threading.Lock) -> Graph:
    def square(state: Fan) -> Fan:
        with lock:
            calls["square"] += 1
        return {"results": [state["items"][0] ** 2]}

    # Each Send runs this subgraph in its own namespace, concurrently.
    worker = StateGraph(Fan, output_schema=FanResult)
    worker.add_node("square", square)
    worker.add_edge(START, "square")
    worker.add_edge("square", END)

    def route(state: Fan) -> list[Send]:
        return [Send("work", {"items": [x]}) for x in state["items"]]

    g = StateGraph(Fan)
    g.add_node("work", worker.compile())
    g.add_conditional_edges(START, route, ["work"])
    g.add_edge("work", END)
    return g.compile(checkpointer=saver)


def scenario_fanout_subgraphs(r: Runner) -> Trace:
    calls: Counter[str] = Counter()
    graph = fanout_subgraphs_graph(r.saver, calls, threading.Lock())
    config = new_config()
    out = r.run(graph, {"items": list(range(6))}, config)
    return {
        "output": out,
        "history": history_sig(r.history(graph, config)),
        "calls": dict(calls),
        "all_namespaces": r.count_checkpoints(config["configurable"]["thread_id"]),
    }


@pytest.mark.parametrize("api", APIS)
def test_send_to_parallel_subgraphs(compare: Any, api: Api) -> None:
    trace = compare(scenario_fanout_subgraphs, api, "async")
    assert trace["history"][0]["values"]["results"] == [x * x for x in range(6)]
    assert trace["calls"] == {"square": 6}
    # Every subgraph run kept its own chain (input, start, square) in its namespace.
    assert trace["all_namespaces"] == len(trace["history"]) + 6 * 3


# -- a failing node, then a successful retry on the same thread ----------------------


def flaky_graph(saver: Any, calls: Counter[str], failures: list[int]) -> Graph:
    ok_done = threading.Event()

    def ok(state: Log) -> Log:
        calls["ok"] += 1
        ok_done.set()
        return {"log": ["ok"]}

    def flaky(state: Log) -> Log:
        calls["flaky"] += 1
        if failures:
            failures.pop()
            # Fail only once ok has finished; otherwise whether ok's result is
            # saved (or ok is cancelled) depends on thread timing, in any saver.
            assert ok_done.wait(timeout=30), "ok never ran"
            raise RuntimeError("flaky failed")
        return {"log": ["flaky"]}

    def join(state: Log) -> Log:
        calls["join"] += 1
        return {"log": ["join"]}

    g = StateGraph(Log)
    g.add_node("ok", ok)
    g.add_node("flaky", flaky)
    g.add_node("join", join)
    # ok and flaky run in the same step: ok's writes must survive flaky's error.
    g.add_edge(START, "ok")
    g.add_edge(START, "flaky")
    g.add_edge(["ok", "flaky"], "join")
    g.add_edge("join", END)
    return g.compile(checkpointer=saver)


def scenario_retry(r: Runner) -> Trace:
    calls: Counter[str] = Counter()
    graph = flaky_graph(r.saver, calls, failures=[1])
    config = new_config()
    error = r.run_error(graph, {"log": ["in"]}, config)
    failed = snapshot_sig(r.state(graph, config), {})
    out = r.run(graph, None, config)
    return {
        "error": error,
        "failed": failed,
        "output": out,
        "state": snapshot_sig(r.state(graph, config), {}),
        "history": history_sig(r.history(graph, config)),
        "calls": dict(calls),
    }


@pytest.mark.parametrize("durability", DURABILITIES)
@pytest.mark.parametrize("api", APIS)
def test_failure_then_retry(compare: Any, api: Api, durability: Durability) -> None:
    trace = compare(scenario_retry, api, durability)
    assert trace["error"] == ("error", "RuntimeError", "flaky failed")
    failed_tasks = {t["name"]: t for t in trace["failed"]["tasks"]}
    # The stored error comes back in the snapshot as its repr.
    assert failed_tasks["flaky"]["error"] == "RuntimeError('flaky failed')"
    assert failed_tasks["ok"]["error"] is None
    values = trace["state"]["values"]
    assert sorted(values["log"]) == sorted(["in", "ok", "flaky", "join"])
    # The retry re-ran only the failed node; ok's stored writes were reused.
    assert trace["calls"] == {"ok": 1, "flaky": 2, "join": 1}


def test_norm_hides_ids_only() -> None:
    # The comparison must not be vacuous: different values stay different.
    assert norm({"a": [1, (2, 3)]}) != norm({"a": [1, (2, 4)]})
