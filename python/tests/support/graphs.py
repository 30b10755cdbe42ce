"""Graphs both suites run: a question that interrupts, and a chat whose
messages are a DeltaChannel (stored as writes, rebuilt from the chain)."""

from __future__ import annotations

import operator
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

from support.compare import Graph


class Ask(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    name: str


def interrupt_graph(saver: Any, calls: Counter[str]) -> Graph:
    def before(state: Ask) -> Ask:
        calls["before"] += 1
        return {"log": ["before"]}

    def ask(state: Ask) -> Ask:
        calls["ask"] += 1
        name = interrupt({"question": "name?"})
        return {"log": ["ask"], "name": name}

    def after(state: Ask) -> Ask:
        calls["after"] += 1
        return {"log": [f"hello {state['name']}"]}

    g = StateGraph(Ask)
    g.add_node("before", before)
    g.add_node("ask", ask)
    g.add_node("after", after)
    g.add_edge(START, "before")
    g.add_edge("before", "ask")
    g.add_edge("ask", "after")
    g.add_edge("after", END)
    return g.compile(checkpointer=saver)


def concat(state: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    """A batching-invariant list reducer: append every write, in order."""
    out = list(state)
    for w in writes:
        out.extend(w)
    return out


class Chat(TypedDict, total=False):
    messages: Annotated[list[str], DeltaChannel(concat)]
    turns: int


class SmallChat(TypedDict, total=False):
    # Snapshots every 5 updates, so that short threads cross several.
    messages: Annotated[list[str], DeltaChannel(concat, snapshot_frequency=5)]
    turns: int


def chat_config() -> RunnableConfig:
    return {"configurable": {"thread_id": f"delta-{uuid.uuid4()}"}}


def chat_graph(saver: BaseCheckpointSaver[Any], state: type = SmallChat) -> Graph:
    def reply(s: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [f"reply to {s['messages'][-1]} ({len(s['messages'])})"], "turns": s.get("turns", 0) + 1}

    g = StateGraph(state)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    return g.compile(checkpointer=saver)
