"""LangGraph's DeltaChannel through HTTPSaver, each graph compared with InMemorySaver.

A DeltaChannel stores no value at most checkpoints: readers rebuild it from
the writes of the checkpoint's ancestors, back to the nearest snapshot, which
HTTPSaver asks the service for in one request (`get_delta_channel_history`).
Every scenario runs on both savers and returns a trace (outputs, state and
state history); the traces must be equal. The maintenance calls (prune,
delete_for_runs, copy_thread) must leave such threads readable.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any

import langgraph.pregel._messages
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Overwrite, Send, interrupt
from typing_extensions import TypedDict

from saver_client import ConflictError, HTTPSaver, InvalidRequestError

from support.compare import APIS, DURABILITIES, Api, Durability, Graph, Runner, history_sig, norm
from support.graphs import Chat, SmallChat, chat_config, chat_graph, concat

Trace = dict[str, Any]


def messages_reducer(state: list[Any], writes: Sequence[Any]) -> list[Any]:
    for w in writes:
        state = add_messages(state, w)
    return state


@pytest.fixture
def compare(saver_url: str) -> Iterator[Callable[..., Trace]]:
    """Run a scenario on InMemorySaver and on HTTPSaver; assert equal traces."""
    savers: list[HTTPSaver] = []

    def run(scenario: Callable[[Runner], Trace], api: Api = "invoke", durability: Durability = "sync") -> Trace:
        expected = scenario(Runner(InMemorySaver(), api, durability))
        saver = HTTPSaver(saver_url)
        savers.append(saver)
        got = scenario(Runner(saver, api, durability))
        assert got == expected
        return got

    yield run
    for s in savers:
        s.close()


def test_the_capability_is_the_clients_own() -> None:
    # LangGraph (and its conformance suite) detects a capability by whether
    # the class overrides the base method.
    for name in ("get_delta_channel_history", "aget_delta_channel_history"):
        assert getattr(HTTPSaver, name) is not getattr(BaseCheckpointSaver, name)


def test_chat_of_250_turns(compare: Callable[..., Trace]) -> None:
    """Two snapshots (every 100 updates) and the chain between them, step by step."""

    def scenario(r: Runner) -> Trace:
        graph, config = chat_graph(r.saver, Chat), chat_config()
        outs = [r.run(graph, {"messages": [f"hi {i}"]}, config) for i in range(250)]
        history = r.history(graph, config)
        assert len(history) == 750
        assert len(history[0].values["messages"]) == 500
        return {"outs": outs, "history": history_sig(history)}

    compare(scenario)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("durability", DURABILITIES)
def test_chat(compare: Callable[..., Trace], api: Api, durability: Durability) -> None:
    def scenario(r: Runner) -> Trace:
        graph, config = chat_graph(r.saver), chat_config()
        outs = [r.run(graph, {"messages": [f"hi {i}"]}, config) for i in range(12)]
        return {"outs": outs, "state": norm(r.state(graph, config).values), "history": history_sig(r.history(graph, config))}

    trace = compare(scenario, api, durability)
    assert len(trace["state"]["messages"]) == 24


@pytest.mark.parametrize("api", ["invoke", "ainvoke"])
def test_fork_and_time_travel(compare: Callable[..., Trace], api: Api) -> None:
    """A fork from an old checkpoint rebuilds from its own chain, not the other branch's."""

    def scenario(r: Runner) -> Trace:
        graph, config = chat_graph(r.saver), chat_config()
        for i in range(8):
            r.run(graph, {"messages": [f"hi {i}"]}, config)
        history = r.history(graph, config)
        old = next(s for s in history if s.metadata and s.metadata.get("step") == 7)
        forked = r.update(graph, old.config, {"messages": ["forked"]})
        out = r.run(graph, None, forked)
        replay = r.run(graph, None, old.config)
        again = r.run(graph, {"messages": ["after"]}, config)
        return {
            "fork": out,
            "replay": replay,
            "again": again,
            "history": history_sig(r.history(graph, config)),
        }

    compare(scenario, api)


def test_update_state_and_overwrite(compare: Callable[..., Trace]) -> None:
    def scenario(r: Runner) -> Trace:
        graph, config = chat_graph(r.saver), chat_config()
        for i in range(7):
            r.run(graph, {"messages": [f"hi {i}"]}, config)
        r.update(graph, config, {"messages": ["a note"]})
        r.update(graph, config, {"messages": Overwrite(["start over"])})
        outs = [r.run(graph, {"messages": [f"then {i}"]}, config) for i in range(3)]
        return {"outs": outs, "history": history_sig(r.history(graph, config))}

    trace = compare(scenario)
    assert trace["outs"][0]["messages"][0] == "start over"


class Fan(TypedDict, total=False):
    messages: Annotated[list[str], DeltaChannel(concat, snapshot_frequency=3)]
    n: int


def test_send_writers_to_one_channel(compare: Callable[..., Trace]) -> None:
    """Parallel tasks replay in their live order (task path), whatever their task ids."""

    def scenario(r: Runner) -> Trace:
        def fan_out(s: Fan) -> list[Send]:
            return [Send("worker", {"n": i}) for i in range(6)]

        def worker(s: Fan) -> Fan:
            return {"messages": [f"worker {s['n']}"]}

        g = StateGraph(Fan)
        g.add_node("start", lambda s: {"messages": ["start"]})
        g.add_node("worker", worker)
        g.add_edge(START, "start")
        g.add_conditional_edges("start", fan_out, ["worker"])
        g.add_edge("worker", END)
        graph, config = g.compile(checkpointer=r.saver), chat_config()
        outs = [r.run(graph, {"messages": [f"round {i}"]}, config) for i in range(4)]
        return {"outs": outs, "history": history_sig(r.history(graph, config))}

    compare(scenario)


class Inner(TypedDict, total=False):
    messages: Annotated[list[str], DeltaChannel(concat, snapshot_frequency=2)]


def test_subgraph(compare: Callable[..., Trace]) -> None:
    def scenario(r: Runner) -> Trace:
        inner = StateGraph(Inner)
        inner.add_node("a", lambda s: {"messages": ["inner a"]})
        inner.add_node("b", lambda s: {"messages": ["inner b"]})
        inner.add_edge(START, "a")
        inner.add_edge("a", "b")
        inner.add_edge("b", END)
        outer = StateGraph(SmallChat)
        outer.add_node("sub", inner.compile(checkpointer=True))
        outer.add_edge(START, "sub")
        outer.add_edge("sub", END)
        graph, config = outer.compile(checkpointer=r.saver), chat_config()
        outs = [r.run(graph, {"messages": [f"hi {i}"]}, config) for i in range(4)]
        state = r.state(graph, config, subgraphs=True)
        return {"outs": outs, "state": norm(state), "history": history_sig(r.history(graph, config))}

    compare(scenario)


def test_interrupt_and_resume(compare: Callable[..., Trace]) -> None:
    def scenario(r: Runner) -> Trace:
        def ask(s: SmallChat) -> SmallChat:
            answer = interrupt(f"approve {s['messages'][-1]}?")
            return {"messages": [f"answer {answer}"]}

        g = StateGraph(SmallChat)
        g.add_node("ask", ask)
        g.add_edge(START, "ask")
        g.add_edge("ask", END)
        graph, config = g.compile(checkpointer=r.saver), chat_config()
        outs = []
        for i in range(6):
            outs.append(r.run(graph, {"messages": [f"q {i}"]}, config))
            outs.append(r.run(graph, Command(resume=f"yes {i}"), config))
        return {"outs": outs, "history": history_sig(r.history(graph, config))}

    compare(scenario)


def test_message_ids_match_inmemory(saver_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With uuid4 made deterministic, as LangGraph's own tests do, ids match InMemorySaver's.

    Requests made no uuid4 calls of their own: each would shift the ids the
    graph assigns to its messages.
    """

    class Messages(TypedDict):
        messages: Annotated[list[Any], DeltaChannel(messages_reducer, snapshot_frequency=3)]

    def reply(s: Messages) -> Messages:
        return {"messages": [AIMessage(f"reply {len(s['messages'])}")]}

    def run(saver: BaseCheckpointSaver[Any]) -> list[tuple[str, str]]:
        counter = iter(range(10_000))

        def uuid4() -> uuid.UUID:
            return uuid.UUID(int=next(counter))

        # Both where the uuid module serves it and where LangGraph stamps
        # message ids with its own import of it.
        monkeypatch.setattr(uuid, "uuid4", uuid4)
        monkeypatch.setattr(langgraph.pregel._messages, "uuid4", uuid4)
        g = StateGraph(Messages)
        g.add_node("reply", reply)
        g.add_edge(START, "reply")
        g.add_edge("reply", END)
        graph = g.compile(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": "ids"}}
        for i in range(5):
            graph.invoke({"messages": [HumanMessage(f"hi {i}")]}, config)
        # The claim id of the ledger is a request's too.
        if isinstance(saver, HTTPSaver):
            saver.claim("ids-" + str(uuid.UUID(int=0)) + str(id(saver)))
        graph.invoke({"messages": [HumanMessage("last")]}, config)
        return [(m.id, m.content) for m in graph.get_state(config).values["messages"]]

    expected = run(InMemorySaver())
    with HTTPSaver(saver_url) as saver:
        saver.delete_thread("ids")
        assert run(saver) == expected


class CountingSaver(HTTPSaver):
    """Counts the requests of the saver's transport, by path."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.calls: Counter[str] = Counter()
        request, arequest = self._transport.request, self._transport.arequest

        def counted(method: str, path: str, **kw: Any) -> Any:
            self.calls[path.rsplit("/", 1)[-1]] += 1
            return request(method, path, **kw)

        async def acounted(method: str, path: str, **kw: Any) -> Any:
            self.calls[path.rsplit("/", 1)[-1]] += 1
            return await arequest(method, path, **kw)

        self._transport.request = counted  # type: ignore[method-assign]
        self._transport.arequest = acounted  # type: ignore[method-assign]


def test_requests_per_turn_are_flat(saver_url: str) -> None:
    """A turn costs the same requests at turn 10 as at turn 150: one history, never a walk."""
    saver = CountingSaver(saver_url)
    graph, config = chat_graph(saver, Chat), chat_config()
    per_turn = []
    for i in range(150):
        saver.calls.clear()
        graph.invoke({"messages": [f"hi {i}"]}, config, durability="sync")
        per_turn.append(sum(saver.calls.values()))
        if i == 10:
            assert saver.calls["delta-history"] == 1, saver.calls
    # A turn whose checkpoint holds the snapshot needs no history: one less.
    assert max(per_turn[100:]) <= max(per_turn[10:20]), per_turn
    saver.calls.clear()
    history = list(graph.get_state_history(config))
    # One listing page per 100 checkpoints and one history per checkpoint
    # whose channel holds no value of its own: linear, never a walk.
    assert saver.calls["delta-history"] <= len(history), saver.calls
    assert sum(saver.calls.values()) <= len(history) + len(history) // 100 + 1, saver.calls
    saver.close()


def test_state_history_asks_the_service_once_per_listing(spawn_service: Callable[..., Any]) -> None:
    """get_state_history puts each checkpoint's delta history together from the
    checkpoints it listed, asking the service only for the chain beyond them.

    It once asked one history per checkpoint, each re-reading the writes its
    neighbours' read: 445 requests for a 150-turn chat. Here the listing's
    pages are 40 checkpoints and the service's history pages 4 KiB, so a
    history beyond a short listing takes several requests, made once for all
    the listed checkpoints whose chains leave the listing there.
    """
    svc = spawn_service(env={"SAVER_PAGE_SIZE": "40", "SAVER_HISTORY_PAGE": "4096"})
    saver = CountingSaver(svc.url)
    expected_graph, graph = chat_graph(InMemorySaver(), Chat), chat_graph(saver, Chat)
    config, expected_config = chat_config(), chat_config()
    for i in range(70):  # 210 checkpoints, a snapshot at turn 50
        message = f"hi {i} " + "x" * 1000
        graph.invoke({"messages": [message]}, config, durability="sync")
        expected_graph.invoke({"messages": [message]}, expected_config, durability="sync")
    expected = list(expected_graph.get_state_history(expected_config))
    saver.calls.clear()
    history = list(graph.get_state_history(config))
    assert history_sig(history) == history_sig(expected)
    assert saver.calls == {"search": 6}, saver.calls

    # A listing that ends before the chains do: 30 checkpoints from the
    # newest or the 20th newest, whose chains reach back to the snapshot at
    # turn 50. The history beyond the oldest listed is asked once, in as
    # many requests as it takes alone.
    for kw, at in (({"limit": 30}, 0), ({"limit": 30, "before": history[19].config}, 20)):
        expected_kw = {**kw, "before": expected[19].config} if "before" in kw else kw
        want = history_sig(list(expected_graph.get_state_history(expected_config, **expected_kw)))
        alone = CountingSaver(svc.url)
        alone.get_delta_channel_history(config=history[at + 29].config, channels=["messages"])
        alone.close()
        assert alone.calls["delta-history"] > 1, alone.calls
        for read in ("sync", "async"):
            saver.calls.clear()
            if read == "sync":
                got = list(graph.get_state_history(config, **kw))
            else:
                got = asyncio.run(_alist_history(graph, config, kw))
            assert history_sig(got) == want
            asked = alone.calls["delta-history"]
            assert saver.calls == {"search": 1, "delta-history": asked}, saver.calls
    saver.close()


async def _alist_history(graph: Graph, config: RunnableConfig, kw: dict[str, Any]) -> list[Any]:
    return [s async for s in graph.aget_state_history(config, **kw)]


@pytest.mark.parametrize("change", ["put_writes", "aput_writes", "delete_thread", "adelete_thread"])
def test_a_listed_checkpoint_changed_since_is_asked_again(saver_url: str, change: str) -> None:
    """What a saver listed stands in for the service only while its own writes
    and deletes leave the thread as listed.

    A write on a checkpoint that has a child is one LangGraph never makes,
    but the store takes it, and the service's history then holds it.
    """
    saver, fresh = HTTPSaver(saver_url), HTTPSaver(saver_url)
    graph, config = chat_graph(saver, Chat), chat_config()
    for i in range(5):
        graph.invoke({"messages": [f"hi {i}"]}, config, durability="sync")
    listed = list(saver.list(config))
    newest, parent = listed[0].config, listed[1].config
    before = saver.get_delta_channel_history(config=newest, channels=["messages"])
    if change == "put_writes":
        saver.put_writes(parent, [("messages", ["late"])], "late-task")
    elif change == "aput_writes":
        asyncio.run(saver.aput_writes(parent, [("messages", ["late"])], "late-task"))
    elif change == "delete_thread":
        saver.delete_thread(config["configurable"]["thread_id"])
    else:
        asyncio.run(saver.adelete_thread(config["configurable"]["thread_id"]))
    got = saver.get_delta_channel_history(config=newest, channels=["messages"])
    assert got == fresh.get_delta_channel_history(config=newest, channels=["messages"])
    assert got != before
    saver.close()
    fresh.close()


def _messages(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> list[str]:
    return chat_graph(saver).get_state(config).values.get("messages", [])


def test_prune_keep_latest_keeps_the_state(saver: HTTPSaver) -> None:
    graph, config = chat_graph(saver), chat_config()
    for i in range(13):
        graph.invoke({"messages": [f"hi {i}"]}, config)
    before = graph.get_state(config).values["messages"]
    tid = config["configurable"]["thread_id"]
    assert len(list(saver.list(config))) == 39
    saver.prune([tid], strategy="keep_latest")
    assert _messages(saver, config) == before
    kept = len(list(saver.list(config)))
    assert 1 < kept < 39  # the chain back to the last snapshot, not the whole thread
    graph.invoke({"messages": ["after"]}, config)
    assert _messages(saver, config) == [*before, "after", f"reply to after ({len(before) + 1})"]


async def test_aprune_keep_latest_keeps_the_state(saver: HTTPSaver) -> None:
    graph, config = chat_graph(saver), chat_config()
    for i in range(8):
        await graph.ainvoke({"messages": [f"hi {i}"]}, config)
    before = (await graph.aget_state(config)).values["messages"]
    await saver.aprune([config["configurable"]["thread_id"]], strategy="keep_latest")
    assert (await graph.aget_state(config)).values["messages"] == before


def test_delete_for_runs_refuses_to_sever(saver: HTTPSaver) -> None:
    graph, config = chat_graph(saver), chat_config()
    runs = [str(uuid.uuid4()) for _ in range(3)]
    for i, run in enumerate(runs):
        # As Agent Server runs do: run_id in configurable lands in the metadata.
        graph.invoke({"messages": [f"hi {i}"]}, {"configurable": {**config["configurable"], "run_id": run}})
    before = graph.get_state(config).values["messages"]
    with pytest.raises(ConflictError, match="DeltaChannels"):
        saver.delete_for_runs([runs[0]])
    assert _messages(saver, config) == before
    # Rolling back the last run (what Agent Server's rollback does) is fine.
    saver.delete_for_runs([runs[-1]])
    assert _messages(saver, config) == before[:4]


def test_copy_thread_copies_the_chain(saver: HTTPSaver) -> None:
    graph, config = chat_graph(saver), chat_config()
    for i in range(9):
        graph.invoke({"messages": [f"hi {i}"]}, config)
    target: RunnableConfig = {"configurable": {"thread_id": config["configurable"]["thread_id"] + "-copy"}}
    saver.copy_thread(config["configurable"]["thread_id"], target["configurable"]["thread_id"])
    assert _messages(saver, target) == _messages(saver, config)
    src = [norm(s.values) for s in graph.get_state_history(config)]
    dst = [norm(s.values) for s in graph.get_state_history(target)]
    assert src == dst and len(src) == 27


def test_tree_of_a_delta_thread(saver: HTTPSaver) -> None:
    graph, config = chat_graph(saver), chat_config()
    for i in range(6):
        graph.invoke({"messages": [f"hi {i}"]}, config)
    tid = config["configurable"]["thread_id"]
    tree = saver.tree(tid)
    assert len(tree.nodes) == 18
    assert [n.checkpoint_id for n in saver.path(tid)] == [
        s.config["configurable"]["checkpoint_id"] for s in reversed(list(graph.get_state_history(config)))
    ]
    assert saver.abandoned(tid) == []


def test_delta_channel_counts(saver: HTTPSaver) -> None:
    """The counters LangGraph keeps are the service's signal of a chain; they round-trip."""
    graph, config = chat_graph(saver), chat_config()
    for i in range(3):
        graph.invoke({"messages": [f"hi {i}"]}, config)
    tup = saver.get_tuple(config)
    assert tup is not None
    counters = tup.metadata.get("counters_since_delta_snapshot")
    assert counters is not None and "messages" in counters
    assert operator.ge(len(counters["messages"]), 2)


def test_history_over_a_page(spawn_service: Callable[..., Any]) -> None:
    """A history over the service's page comes in pages, which the client puts together.

    A chain holding 191 MiB of writes was once one answer of 191 MiB (eight at
    once killed the service). Here the page is 4 KiB and each turn writes two
    messages of 500 bytes, so a chain of a few turns since its snapshot is over
    it: every state, sync and async, is InMemorySaver's, and reading the latest
    takes more than one request to a saver that holds no history of the
    thread (the one that ran it holds the last turn's, and is answered what
    is new since, in one).
    """
    svc = spawn_service(env={"SAVER_HISTORY_PAGE": "4096"})
    saver = CountingSaver(svc.url)
    expected_graph, graph = chat_graph(InMemorySaver(), Chat), chat_graph(saver, Chat)
    config = chat_config()
    for i in range(60):
        message = f"hi {i} " + "x" * 500
        got = graph.invoke({"messages": [message]}, config, durability="sync")
        assert got == expected_graph.invoke({"messages": [message]}, config, durability="sync")
    saver.calls.clear()
    state = graph.get_state(config)
    assert state.values == expected_graph.get_state(config).values
    assert len(state.values["messages"]) == 120
    assert saver.calls["delta-history"] <= 1, saver.calls
    fresh = CountingSaver(svc.url)
    assert chat_graph(fresh, Chat).get_state(config).values == state.values
    assert fresh.calls["delta-history"] > 1, fresh.calls
    fresh.close()
    assert history_sig(list(graph.get_state_history(config))) == history_sig(
        list(expected_graph.get_state_history(config))
    )

    async def astate() -> Any:
        return (await graph.aget_state(config)).values

    assert asyncio.run(astate()) == state.values
    saver.close()


class RecordingSaver(HTTPSaver):
    """Records the saver's delta-history requests: (body, answer or error)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.asked: list[tuple[dict[str, Any], Any]] = []
        request, arequest = self._transport.request, self._transport.arequest

        def recorded(method: str, path: str, **kw: Any) -> Any:
            try:
                out = request(method, path, **kw)
            except Exception as exc:
                if path.endswith("/delta-history"):
                    self.asked.append((dict(kw["body"]), exc))
                raise
            if path.endswith("/delta-history"):
                self.asked.append((dict(kw["body"]), out))
            return out

        async def arecorded(method: str, path: str, **kw: Any) -> Any:
            try:
                out = await arequest(method, path, **kw)
            except Exception as exc:
                if path.endswith("/delta-history"):
                    self.asked.append((dict(kw["body"]), exc))
                raise
            if path.endswith("/delta-history"):
                self.asked.append((dict(kw["body"]), out))
            return out

        self._transport.request = recorded  # type: ignore[method-assign]
        self._transport.arequest = arecorded  # type: ignore[method-assign]


def _writes_answered(answer: Any) -> int:
    return sum(len(h.get("writes") or []) for h in answer["channels"].values())


@pytest.mark.parametrize("api", ["invoke", "ainvoke"])
def test_a_turn_is_answered_what_is_new(saver_url: str, api: Api) -> None:
    """The saver holds the last history per thread and names its checkpoint as
    `known`: each turn's answer is the last turn's writes, not the chain back
    to the snapshot (which grew with the turn: 150 turns, 300 writes), and
    the state is InMemorySaver's at every turn."""
    saver = RecordingSaver(saver_url)
    expected_graph, graph = chat_graph(InMemorySaver(), Chat), chat_graph(saver, Chat)
    config = chat_config()
    r, expected_r = Runner(saver, api, "sync"), Runner(InMemorySaver(), api, "sync")
    for i in range(40):
        assert r.run(graph, {"messages": [f"hi {i}"]}, config) == expected_r.run(
            expected_graph, {"messages": [f"hi {i}"]}, config
        )
    asked = saver.asked[5:]
    assert asked and all(body.get("known") for body, _ in asked), [b for b, _ in asked]
    assert max(_writes_answered(a) for _, a in asked) <= 4, [_writes_answered(a) for _, a in asked]
    # A saver that holds nothing is answered the whole, and agrees.
    fresh = RecordingSaver(saver_url)
    state = chat_graph(fresh, Chat).get_state(config).values
    assert state == graph.get_state(config).values
    assert len(state["messages"]) == 80
    assert "known" not in fresh.asked[0][0] and _writes_answered(fresh.asked[0][1]) >= 40
    saver.close()
    fresh.close()


def test_held_history_and_another_savers_turns(saver_url: str) -> None:
    """Two savers (two processes, or replicas behind a balancer) take turns on
    a thread: each one's held history is at an ancestor of the other's
    checkpoints, and what it is answered since holds the other's turns."""
    a, b = RecordingSaver(saver_url), RecordingSaver(saver_url)
    expected_graph = chat_graph(InMemorySaver(), Chat)
    config = chat_config()
    graphs = [chat_graph(a, Chat), chat_graph(b, Chat)]
    for i in range(24):
        graph = graphs[(i // 3) % 2]  # three turns each
        assert graph.invoke({"messages": [f"hi {i}"]}, config) == expected_graph.invoke(
            {"messages": [f"hi {i}"]}, config
        )
    for s in (a, b):
        assert any(body.get("known") for body, _ in s.asked)
        assert not any(isinstance(out, Exception) for _, out in s.asked)
    want = expected_graph.get_state(config).values
    assert graphs[0].get_state(config).values == want == graphs[1].get_state(config).values
    a.close()
    b.close()


@pytest.mark.parametrize("api", ["invoke", "ainvoke"])
def test_held_history_and_a_fork(saver_url: str, api: Api) -> None:
    """A branch does not splice the history held on another: after a turn on
    the main branch, the saver holds its history there, and a turn on a
    branch replayed from an older checkpoint (no snapshot on its chain)
    names it as known; the service refuses it (the chain does not reach
    it), the saver asks for the whole and holds that. States are
    InMemorySaver's, on both branches."""

    def scenario(r: Runner) -> Trace:
        graph, config = chat_graph(r.saver, Chat), chat_config()
        for i in range(8):
            r.run(graph, {"messages": [f"hi {i}"]}, config)
        history = r.history(graph, config)
        tip = history[0].config
        old = next(s for s in history if s.metadata and s.metadata.get("step") == 7)
        replay = r.run(graph, None, old.config)
        branch = r.state(graph, config).config  # the replay's newest checkpoint
        again = r.run(graph, {"messages": ["on the main branch"]}, tip)
        on_branch = r.run(graph, {"messages": ["on the replayed branch"]}, branch)
        return {"replay": replay, "again": again, "on_branch": on_branch}

    expected = scenario(Runner(InMemorySaver(), api, "sync"))
    saver = RecordingSaver(saver_url)
    assert scenario(Runner(saver, api, "sync")) == expected
    refused = [body for body, out in saver.asked if isinstance(out, InvalidRequestError)]
    assert len(refused) == 1 and refused[0].get("known"), saver.asked
    saver.close()


def test_held_history_dropped_on_own_writes_to_an_ancestor(saver_url: str) -> None:
    """A write the saver makes to an ancestor of the held history's checkpoint
    (LangGraph never does; the store takes it) drops what it holds: the next
    history is the whole, with the write, as a fresh saver reads it."""
    saver = RecordingSaver(saver_url)
    graph, config = chat_graph(saver, Chat), chat_config()
    for i in range(6):
        graph.invoke({"messages": [f"hi {i}"]}, config)
    listed = list(saver.list(config))
    newest, old = listed[0].config, listed[4].config
    saver.get_delta_channel_history(config=newest, channels=["messages"])
    saver.put_writes(old, [("messages", ["late"])], "late-task")
    saver._listings.clear()  # what the listing read is another concern (see above)
    got = saver.get_delta_channel_history(config=newest, channels=["messages"])
    with HTTPSaver(saver_url) as fresh:
        assert got == fresh.get_delta_channel_history(config=newest, channels=["messages"])
    assert "known" not in saver.asked[-1][0]
    saver.close()
