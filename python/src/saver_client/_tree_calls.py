"""Tree queries: a thread's checkpoints as a tree, its live path and its abandoned work."""

from __future__ import annotations

from typing import Any

from saver_client import _wire as wire
from saver_client._core import Core
from saver_client.tree import (
    Branch,
    ResumeContext,
    ThreadTree,
    TreeNode,
    branches_from_wire,
    messages_from_wire,
    nodes_from_wire,
)


class TreeCalls(Core):
    """The service's tree queries; see `saver_client.tree` for what they answer.

    Not part of `BaseCheckpointSaver`: new names only, so that capability
    detection (which looks at overridden base methods) is unaffected.
    """

    def tree(self, thread_id: str) -> ThreadTree:
        """The thread's whole checkpoint tree, every namespace, parents before children.

        Raises NotFoundError when the thread has no checkpoint.
        """
        return ThreadTree.from_wire(self._send(wire.tree_call(thread_id, "")))

    async def atree(self, thread_id: str) -> ThreadTree:
        """Async `tree`."""
        return ThreadTree.from_wire(await self._asend(wire.tree_call(thread_id, "")))

    def path(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> list[TreeNode]:
        """The nodes from the root down to a checkpoint; to the head without checkpoint_id.

        A subgraph checkpoint's path crosses into the parent graph that ran it.
        """
        call = wire.tree_call(thread_id, "path", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(self._send(call))

    async def apath(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> list[TreeNode]:
        """Async `path`."""
        call = wire.tree_call(thread_id, "path", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(await self._asend(call))

    def children(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> list[TreeNode]:
        """A checkpoint's children (the head's without checkpoint_id), oldest first.

        Forks are siblings; subgraph runs under the checkpoint are children too.
        """
        call = wire.tree_call(thread_id, "children", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(self._send(call))

    async def achildren(
        self, thread_id: str, checkpoint_id: str | None = None, checkpoint_ns: str = ""
    ) -> list[TreeNode]:
        """Async `children`."""
        call = wire.tree_call(thread_id, "children", checkpoint_id, checkpoint_ns)
        return nodes_from_wire(await self._asend(call))

    def leaves(self, thread_id: str) -> list[TreeNode]:
        """The branch heads of every namespace."""
        return nodes_from_wire(self._send(wire.tree_call(thread_id, "leaves")))

    async def aleaves(self, thread_id: str) -> list[TreeNode]:
        """Async `leaves`."""
        return nodes_from_wire(await self._asend(wire.tree_call(thread_id, "leaves")))

    def abandoned(self, thread_id: str) -> list[Branch]:
        """The root graph's branches that are not on the live path, oldest first."""
        return branches_from_wire(self._send(wire.tree_call(thread_id, "abandoned")))

    async def aabandoned(self, thread_id: str) -> list[Branch]:
        """Async `abandoned`."""
        return branches_from_wire(await self._asend(wire.tree_call(thread_id, "abandoned")))

    def resume_context(
        self,
        thread_id: str,
        *,
        limit: int | None = None,
        values: bool = False,
        value_bytes: int | None = None,
        checkpoint_ns: str | None = None,
    ) -> ResumeContext:
        """The live path as prompt text (`.text`, also `str()`) and the tree drawn (`.drawing`).

        With `limit`, the text keeps only the last `limit` steps. With
        `values=True`, the text says per step which nodes ran and what they
        wrote (messages as role and text, other values as compact JSON, each
        cut at `value_bytes`, default 200), abandoned branches one line each
        at their fork point, and `.steps` holds the same as data.
        `checkpoint_ns` picks a subgraph namespace's live path.
        """
        call = wire.context_call(thread_id, limit, values, value_bytes, checkpoint_ns)
        return ResumeContext.from_wire(self._send(call))

    async def aresume_context(
        self,
        thread_id: str,
        *,
        limit: int | None = None,
        values: bool = False,
        value_bytes: int | None = None,
        checkpoint_ns: str | None = None,
    ) -> ResumeContext:
        """Async `resume_context`."""
        call = wire.context_call(thread_id, limit, values, value_bytes, checkpoint_ns)
        return ResumeContext.from_wire(await self._asend(call))

    def live_messages(self, thread_id: str, *, checkpoint_ns: str | None = None) -> list[Any]:
        """The messages of the live path only, in order, merged by id as
        `add_messages` merges them, as langchain_core message objects: ready
        to hand to a chat model on resume. Nothing written only on an
        abandoned branch is among them.
        """
        return messages_from_wire(self._send(wire.messages_call(thread_id, checkpoint_ns)))

    async def alive_messages(
        self, thread_id: str, *, checkpoint_ns: str | None = None
    ) -> list[Any]:
        """Async `live_messages`."""
        return messages_from_wire(await self._asend(wire.messages_call(thread_id, checkpoint_ns)))
