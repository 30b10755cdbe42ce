"""Maintenance: readiness, deleting, copying, pruning and pinning threads, sync and async."""

from __future__ import annotations

from collections.abc import Sequence

from saver_client import _wire as wire
from saver_client._core import Core


class MaintenanceCalls(Core):
    """Whole threads: `BaseCheckpointSaver`'s deletes, copy and prune; our ping and pin.

    Overridden in pairs, sync and async, for the same capability detection as
    the checkpoint calls. Each forgets the saver's listings (see _listing).
    """

    def ping(self) -> None:
        """Check that the service is ready and accepts this saver's API key.

        Raises `UnauthorizedError` for a bad key, `UnavailableError` when the
        service's store does not answer, and a connection error when nothing
        listens at the URL.
        """
        for call in wire.ping_calls():
            self._send(call)

    async def aping(self) -> None:
        """Async `ping`."""
        for call in wire.ping_calls():
            await self._asend(call)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of a thread, in all namespaces."""
        try:
            self._send(wire.delete_thread_call(thread_id))
        finally:
            self._listings.clear()
            self._held.drop_threads([thread_id])
            self._decoded.clear()

    async def adelete_thread(self, thread_id: str) -> None:
        """Async `delete_thread`."""
        try:
            await self._asend(wire.delete_thread_call(thread_id))
        finally:
            self._listings.clear()
            self._held.drop_threads([thread_id])
            self._decoded.clear()

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata run_id is in run_ids."""
        if (call := wire.delete_for_runs_call(run_ids)) is not None:
            try:
                self._send(call)
            finally:
                self._listings.clear()
                self._held.clear()
                self._decoded.clear()

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async `delete_for_runs`."""
        if (call := wire.delete_for_runs_call(run_ids)) is not None:
            try:
                await self._asend(call)
            finally:
                self._listings.clear()
                self._held.clear()
                self._decoded.clear()

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread with ids and parent links unchanged.

        Raises NotFoundError when the source has no checkpoint.
        """
        try:
            self._send(wire.copy_thread_call(source_thread_id, target_thread_id))
        finally:
            self._listings.clear()
            self._held.drop_threads([target_thread_id])

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async `copy_thread`."""
        try:
            await self._asend(wire.copy_thread_call(source_thread_id, target_thread_id))
        finally:
            self._listings.clear()
            self._held.drop_threads([target_thread_id])

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only the newest checkpoint per namespace ("keep_latest"), or delete all."""
        if (call := wire.prune_call(thread_ids, strategy)) is not None:
            try:
                self._send(call)
            finally:
                self._listings.clear()
                self._held.drop_threads(thread_ids)
                self._decoded.clear()

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async `prune`."""
        if (call := wire.prune_call(thread_ids, strategy)) is not None:
            try:
                await self._asend(call)
            finally:
                self._listings.clear()
                self._held.drop_threads(thread_ids)
                self._decoded.clear()

    def pin(self, thread_id: str, checkpoint_id: str, checkpoint_ns: str = "") -> None:
        """Make a checkpoint, its channel values and its writes never expire."""
        self._send(wire.pin_call(thread_id, checkpoint_id, checkpoint_ns))

    async def apin(self, thread_id: str, checkpoint_id: str, checkpoint_ns: str = "") -> None:
        """Async `pin`."""
        await self._asend(wire.pin_call(thread_id, checkpoint_id, checkpoint_ns))
