"""A map bounded in entries and in bytes, the least recently used dropped first.

The client's caches (`_held`, `_decoded`) keep their entries in one. It takes
no lock of its own: each cache holds its lock around every call.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedLRU(Generic[K, V]):
    """Values by key, each with the size it counts for."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._size = 0
        self.max_entries = max_entries
        self.max_bytes = max_bytes

    def peek(self, key: K) -> V | None:
        """The value of key, None if there is none; its use is not counted."""
        item = self._items.get(key)
        return None if item is None else item[0]

    def get(self, key: K) -> V | None:
        """The value of key, now the most recently used; None if there is none."""
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key: K, value: V, size: int) -> None:
        """Hold value under key in place of what was there, and drop the least
        recently used past the bounds; a value over max_bytes on its own is
        not held (nor is what was under key)."""
        self.pop(key)
        if size > self.max_bytes:
            return
        self._items[key] = (value, size)
        self._size += size
        while self._size > self.max_bytes or len(self._items) > self.max_entries:
            _, (_, dropped) = self._items.popitem(last=False)
            self._size -= dropped

    def pop(self, key: K) -> V | None:
        item = self._items.pop(key, None)
        if item is None:
            return None
        self._size -= item[1]
        return item[0]

    def keys(self) -> list[K]:
        return list(self._items)

    def clear(self) -> None:
        self._items.clear()
        self._size = 0

    def __len__(self) -> int:
        return len(self._items)
