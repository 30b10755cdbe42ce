"""Delta histories' values decoded once and handed out as copies (`_decoded`)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from saver_client import _wire as wire
from saver_client._decoded import Decoded


class CountingSerde(JsonPlusSerializer):
    def __init__(self) -> None:
        super().__init__()
        self.loads = 0

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        self.loads += 1
        return super().loads_typed(data)


class ByIdentity:
    """Compares by identity, as a class without __eq__ does: a copy of it
    cannot be told to be the same value."""

    def __init__(self, n: int) -> None:
        self.n = n


class Unpicklable:
    def __init__(self) -> None:
        self.f = lambda: None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unpicklable)


def decode_twice(value: Any, decoded: Decoded | None = None) -> tuple[Any, Any, int]:
    serde = CountingSerde()
    key = serde.dumps_typed(value)
    d = decoded if decoded is not None else Decoded()
    first = d.value(serde, key, lambda: serde.loads_typed(key))
    second = d.value(serde, key, lambda: serde.loads_typed(key))
    return first, second, serde.loads


def messages(n: int) -> list[Any]:
    return add_messages(
        [], [HumanMessage(f"q {i}") if i % 2 == 0 else AIMessage(f"a {i}") for i in range(n)]
    )


@pytest.mark.parametrize(
    "value",
    [messages(30), {"a": [1, 2.5, "x"], "b": {"c": None}}, "text", 7, [HumanMessage("no id")]],
    ids=["messages", "dict", "str", "int", "a message without an id"],
)
def test_a_value_is_decoded_once_and_copied_after(value: Any) -> None:
    first, second, loads = decode_twice(value)
    assert loads == 1
    assert first == value and second == value
    assert type(second) is type(value)


def test_every_copy_is_an_object_of_its_own() -> None:
    """A reducer that changes what it was handed (add_messages gives
    messages ids) changes nothing another read is handed."""
    d = Decoded()
    serde = JsonPlusSerializer()
    key = serde.dumps_typed([HumanMessage("no id"), {"k": [1]}])
    reads = [d.value(serde, key, lambda: serde.loads_typed(key)) for _ in range(3)]
    for r in reads:
        r[0].id = "given"
        r[1]["k"].append(2)
        r.append("more")
    fresh = d.value(serde, key, lambda: serde.loads_typed(key))
    assert fresh == [HumanMessage("no id"), {"k": [1]}]
    assert fresh[0].id is None
    assert len({id(r) for r in [*reads, fresh]}) == 4
    assert len({id(r[0]) for r in [*reads, fresh]}) == 4


@pytest.mark.parametrize("value", [ByIdentity(3), Unpicklable(), float("nan")], ids=["identity", "unpicklable", "nan"])
def test_a_value_pickle_cannot_vouch_for_is_decoded_afresh(value: Any) -> None:
    serde = CountingSerde()
    key = ("pickle-free", repr(type(value)).encode())
    d = Decoded()
    made: list[Any] = []

    def decode() -> Any:
        serde.loads += 1
        made.append(value)
        return value

    for _ in range(3):
        assert d.value(serde, key, decode) is value
    assert serde.loads == 3  # every time, as before the copies


def test_another_serializer_starts_over() -> None:
    d = Decoded()
    first, _, loads = decode_twice(messages(4), d)
    assert loads == 1
    # decode_twice makes a new serializer: the copies of the last are dropped.
    _, _, loads = decode_twice(messages(4), d)
    assert loads == 1
    assert len(d) == 1


def test_bounded_least_recently_used_first() -> None:
    serde = JsonPlusSerializer()
    d = Decoded(max_entries=2)
    keys = [serde.dumps_typed(f"v{i}") for i in range(3)]
    for k in keys[:2]:
        d.value(serde, k, lambda k=k: serde.loads_typed(k))
    d.value(serde, keys[0], lambda: pytest.fail("held"))  # keys[0] used last
    d.value(serde, keys[2], lambda: serde.loads_typed(keys[2]))
    assert len(d) == 2
    d.value(serde, keys[0], lambda: pytest.fail("held"))
    calls = []
    d.value(serde, keys[1], lambda: calls.append(1) or serde.loads_typed(keys[1]))
    assert calls == [1]  # keys[1] was dropped


def test_a_value_over_the_byte_bound_is_decoded_afresh() -> None:
    serde = CountingSerde()
    value = "x" * 10_000
    key = serde.dumps_typed(value)
    d = Decoded(max_bytes=5_000)
    for _ in range(3):
        assert d.value(serde, key, lambda: serde.loads_typed(key)) == value
    assert serde.loads == 3
    d.clear()
    assert len(d) == 0


def test_histories_with_copies_equal_histories_decoded_afresh() -> None:
    serde = CountingSerde()
    seed = wire.typed(serde, messages(40))
    writes = [
        {"task_id": f"t{i}", "channel": "messages", "value": wire.typed(serde, [HumanMessage(f"w {i}")])}
        for i in range(5)
    ]
    raw = {"messages": wire.RawHistory(writes=writes, seed=seed)}
    afresh = wire.to_histories(serde, raw)
    d = Decoded()
    assert wire.to_histories(serde, raw, d) == afresh
    serde.loads = 0
    again = wire.to_histories(serde, raw, d)
    assert again == afresh and serde.loads == 0
    again["messages"]["seed"].append(AIMessage("changed"))
    assert wire.to_histories(serde, raw, d) == afresh


def add_all(state: list[Any], writes: list[Any]) -> list[Any]:
    for w in writes:
        state = add_messages(state, w)
    return state


class Chat(TypedDict):
    messages: Annotated[list[Any], DeltaChannel(add_all, snapshot_frequency=3)]


def test_the_saver_drops_its_copies_with_the_threads_it_deletes(saver: Any) -> None:
    """What the client holds of a deleted thread's values goes with it."""
    g = StateGraph(Chat)
    g.add_node("reply", lambda s: {"messages": [AIMessage(f"reply {len(s['messages'])}")]})
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    graph = g.compile(checkpointer=saver)
    for thread in ("decoded-a", "decoded-b"):
        config = {"configurable": {"thread_id": thread}}
        for i in range(4):
            graph.invoke({"messages": [HumanMessage(f"hi {i}")]}, config)
        assert [m.content for m in graph.get_state(config).values["messages"]][-2:] == ["hi 3", "reply 7"]
    assert len(saver._decoded) > 0
    saver.delete_thread("decoded-a")
    assert len(saver._decoded) == 0
    graph.invoke({"messages": [HumanMessage("again")]}, {"configurable": {"thread_id": "decoded-b"}})
    saver.prune(["decoded-b"])
    assert len(saver._decoded) == 0
