"""Running graphs the same way on two savers and comparing what they remember.

Checkpoint ids, task ids and interrupt ids differ between two runs by design
(they are time-based or derived from checkpoint ids), so snapshots are compared
through a signature that keeps everything else and expresses links between
checkpoints structurally: a parent is named by its position in the history.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt, Send, StateSnapshot

Api = Literal["invoke", "stream", "ainvoke", "astream"]
Durability = Literal["sync", "async", "exit"]
APIS: tuple[Api, ...] = ("invoke", "stream", "ainvoke", "astream")
DURABILITIES: tuple[Durability, ...] = ("sync", "async", "exit")

T = TypeVar("T")
# A compiled graph of any state, context, input and output types.
Graph = Pregel[Any, Any, Any, Any]


def norm(x: Any) -> Any:
    """A comparable form of run outputs and state values (ids removed)."""
    if isinstance(x, Interrupt):
        return ("interrupt", norm(x.value))
    if isinstance(x, Send):
        return ("send", x.node, norm(x.arg))
    if isinstance(x, Command):
        return ("command", norm(x.update), norm(x.resume), norm(x.goto))
    if isinstance(x, BaseException):
        return ("error", type(x).__name__, str(x))
    if isinstance(x, StateSnapshot):
        return snapshot_sig(x, {})
    if isinstance(x, dict):
        return {k: norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(norm(v) for v in x)
    return x


def ns_shape(config: RunnableConfig) -> tuple[str, ...]:
    """A namespace without its task ids: "sub:1f2e|inner:9a" -> ("sub", "inner")."""
    ns = config["configurable"].get("checkpoint_ns", "")
    return tuple(part.split(":")[0] for part in ns.split("|")) if ns else ()


def snapshot_sig(s: StateSnapshot, positions: dict[str, int]) -> dict[str, Any]:
    parent_id = (s.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    metadata = s.metadata or {}
    return {
        "values": norm(s.values),
        "next": s.next,
        "ns": ns_shape(s.config),
        "source": metadata.get("source"),
        "step": metadata.get("step"),
        "parent_namespaces": sorted(metadata.get("parents", {})),
        # Within one history, the parent is named by its position; a parent
        # outside the listed history (another namespace) only by its existence.
        "parent": None if parent_id is None else positions.get(parent_id, "not in this history"),
        "has_created_at": bool(s.created_at),
        "interrupts": [norm(i.value) for i in s.interrupts],
        "tasks": [
            {
                "name": t.name,
                "error": norm(t.error),
                "interrupts": [norm(i.value) for i in t.interrupts],
                "result": norm(t.result),
                "state": snapshot_sig(t.state, {}) if isinstance(t.state, StateSnapshot) else None,
            }
            for t in s.tasks
        ],
    }


def history_sig(history: list[StateSnapshot]) -> list[dict[str, Any]]:
    positions = {s.config["configurable"]["checkpoint_id"]: i for i, s in enumerate(history)}
    return [snapshot_sig(s, positions) for s in history]


class Runner:
    """Drives a graph through one API family (sync or async) with one durability."""

    def __init__(self, saver: BaseCheckpointSaver[Any], api: Api, durability: Durability) -> None:
        self.saver = saver
        self.api = api
        self.durability = durability

    @property
    def is_async(self) -> bool:
        return self.api in ("ainvoke", "astream")

    def _arun(self, make: Callable[[], Awaitable[T]]) -> T:
        # Each call gets a fresh event loop, as separate asyncio.run calls in an
        # application would; the saver must not reuse a client across loops.
        async def main() -> T:
            return await make()

        return asyncio.run(main())

    def run(self, graph: Graph, inp: Any, config: RunnableConfig) -> Any:
        """Run the graph; return its output (or streamed values) in comparable form.

        Streams use mode "values": "updates" arrive in task completion order,
        which differs between any two runs with parallel tasks.
        """
        kw: dict[str, Any] = {"durability": self.durability}
        if self.api == "invoke":
            return norm(graph.invoke(inp, config, **kw))
        if self.api == "stream":
            return norm(list(graph.stream(inp, config, stream_mode="values", **kw)))
        if self.api == "ainvoke":
            return norm(self._arun(lambda: graph.ainvoke(inp, config, **kw)))

        async def collect() -> list[Any]:
            return [c async for c in graph.astream(inp, config, stream_mode="values", **kw)]

        return norm(self._arun(collect))

    def run_error(self, graph: Graph, inp: Any, config: RunnableConfig) -> Any:
        """Run a graph that is expected to raise; return the error in comparable form."""
        try:
            out = self.run(graph, inp, config)
        except Exception as exc:  # the node's own exception, re-raised by the graph
            return norm(exc)
        raise AssertionError(f"expected the run to fail, it returned {out!r}")

    def state(
        self, graph: Graph, config: RunnableConfig, *, subgraphs: bool = False
    ) -> StateSnapshot:
        if self.is_async:
            return self._arun(lambda: graph.aget_state(config, subgraphs=subgraphs))
        return graph.get_state(config, subgraphs=subgraphs)

    def history(self, graph: Graph, config: RunnableConfig) -> list[StateSnapshot]:
        if self.is_async:

            async def collect() -> list[StateSnapshot]:
                return [s async for s in graph.aget_state_history(config)]

            return self._arun(collect)
        return list(graph.get_state_history(config))

    def update(
        self,
        graph: Graph,
        config: RunnableConfig,
        values: dict[str, Any] | None,
        as_node: str | None = None,
    ) -> RunnableConfig:
        if self.is_async:
            return self._arun(lambda: graph.aupdate_state(config, values, as_node=as_node))
        return graph.update_state(config, values, as_node=as_node)

    def count_checkpoints(self, thread_id: str) -> int:
        """Checkpoints of the thread in every namespace (no checkpoint_ns given)."""
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        if self.is_async:

            async def count() -> int:
                return len([t async for t in self.saver.alist(config)])

            return self._arun(count)
        return len(list(self.saver.list(config)))
