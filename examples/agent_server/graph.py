"""The Agent Server example's graph: the server supplies its checkpointer and its store.

`remember` keeps the run's `note` as a memory of the user in the Store, LangGraph's
long-term memory, which every thread shares; `recall` reads all of the user's
memories back into the state, those of earlier threads included.
"""

from __future__ import annotations

import uuid

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import NotRequired, TypedDict


class State(TypedDict):
    user: str
    note: NotRequired[str]
    memories: NotRequired[list[str]]


def memories_of(user: str) -> tuple[str, ...]:
    return ("users", user, "memories")


async def remember(state: State, runtime: Runtime) -> dict:
    if note := state.get("note"):
        # Keyed by the text: the same note twice is one memory, and a step run
        # again after an outage writes nothing new.
        key = str(uuid.uuid5(uuid.NAMESPACE_OID, note))
        await runtime.store.aput(memories_of(state["user"]), key, {"text": note})
    return {}


async def recall(state: State, runtime: Runtime) -> dict:
    items = await runtime.store.asearch(memories_of(state["user"]), limit=100)
    return {"memories": sorted(item.value["text"] for item in items)}


builder = StateGraph(State)
builder.add_node(remember)
builder.add_node(recall)
builder.add_edge(START, "remember")
builder.add_edge("remember", "recall")
builder.add_edge("recall", END)
graph = builder.compile()
