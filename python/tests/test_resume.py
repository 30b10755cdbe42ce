"""The resumed agent's memory on a real graph: a retried error and a fork by
update_state, then the resume context with values and the live messages."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from saver_client import HTTPSaver


def agent_thread(saver: HTTPSaver) -> tuple[Any, Any]:
    """agent -> tools. The agent fails once (a 429) and is retried; then an
    update_state after the agent forks the thread and tools runs again, so
    the first tools result (t1) is left on an abandoned branch."""
    calls: Counter[str] = Counter()

    def agent(state: MessagesState) -> dict[str, Any]:
        calls["agent"] += 1
        if calls["agent"] == 1:
            raise ValueError("429 rate limited")
        return {"messages": [AIMessage("calling the tool", id="a1")]}

    def tools(state: MessagesState) -> dict[str, Any]:
        calls["tools"] += 1
        n = calls["tools"]
        return {"messages": [ToolMessage(f"result {n}", tool_call_id="c1", id=f"t{n}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "tools")
    builder.add_edge("tools", END)
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": f"resume-{uuid.uuid4()}"}}
    try:
        graph.invoke({"messages": [HumanMessage("what is 2+2?", id="h1")]}, config)
    except ValueError:
        pass
    else:
        raise AssertionError("the first agent call should fail")
    graph.invoke(None, config)
    after_agent = next(s for s in graph.get_state_history(config) if s.next == ("tools",))
    edited = graph.update_state(
        after_agent.config, {"messages": [HumanMessage("use the other tool", id="h2")]}, as_node="agent"
    )
    graph.invoke(None, edited)
    assert calls == {"agent": 2, "tools": 2}
    return graph, config


def test_live_path_context_and_messages(saver: HTTPSaver) -> None:
    graph, config = agent_thread(saver)
    thread_id = config["configurable"]["thread_id"]

    ctx = saver.resume_context(thread_id, values=True)
    path = saver.path(thread_id)
    # Every live-path step appears, in order.
    assert [s["checkpoint_id"] for s in ctx.steps] == [n.checkpoint_id for n in path]
    assert ctx.text.splitlines() == [
        "step -1 · input: __start__ wrote messages: human: what is 2+2?",
        "step 0 · error, retried: agent failed: ValueError('429 rate limited'); then wrote messages: ai: calling the tool",
        "step 1",
        "  abandoned: 1 checkpoint, ok",
        "step 2 · update: update_state wrote messages: human: use the other tool; tools wrote messages: tool: result 2",
        "step 3",
    ], ctx.text
    nodes = [t["node"] for s in ctx.steps for t in s["tasks"]]
    assert nodes == ["__start__", "agent", "update_state", "tools"]

    # The live messages are the head's state, and t1, written only on the
    # abandoned branch, is not among them.
    live = saver.live_messages(thread_id)
    state = graph.get_state(config).values["messages"]
    assert [(type(m), m.id, m.content) for m in live] == [
        (type(m), m.id, m.content) for m in state
    ]
    assert [m.id for m in live] == ["h1", "a1", "h2", "t2"]
    assert "result 1" not in ctx.text

    # Options: the last two steps, values cut short.
    short = saver.resume_context(thread_id, values=True, limit=2, value_bytes=8)
    assert short.text.splitlines()[0] == "… 3 earlier steps left out"
    assert len(short.steps) == 2
    # Without values the answer is as before: one line per checkpoint.
    assert saver.resume_context(thread_id).steps == []
