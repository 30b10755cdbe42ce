"""The last delta history the saver read per thread, to ask only for what is new.

A DeltaChannel turn asks for the history at the thread's newest checkpoint,
whose chain is the last turn's plus a few checkpoints. The saver keeps the
history it last put together per (thread, namespace) and names its
checkpoint as `known` in the next request: the service walks down to it and
answers the writes since, each channel whose history goes on there saying so
with `next` equal to `known`; the held history goes before them. An answer
then carries the last turn's writes rather than the chain back to the
snapshot, and the client puts it together without decoding anything twice
(values stay on the wire until `to_histories`, as always).

Why the held history stays right: it is the history at an ancestor K of the
new target (the service refuses a `known` the chain does not reach: a fork
elsewhere, another branch, a deleted thread), made of the writes of K's own
ancestors, which LangGraph never writes to again once they have a child (it
makes a checkpoint's writes durable before it puts any child; update_state
forks a checkpoint that has one). K's own writes are read afresh each time.
As for the listings (`_listing`) and the service's chain cache, the store
does not enforce that rule: the saver's own put_writes to a checkpoint older
than K drop the entry, and its deletes, prunes and copies drop the threads'.
Another process's writes to old checkpoints, which LangGraph never makes,
are not seen; a new saver holds nothing and asks for the whole.

Bounded: at most MAX_ENTRIES entries and MAX_BYTES of values on the wire,
the least recently used dropped first.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from saver_client._lru import BoundedLRU
from saver_client._wire import RawHistory

MAX_ENTRIES = 256
MAX_BYTES = 64 << 20

# Approximates a write's or seed's memory beside its bytes.
_OVERHEAD = 100

Key = tuple[str, str]  # thread id, namespace


@dataclass(frozen=True)
class _Entry:
    checkpoint_id: str
    histories: dict[str, RawHistory]


def _size(histories: dict[str, RawHistory]) -> int:
    n = 0
    for h in histories.values():
        for w in h.writes:
            n += len((w.get("value") or {}).get("data") or b"") + _OVERHEAD
        if h.seed is not None:
            n += len(h.seed.get("data") or b"") + _OVERHEAD
    return n


class Held:
    """Per (thread, namespace), the last delta history the saver put together."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self._lock = threading.Lock()
        self._entries: BoundedLRU[Key, _Entry] = BoundedLRU(max_entries, max_bytes)

    def known(
        self, key: Key, checkpoint_id: str, channels: Sequence[str]
    ) -> tuple[str, dict[str, RawHistory]] | None:
        """The checkpoint to name as known for a history of channels at
        checkpoint_id, and its histories; None when none is held for all of
        them, or the one held is at a later checkpoint (not an ancestor).
        Held at checkpoint_id itself, the histories are the answer."""
        with self._lock:
            e = self._entries.peek(key)
            if e is None or not checkpoint_id or e.checkpoint_id > checkpoint_id:
                return None
            if any(ch not in e.histories for ch in channels):
                return None
            self._entries.get(key)  # used
            return e.checkpoint_id, e.histories

    def keep(self, key: Key, checkpoint_id: str, histories: dict[str, RawHistory]) -> None:
        """Hold the histories at checkpoint_id, in place of the thread's last."""
        if not checkpoint_id:
            return
        size = _size(histories)
        with self._lock:
            self._entries.put(key, _Entry(checkpoint_id, dict(histories)), size)

    def wrote(self, key: Key, checkpoint_id: str) -> None:
        """Writes came for a checkpoint: a history held at a later one may hold
        its writes (ids grow from parent to child), so it goes."""
        with self._lock:
            e = self._entries.peek(key)
            if e is not None and checkpoint_id < e.checkpoint_id:
                self._entries.pop(key)

    def forget(self, key: Key) -> None:
        """The service refused the known checkpoint: the chain goes elsewhere."""
        with self._lock:
            self._entries.pop(key)

    def drop_threads(self, thread_ids: Iterable[str]) -> None:
        """Threads were deleted, pruned or copied over."""
        threads = {str(t) for t in thread_ids}
        with self._lock:
            for key in [k for k in self._entries.keys() if k[0] in threads]:
                self._entries.pop(key)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
