"""The checkpoint tree through HTTPSaver: real graphs that fork, fail, pause and
nest, and the typed answers of every tree query, sync and async."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from saver_client import (
    Branch,
    HTTPSaver,
    NotFoundError,
    ResumeContext,
    ThreadTree,
    TreeNode,
)

from support.graphs import interrupt_graph
from test_graphs import Log, sequential_graph, subgraph_graph


def new_config(prefix: str = "tree") -> RunnableConfig:
    return {"configurable": {"thread_id": f"{prefix}-{uuid.uuid4()}"}}


def forked_thread(saver: HTTPSaver) -> tuple[str, list[str]]:
    """a -> b -> c, then an edit after a and b -> c again: the first b, c abandoned.

    Returns the thread id and the checkpoint ids of the first run, oldest first.
    """
    calls: Counter[str] = Counter()
    graph = sequential_graph(saver, calls)
    config = new_config()
    graph.invoke({"log": ["in"], "n": 0}, config)
    first = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)]
    first.reverse()
    after_a = next(s for s in graph.get_state_history(config) if s.next == ("b",))
    edited = graph.update_state(after_a.config, {"log": ["edited"]})
    graph.invoke(None, edited)
    assert calls == {"a": 1, "b": 2, "c": 2}
    return str(config["configurable"]["thread_id"]), first


def test_fork_leaves_an_abandoned_branch(saver: HTTPSaver) -> None:
    thread_id, first = forked_thread(saver)
    # first: input, start, after a, after b, after c
    assert len(first) == 5
    after_a, old_b, old_c = first[2], first[3], first[4]

    tree = saver.tree(thread_id)
    assert isinstance(tree, ThreadTree) and tree.thread_id == thread_id
    assert len(tree.nodes) == 8
    head = tree.head
    assert head is not None and (head.step, head.source, head.status) == (4, "loop", "ok")

    path = saver.path(thread_id)
    assert all(isinstance(n, TreeNode) for n in path)
    assert [(n.step, n.source) for n in path] == [
        (-1, "input"),
        (0, "loop"),
        (1, "loop"),
        (2, "update"),
        (3, "loop"),
        (4, "loop"),
    ]
    assert [n.checkpoint_id for n in path[:3]] == first[:3]
    assert path[-1] == head and tree.live_path == tuple(path)
    assert all(n.on_live_path for n in path)

    # Parents come before children in the compact form.
    seen: set[str] = set()
    for n in tree.nodes:
        assert n.parent_id is None or n.parent_id in seen
        seen.add(n.checkpoint_id)

    # The edit made a sibling of the first run's b.
    kids = saver.children(thread_id, after_a)
    assert [k.checkpoint_id for k in kids] == [old_b, path[3].checkpoint_id]
    assert [(k.source, k.on_live_path) for k in kids] == [("loop", False), ("update", True)]
    assert tree.children(after_a) == tuple(kids)
    assert saver.children(thread_id) == []  # the head's

    leaves = saver.leaves(thread_id)
    assert [n.checkpoint_id for n in leaves] == [old_c, head.checkpoint_id]
    assert saver.abandoned(thread_id) == [
        Branch(checkpoint_ids=(old_b, old_c), fork_point=after_a, from_id=after_a, status="ok")
    ]
    old = saver.path(thread_id, old_c)
    assert [n.checkpoint_id for n in old] == first
    assert [n.on_live_path for n in old] == [True, True, True, False, False]

    ctx = saver.resume_context(thread_id)
    assert isinstance(ctx, ResumeContext) and str(ctx) == ctx.text
    assert ctx.text.splitlines() == [
        "step -1 · input",
        "step 0",
        "step 1 · 1 abandoned branch",
        "step 2 · update",
        "step 3",
        "step 4",
    ]
    assert saver.resume_context(thread_id, limit=2).text.splitlines() == [
        "… 4 earlier steps left out",
        "step 3",
        "step 4",
    ]
    drawing = ctx.drawing.splitlines()
    assert len(drawing) == 8
    assert f"{old_c} · step 3 · loop · ok · abandoned" in ctx.drawing
    assert any(line.startswith("├─ ") and old_b in line for line in drawing)
    assert drawing[-1] == f"{head.checkpoint_id} · step 4 · loop · ok · head"


def test_failed_step_is_error_until_retried(saver: HTTPSaver) -> None:
    fail = {"b": True}

    def node(name: str) -> Any:
        def run(state: Log) -> Log:
            if fail.get(name):
                fail[name] = False
                raise RuntimeError(f"{name} failed")
            return {"log": [name]}

        return run

    g = StateGraph(Log)
    for name in ("a", "b"):
        g.add_node(name, node(name))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    graph = g.compile(checkpointer=saver)
    config = new_config()
    thread_id = str(config["configurable"]["thread_id"])

    with pytest.raises(RuntimeError):
        graph.invoke({"log": []}, config, durability="sync")
    head = saver.tree(thread_id).head
    assert head is not None
    assert (head.step, head.status, head.has_error, head.failed) == (1, "error", True, True)
    assert saver.resume_context(thread_id).text.splitlines()[-1] == "step 1 · error"

    graph.invoke(None, config, durability="sync")
    tree = saver.tree(thread_id)
    assert tree.failures == (tree.get(head.checkpoint_id),)
    assert tree.failures[0].status == "retried" and tree.failures[0].on_live_path
    assert tree.head is not None and tree.head.status == "ok"


def test_interrupt_then_resume(saver: HTTPSaver) -> None:
    calls: Counter[str] = Counter()
    graph = interrupt_graph(saver, calls)
    config = new_config()
    thread_id = str(config["configurable"]["thread_id"])
    graph.invoke({"log": ["in"]}, config)
    head = saver.tree(thread_id).head
    assert head is not None
    assert (head.status, head.has_interrupt) == ("interrupted", True)

    graph.invoke(Command(resume="Ada"), config)
    paused = saver.tree(thread_id).get(head.checkpoint_id)
    assert paused is not None and paused.status == "resumed"
    assert "interrupted, resumed" in saver.resume_context(thread_id).text


def test_subgraph_nodes_hang_under_the_parent(saver: HTTPSaver) -> None:
    calls: Counter[str] = Counter()
    graph = subgraph_graph(saver, calls)
    config = new_config()
    thread_id = str(config["configurable"]["thread_id"])
    graph.invoke({"log": ["in"]}, config)

    tree = saver.tree(thread_id)
    namespaces = {n.checkpoint_ns for n in tree.nodes}
    sub_ns = next(ns for ns in namespaces if ns.startswith("sub:") and "|" not in ns)
    inner_ns = next(ns for ns in namespaces if "|inner:" in ns)
    assert namespaces == {"", sub_ns, inner_ns}

    # The innermost graph's last checkpoint: its path crosses both parents.
    inner_leaf = max(
        (n for n in tree.nodes if n.checkpoint_ns == inner_ns), key=lambda n: n.checkpoint_id
    )
    path = saver.path(thread_id, inner_leaf.checkpoint_id, inner_ns)
    assert path[-1] == inner_leaf
    depths = [0 if n.checkpoint_ns == "" else n.checkpoint_ns.count("|") + 1 for n in path]
    assert depths[0] == 0 and depths == sorted(depths) and set(depths) == {0, 1, 2}

    # The subgraph's first checkpoint is a child of the parent-graph checkpoint
    # that ran it, and names it as its parent across namespaces.
    sub_root = path[[n.checkpoint_ns for n in path].index(sub_ns)]
    assert sub_root.parent_ns == ""
    runner = tree.get(str(sub_root.parent_id))
    assert runner is not None
    assert sub_root in saver.children(thread_id, runner.checkpoint_id)
    assert inner_leaf in saver.leaves(thread_id)
    assert saver.abandoned(thread_id) == []  # subgraph leaves are not abandoned


def test_errors(saver: HTTPSaver) -> None:
    missing = f"missing-{uuid.uuid4()}"
    for query in (saver.tree, saver.leaves, saver.abandoned, saver.path, saver.resume_context):
        with pytest.raises(NotFoundError):
            query(missing)
    thread_id, _ = forked_thread(saver)
    with pytest.raises(NotFoundError):
        saver.path(thread_id, "no-such-checkpoint")
    with pytest.raises(ValueError, match="checkpoint_id"):
        saver.children(thread_id, checkpoint_ns="sub:1")
    with pytest.raises(ValueError, match="limit"):
        saver.resume_context(thread_id, limit=-1)


def test_async_twins_answer_the_same(saver_url: str) -> None:
    with HTTPSaver(saver_url) as saver:
        thread_id, first = forked_thread(saver)
        sync = (
            saver.tree(thread_id),
            saver.path(thread_id, first[-1]),
            saver.children(thread_id, first[2]),
            saver.leaves(thread_id),
            saver.abandoned(thread_id),
            saver.resume_context(thread_id, limit=3),
        )

    async def queries() -> tuple[Any, ...]:
        async with HTTPSaver(saver_url) as s:
            answers = await asyncio.gather(
                s.atree(thread_id),
                s.apath(thread_id, first[-1]),
                s.achildren(thread_id, first[2]),
                s.aleaves(thread_id),
                s.aabandoned(thread_id),
                s.aresume_context(thread_id, limit=3),
            )
            with pytest.raises(NotFoundError):
                await s.atree(f"missing-{uuid.uuid4()}")
            return tuple(answers)

    assert asyncio.run(queries()) == sync


def test_nodes_from_the_wire() -> None:
    """Nodes read from the wire: a key the client does not know is left out,
    an empty parent is None, and a node with a key missing is a
    BadResponseError that names it."""
    from saver_client.errors import BadResponseError
    from saver_client.tree import nodes_from_wire

    def wire(**over: Any) -> dict[str, Any]:
        node = {
            "id": "c2",
            "ns": "",
            "parent": "c1",
            "parent_ns": "",
            "source": "loop",
            "step": 2,
            "status": "ok",
            "has_error": False,
            "has_interrupt": True,
            "on_live_path": True,
            "orphan": False,
        }
        node.update(over)
        return node

    want = TreeNode(
        checkpoint_id="c2",
        checkpoint_ns="",
        parent_id="c1",
        parent_ns="",
        source="loop",
        step=2,
        status="ok",
        has_error=False,
        has_interrupt=True,
        on_live_path=True,
        orphan=False,
    )
    plain, extra = nodes_from_wire({"nodes": [wire(), wire(new_field=1)]})
    assert plain == want and extra == want
    assert vars(plain) == vars(want) and not hasattr(extra, "new_field")
    (root,) = nodes_from_wire({"nodes": [wire(parent="")]})
    assert root.parent_id is None
    missing = wire()
    del missing["orphan"]
    with pytest.raises(BadResponseError, match="orphan"):
        nodes_from_wire({"nodes": [missing]})
    tree = ThreadTree.from_wire({"thread_id": "t", "head": wire(), "nodes": [wire()]})
    assert tree.nodes == (want,) and tree.head == want

    # The same nodes as columns (layout=columns): one array per field.
    def columns(*nodes: dict[str, Any]) -> dict[str, Any]:
        return {"columns": {k: [n[k] for n in nodes] for k in wire()}}

    second = wire(id="c3", parent="", step=3, status="error", has_error=True, orphan=True)
    first, other = nodes_from_wire(columns(wire(), second))
    assert first == want and vars(first) == vars(want)
    assert other == TreeNode(
        **{
            **vars(want),
            "checkpoint_id": "c3",
            "parent_id": None,
            "step": 3,
            "status": "error",
            "has_error": True,
            "orphan": True,
        }
    )
    assert nodes_from_wire(columns()) == []
    tree = ThreadTree.from_wire({"thread_id": "t", "head": wire(), **columns(wire())})
    assert tree.nodes == (want,) and tree.head == want
    short = columns(wire(), second)
    short["columns"]["status"].pop()
    no_orphan = columns(wire())
    del no_orphan["columns"]["orphan"]
    for bad, name in [
        (short, "status"),
        (no_orphan, "orphan"),
        ({"columns": {**columns(wire())["columns"], "id": "c2"}}, "id"),
        ({"columns": [wire()]}, "not a map"),
    ]:
        with pytest.raises(BadResponseError, match=name):
            nodes_from_wire(bad)
