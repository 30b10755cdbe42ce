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
    get_checkpoint_id,
)

from saver_client import _wire as wire
from saver_client._core import Core
from saver_client._listing import Listing, Walk
from saver_client._wire import Call, RawHistory, Scope
from saver_client.errors import ConflictError, InvalidRequestError, NoRouteError, NotFoundError


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
        """Checkpoints matching the arguments, newest first, fetched page by page.

        The saver keeps what it read for the delta histories of the
        checkpoints it yields (see `get_delta_channel_history`).
        """
        search = wire.Search(config, filter, before, limit)
        listing = self._listings.new()
        while (call := search.next()) is not None:
            yield from self._listed(listing, search.page(self._send(call)))

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
        listing = self._listings.new()
        while (call := search.next()) is not None:
            for tup in self._listed(listing, search.page(await self._asend(call))):
                yield tup

    def _listed(self, listing: Listing, page: Sequence[Any]) -> Sequence[CheckpointTuple]:
        """A page's tuples, decoded before the listing takes the page."""
        tuples = [wire.to_tuple(self.serde, found) for found in page]
        listing.add(page)
        return tuples

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
            self._wrote(config)
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
            self._wrote(config)
            await self._asend(call)

    def _wrote(self, config: RunnableConfig) -> None:
        conf = config["configurable"]
        ns = conf.get("checkpoint_ns") or ""
        key = (str(conf["thread_id"]), ns, str(conf.get("checkpoint_id") or ""))
        self._listings.wrote(key)
        self._held.wrote(key[:2], key[2])

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The DeltaChannel histories at the checkpoint in config, in one request.

        Per channel, the writes of the checkpoint's ancestors on its parent
        chain, oldest first, back to the nearest one holding a value of the
        channel (its `seed`), as `BaseCheckpointSaver` defines it; the service
        walks the chain, however deep. A history over the service's page
        (`SAVER_HISTORY_PAGE`) takes a request per page.

        The saver holds the last history it put together per thread and
        namespace (see `_held`): the next one, at a descendant of that
        checkpoint (the next turn's), is asked as what is new since it, and
        the service answers only the writes since; one at that checkpoint
        itself takes no request.

        For a checkpoint one of the saver's last `list` calls yielded (as
        `get_state_history` reads them), the history is put together from the
        ancestors listed after it, and the service is asked only for the
        part of the chain beyond them, once for all the checkpoints whose
        chains leave the listing at the same place.

        A service without the route (older than this client) raises
        NoRouteError saying so: the saver never walks the checkpoints one
        request each, as the base class does.
        """
        if not channels:
            return {}
        walk = self._listed_walk(config, channels)
        if walk is None:
            return wire.to_histories(self.serde, self._held_delta(config, channels), self._decoded)
        if walk.beyond is not None:
            key, chans = walk.beyond
            walk.take(self._delta(wire.config_of(*key), chans))
        return wire.to_histories(self.serde, walk.result(), self._decoded)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async `get_delta_channel_history`."""
        if not channels:
            return {}
        walk = self._listed_walk(config, channels)
        if walk is None:
            return wire.to_histories(self.serde, await self._aheld_delta(config, channels), self._decoded)
        if walk.beyond is not None:
            key, chans = walk.beyond
            walk.take(await self._adelta(wire.config_of(*key), chans))
        return wire.to_histories(self.serde, walk.result(), self._decoded)

    def _listed_walk(self, config: RunnableConfig, channels: Sequence[str]) -> Walk | None:
        conf = config["configurable"]
        checkpoint_id = get_checkpoint_id(config)
        if not checkpoint_id:
            return None
        key = (str(conf["thread_id"]), conf.get("checkpoint_ns") or "", checkpoint_id)
        return self._listings.walk(key, [str(ch) for ch in channels])

    def _delta(
        self,
        config: RunnableConfig,
        channels: Sequence[str],
        held: tuple[str, dict[str, RawHistory]] | None = None,
    ) -> dict[str, RawHistory]:
        pages = wire.DeltaPages(config, channels, *(held or (None, None)))
        while (call := pages.call()) is not None:
            try:
                answer = self._send(call)
            except NoRouteError as exc:
                raise wire.missing_delta_route(exc) from exc
            pages.take(answer)
        return pages.raw()

    async def _adelta(
        self,
        config: RunnableConfig,
        channels: Sequence[str],
        held: tuple[str, dict[str, RawHistory]] | None = None,
    ) -> dict[str, RawHistory]:
        pages = wire.DeltaPages(config, channels, *(held or (None, None)))
        while (call := pages.call()) is not None:
            try:
                answer = await self._asend(call)
            except NoRouteError as exc:
                raise wire.missing_delta_route(exc) from exc
            pages.take(answer)
        return pages.raw()

    def _held_delta(self, config: RunnableConfig, channels: Sequence[str]) -> dict[str, RawHistory]:
        """The histories at config: what is new since the history held for
        its thread, with it; the whole when none is held or the service
        refuses the held one's checkpoint (not an ancestor)."""
        key, checkpoint_id, chans = _held_key(config, channels)
        held = self._held.known(key, checkpoint_id, chans)
        if held is not None and held[0] == checkpoint_id:
            return {ch: held[1][ch] for ch in chans}
        try:
            raw = self._delta(config, chans, held)
        except InvalidRequestError:
            if held is None:
                raise
            self._held.forget(key)
            raw = self._delta(config, chans)
        self._held.keep(key, checkpoint_id, raw)
        return raw

    async def _aheld_delta(
        self, config: RunnableConfig, channels: Sequence[str]
    ) -> dict[str, RawHistory]:
        key, checkpoint_id, chans = _held_key(config, channels)
        held = self._held.known(key, checkpoint_id, chans)
        if held is not None and held[0] == checkpoint_id:
            return {ch: held[1][ch] for ch in chans}
        try:
            raw = await self._adelta(config, chans, held)
        except InvalidRequestError:
            if held is None:
                raise
            self._held.forget(key)
            raw = await self._adelta(config, chans)
        self._held.keep(key, checkpoint_id, raw)
        return raw


def _held_key(
    config: RunnableConfig, channels: Sequence[str]
) -> tuple[tuple[str, str], str, list[str]]:
    conf = config["configurable"]
    key = (str(conf["thread_id"]), conf.get("checkpoint_ns") or "")
    return key, get_checkpoint_id(config) or "", [str(ch) for ch in channels]
