"""A one-node graph for the Agent Server example; the server supplies the checkpointer."""

from typing_extensions import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    n: int


builder = StateGraph(State)
builder.add_node("inc", lambda s: {"n": s["n"] + 1})
builder.add_edge(START, "inc")
builder.add_edge("inc", END)
graph = builder.compile()
