"""Typed answers of the service's tree queries: a thread's checkpoints as a tree.

Every checkpoint is a node whose parent is the checkpoint it followed; forks
(time travel, `update_state`) are siblings, and a subgraph's first checkpoint
hangs under the parent-graph checkpoint that ran it. The *live path* runs from
the root to the *head*, the checkpoint LangGraph resumes from.

A node's `status` says what became of the step run after it:

- `ok`: no error or interrupt was recorded;
- `error`: the next step failed and was not run again from here (on the head,
  the thread is stuck; elsewhere, the branch was abandoned after failing);
- `retried`: the next step failed, then the thread went on from here anyway;
- `interrupted`: paused by `interrupt()`, waiting for a resume;
- `resumed`: paused, then resumed from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from saver_client.errors import BadResponseError

__all__ = [
    "Branch",
    "NodeStatus",
    "ResumeContext",
    "ThreadTree",
    "TreeNode",
]

NodeStatus = Literal["ok", "error", "retried", "interrupted", "resumed"]

_new = object.__new__
_set = object.__setattr__


@dataclass(frozen=True)
class TreeNode:
    """One checkpoint of a thread's tree, in the compact form the service sends."""

    checkpoint_id: str
    checkpoint_ns: str
    """"" for the root graph."""
    parent_id: str | None
    """The resolved parent: for a subgraph's first checkpoint, the parent-graph
    checkpoint that ran it (in `parent_ns`). None for a root."""
    parent_ns: str
    source: str
    """LangGraph's metadata source: "input", "loop", "update", "fork"; "" if none."""
    step: int
    status: NodeStatus
    has_error: bool
    """Pending writes on this checkpoint hold an error: a failed attempt at the next step."""
    has_interrupt: bool
    on_live_path: bool
    orphan: bool
    """A root that should have had a parent (pruned, or a broken link)."""

    @property
    def failed(self) -> bool:
        """The step after this checkpoint failed at least once (`error` or `retried`)."""
        return self.has_error

    @classmethod
    def from_wire(cls, wire: Any) -> TreeNode:
        # The service sends every field, typed (docs/api.md); a node
        # without one is malformed.
        try:
            return _node(
                wire["id"],
                wire["ns"],
                wire["parent"],
                wire["parent_ns"],
                wire["source"],
                wire["step"],
                wire["status"],
                wire["has_error"],
                wire["has_interrupt"],
                wire["on_live_path"],
                wire["orphan"],
            )
        except (KeyError, TypeError, IndexError) as exc:
            raise BadResponseError("bad_response", f"malformed tree node: {exc!r}") from exc


@dataclass(frozen=True)
class Branch:
    """An abandoned branch of the root graph: work LangGraph will no longer resume."""

    checkpoint_ids: tuple[str, ...]
    """The branch's checkpoints, from the first one off `from_id` down to its leaf."""
    fork_point: str | None
    """The nearest ancestor on the live path, where the thread left this work
    behind; None if the branch's tree has no live path."""
    from_id: str | None
    """The checkpoint the branch hangs from: `fork_point`, or a checkpoint of
    another abandoned branch it split off; None if its first node is a root."""
    status: NodeStatus
    """The leaf's status: `error` for work abandoned after failing, `interrupted`
    for work abandoned while waiting for a resume."""

    @property
    def leaf(self) -> str:
        return self.checkpoint_ids[-1]

    @classmethod
    def from_wire(cls, wire: Any) -> Branch:
        try:
            return cls(
                checkpoint_ids=tuple(str(i) for i in wire["checkpoint_ids"]),
                fork_point=str(wire["fork_point"]) if wire.get("fork_point") else None,
                from_id=str(wire["from"]) if wire.get("from") else None,
                status=wire["status"],
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadResponseError("bad_response", f"malformed branch: {exc!r}") from exc


@dataclass(frozen=True)
class ThreadTree:
    """A thread's whole tree: every checkpoint of every namespace."""

    thread_id: str
    head: TreeNode | None
    """The checkpoint LangGraph resumes from; None without a root-graph checkpoint."""
    nodes: tuple[TreeNode, ...]
    """Parents before children: roots first, each followed depth-first by its
    subtree, children in creation order."""

    @property
    def live_path(self) -> tuple[TreeNode, ...]:
        """The nodes on the live path, from the root to the head."""
        return tuple(n for n in self.nodes if n.on_live_path)

    @property
    def failures(self) -> tuple[TreeNode, ...]:
        """Checkpoints whose next step failed at least once."""
        return tuple(n for n in self.nodes if n.has_error)

    def get(self, checkpoint_id: str, checkpoint_ns: str = "") -> TreeNode | None:
        for n in self.nodes:
            if n.checkpoint_id == checkpoint_id and n.checkpoint_ns == checkpoint_ns:
                return n
        return None

    def children(self, checkpoint_id: str, checkpoint_ns: str = "") -> tuple[TreeNode, ...]:
        return tuple(
            n for n in self.nodes if n.parent_id == checkpoint_id and n.parent_ns == checkpoint_ns
        )

    @classmethod
    def from_wire(cls, wire: Any) -> ThreadTree:
        if not isinstance(wire, Mapping) or not (
            "columns" in wire or isinstance(wire.get("nodes"), list)
        ):
            raise BadResponseError("bad_response", "tree answered without a nodes list")
        head = wire.get("head")
        return cls(
            thread_id=str(wire.get("thread_id") or ""),
            head=TreeNode.from_wire(head) if head else None,
            nodes=tuple(nodes_from_wire(wire)),
        )


@dataclass(frozen=True)
class ResumeContext:
    """The live path as prompt text, and the whole tree as a text drawing.

    `text` has one line per checkpoint from the root to the head, e.g.
    `step 4 · error, retried` (a source other than `loop` and a status other
    than `ok` are said); `str(ctx)` is `text`.
    """

    text: str
    drawing: str
    # With values=True: the live path's steps as the service sends them
    # (docs/api.md, ResumeContext): each step's tasks, with their node, the
    # channels they wrote and the values rendered, and the branches
    # abandoned there. None without values.
    context: Mapping[str, Any] | None = None

    def __str__(self) -> str:
        return self.text

    @property
    def steps(self) -> list[Mapping[str, Any]]:
        """The live path's steps, root first; [] without values."""
        return list(self.context["steps"]) if self.context else []

    @classmethod
    def from_wire(cls, wire: Any) -> ResumeContext:
        if not isinstance(wire, Mapping) or not isinstance(wire.get("text"), str):
            raise BadResponseError("bad_response", "tree context answered without text")
        context = wire.get("context")
        if context is not None and (
            not isinstance(context, Mapping) or not isinstance(context.get("steps"), list)
        ):
            raise BadResponseError("bad_response", "tree context answered without steps")
        return cls(text=wire["text"], drawing=str(wire.get("drawing") or ""), context=context)


def messages_from_wire(wire: Any) -> list[Any]:
    """The live messages as langchain_core message objects."""
    from langchain_core.messages import messages_from_dict

    if not isinstance(wire, Mapping) or not isinstance(wire.get("messages"), list):
        raise BadResponseError("bad_response", "live messages answered without a messages list")
    return messages_from_dict(wire["messages"])


def nodes_from_wire(wire: Any) -> list[TreeNode]:
    """The nodes of an answer, as columns (asked for with layout=columns) or
    as one map per node."""
    if isinstance(wire, Mapping) and "columns" in wire:
        return _nodes_from_columns(wire["columns"])
    if not isinstance(wire, Mapping) or not isinstance(wire.get("nodes"), list):
        raise BadResponseError("bad_response", "tree query answered without a nodes list")
    return [TreeNode.from_wire(n) for n in wire["nodes"]]


# The arrays of an answer in columns, in TreeNode's field order.
_COLUMNS = (
    "id",
    "ns",
    "parent",
    "parent_ns",
    "source",
    "step",
    "status",
    "has_error",
    "has_interrupt",
    "on_live_path",
    "orphan",
)


def _node(
    cid: str,
    ns: str,
    parent: str,
    parent_ns: str,
    source: str,
    step: int,
    status: NodeStatus,
    err: bool,
    intr: bool,
    live: bool,
    orphan: bool,
) -> TreeNode:
    # An answer holds a node per checkpoint (10,000 on a long thread): the
    # instance's dict is set whole, as the frozen dataclass's __init__ would
    # fill it, at a third of its cost.
    node = _new(TreeNode)
    _set(
        node,
        "__dict__",
        {
            "checkpoint_id": cid,
            "checkpoint_ns": ns,
            "parent_id": parent or None,
            "parent_ns": parent_ns,
            "source": source,
            "step": step,
            "status": status,
            "has_error": err,
            "has_interrupt": intr,
            "on_live_path": live,
            "orphan": orphan,
        },
    )
    return node


def _nodes_from_columns(columns: Any) -> list[TreeNode]:
    # One array per field, node i at index i of each (docs/api.md,
    # EntryColumns), in the order of _node's arguments.
    if not isinstance(columns, Mapping):
        raise BadResponseError("bad_response", "tree columns are not a map")
    cols = [columns.get(name) for name in _COLUMNS]
    count = len(cols[0]) if isinstance(cols[0], list) else -1
    for name, col in zip(_COLUMNS, cols):
        if not isinstance(col, list) or len(col) != count:
            raise BadResponseError(
                "bad_response", f"tree column {name!r} is not a list as long as 'id'"
            )
    return list(map(_node, *cols))


def branches_from_wire(wire: Any) -> list[Branch]:
    if not isinstance(wire, Mapping) or not isinstance(wire.get("branches"), list):
        raise BadResponseError("bad_response", "abandoned answered without a branches list")
    return [Branch.from_wire(b) for b in wire["branches"]]
