"""The LangGraph saver contract: reading and writing checkpoints, sync and async."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

from saver_client import _wire as wire
from saver_client._core import Core
from saver_client._wire import Call, Scope
from saver_client.errors import ConflictError, NotFoundError


class CheckpointCalls(Core):
    """`BaseCheckpointSaver`'s reads and writes, on the service.

    Each async method is overridden too, not left to the base, because both
    LangGraph's conformance suite and Agent Server detect a saver's
    capabilities by which methods its class overrides.
    """

    scope: Scope | None
    detect_conflicts: bool

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Next channel version, computed locally exactly as InMemorySaver does.

        The random suffix keeps two forks of one parent that both reach version
        N+1 from sharing a blob key. LangGraph calls this many times per step on its
        hot path, so it must never touch the network.
        """
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        next_v = current_v + 1
        next_h = random.random()
        return f"{next_v:032}.{next_h:016}"

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by config, or the latest of (thread, ns); None if absent."""
        try:
            found = self._send(wire.get_call(config))
        except NotFoundError:
            return None
        return wire.to_tuple(self.serde, found)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async `get_tuple`."""
        try:
            found = await self._asend(wire.get_call(config))
        except NotFoundError:
            return None
        return wire.to_tuple(self.serde, found)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching the arguments, newest first, fetched page by page."""
        search = wire.Search(config, filter, before, limit)
        while (call := search.next()) is not None:
            for found in search.page(self._send(call)):
                yield wire.to_tuple(self.serde, found)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async `list`."""
        search = wire.Search(config, filter, before, limit)
        while (call := search.next()) is not None:
            for found in search.page(await self._asend(call)):
                yield wire.to_tuple(self.serde, found)

    def _put_request(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Call:
        return wire.put_call(
            self.serde,
            config,
            checkpoint,
            metadata,
            new_versions,
            scope=self.scope,
            detect_conflicts=self.detect_conflicts,
        )

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint and the blobs of its new channel versions.

        With `detect_conflicts`, raises ConflictError when another writer
        moved the thread's head since the run read it; nothing is stored then.
        """
        put = self._put_request(config, checkpoint, metadata, new_versions)
        try:
            return wire.stored_config(self._send(put))
        except ConflictError as exc:
            if not wire.conditioned(put):
                raise
            try:
                found = self._send(wire.landed_call(put))
            except NotFoundError:
                found = None
            return wire.landed_config(found, put, exc, config)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async `put`."""
        put = self._put_request(config, checkpoint, metadata, new_versions)
        try:
            return wire.stored_config(await self._asend(put))
        except ConflictError as exc:
            if not wire.conditioned(put):
                raise
            try:
                found = await self._asend(wire.landed_call(put))
            except NotFoundError:
                found = None
            return wire.landed_config(found, put, exc, config)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes against the checkpoint in config."""
        call = wire.writes_call(self.serde, config, writes, task_id, task_path, scope=self.scope)
        if call is not None:
            self._send(call)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async `put_writes`."""
        call = wire.writes_call(self.serde, config, writes, task_id, task_path, scope=self.scope)
        if call is not None:
            await self._asend(call)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The DeltaChannel histories at the checkpoint in config, in one request.

        Per channel, the writes of the checkpoint's ancestors on its parent
        chain, oldest first, back to the nearest one holding a value of the
        channel (its `seed`), as `BaseCheckpointSaver` defines it; the service
        walks the chain, however deep. A history over the service's page
        (`SAVER_HISTORY_PAGE`) takes a request per page.
        """
        if not channels:
            return {}
        pages = wire.DeltaPages(self.serde, config, channels)
        while (call := pages.call()) is not None:
            pages.take(self._send(call))
        return pages.result()

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async `get_delta_channel_history`."""
        if not channels:
            return {}
        pages = wire.DeltaPages(self.serde, config, channels)
        while (call := pages.call()) is not None:
            pages.take(await self._asend(call))
        return pages.result()
