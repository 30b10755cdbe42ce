"""Values of delta histories, decoded once and handed out as copies.

A DeltaChannel turn decodes its channel's history: the seed (the value at
the last snapshot: the whole conversation up to it) and the writes since.
The same ones come back every turn until the next snapshot (see `_held`),
and `get_state_history` reads one seed for every snapshot after it.
LangGraph's serializer builds every message anew, validating it, so
decoding them afresh made each turn slower as the conversation grew: 2.5 ms
for a seed of 300 messages, most of what a 150-turn chat's turn had grown by
since turn 10.

Every value is still handed out as an object of its own: a reducer that
changes its writes in place (add_messages gives messages ids) must change
the state it rebuilds and nothing else. But after the first time it is
made by `pickle` from a copy taken as the value was first decoded, before
anything could change it: 0.59 ms for those 300 messages. The copy is kept
only when it equals what was decoded (the same type, and `==`); a value
that pickle cannot copy, or whose type does not compare by value, is
decoded afresh every time, as before.

The pickles are the client's own, made here from values it decoded; nothing
from the network is unpickled. Keyed by the wire's type and bytes, bounded
in entries and bytes, the least recently used dropped first; emptied when
the saver deletes or prunes threads.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable
from typing import Any

from saver_client._lru import BoundedLRU

MAX_ENTRIES = 8192
MAX_BYTES = 64 << 20

# A value decoded afresh each time: its copy did not hold.
_AFRESH = b""

Key = tuple[str, bytes]


class Decoded:
    """Copies of decoded values by their wire form (type, bytes)."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self._lock = threading.Lock()
        # A copy counts for its bytes and its key's, which it holds on to.
        self._copies: BoundedLRU[Key, bytes] = BoundedLRU(max_entries, max_bytes)
        self._owner: object | None = None  # the serializer the copies were decoded with

    def value(self, owner: object, key: Key, decode: Callable[[], Any]) -> Any:
        """The value of key: decode() the first time (or for a value that
        cannot be copied), a copy of what it returned after that. owner is
        the serializer decode uses: another one clears what is held."""
        with self._lock:
            if owner is not self._owner:
                self._copies.clear()
                self._owner = owner
            copy = self._copies.get(key)
        if copy:
            return pickle.loads(copy)
        value = decode()
        if copy is None:
            self._keep(key, _copy_of(value))
        return value

    def clear(self) -> None:
        """Drop every copy: threads were deleted, and what the client holds
        of their values goes with them (the copies are not kept by thread)."""
        with self._lock:
            self._copies.clear()

    def __len__(self) -> int:
        return len(self._copies)

    def _keep(self, key: Key, copy: bytes) -> None:
        if len(key[1]) + len(copy) > self._copies.max_bytes:
            copy = _AFRESH  # remembered as such, so as not to be pickled again
        with self._lock:
            self._copies.put(key, copy, len(key[1]) + len(copy))


def _copy_of(value: Any) -> bytes:
    """value pickled, or _AFRESH when its unpickled copy is not equal to it:
    pickle's copy of an object stands for a fresh decoding only where
    equality says they are the same."""
    try:
        copy = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        back = pickle.loads(copy)
        if type(back) is type(value) and bool(back == value):
            return copy
    except Exception:  # noqa: BLE001 - any failure of pickle or of == means: not copyable
        pass
    return _AFRESH
