"""Delta histories put together from what a `list` call read, without I/O.

`get_state_history` lists a thread's checkpoints (all of them, before it
reads any state) and then, for each one whose DeltaChannels hold no value of
their own, asks for its delta history: the writes of its ancestors back to
the nearest snapshot. Those ancestors are checkpoints listed after it,
writes and values included, so a history asked for a checkpoint a recent
listing holds is put together from the listing, and only the part of its
chain beyond what was listed is asked of the service, once for every
checkpoint whose chain leaves the listing at the same place: a request per
page of the listing instead of one per checkpoint.

Why the listing may stand in for the service: a history is put together
from a listing for a checkpoint C of that listing only, and the listing read
C's ancestors at or after C (newest first), when each of them already had a
child. LangGraph makes a checkpoint's writes durable before it puts any
child of it (update_state forks a checkpoint that has one rather than write
on it), so what the listing read of them is what the service would answer;
the service's chain cache on DynamoDB relies on the same rule. As there, the
store does not enforce it: the saver's own put_writes drop the checkpoint
from the listings, and its deletes, prunes and copies drop them all.

A saver keeps its last few listings, each up to a bound of values on the
wire; a listing drops the checkpoints newer than each one whose history is
asked (get_state_history asks newest first), and a history the listings do
not hold is asked of the service whole. Values are kept on the wire and
decoded for each history afresh, as every saver does.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from saver_client._wire import RawHistory

Key = tuple[str, str, str]  # thread id, namespace, checkpoint id

# The listings a saver keeps, and the bytes of values on the wire each keeps.
KEPT_LISTINGS = 4
LISTING_BYTES = 16 << 20


@dataclass(frozen=True)
class _Node:
    parent: str
    size: int
    # The checkpoint's writes by channel, in Tuple.Writes order, and the
    # typed values it holds (not empty: the service leaves out expired ones).
    writes: dict[str, list[Any]]
    values: dict[str, Any]


def _node(found: Any) -> _Node:
    writes: dict[str, list[Any]] = {}
    size = 0
    for w in found.get("writes") or ():
        writes.setdefault(w["channel"], []).append(w)
        size += len(w["value"].get("data") or b"") + 100
    values = {}
    for v in found.get("values") or ():
        if v["value"]["type"] != "empty":
            values[v["channel"]] = v["value"]
            size += len(v["value"].get("data") or b"") + 100
    return _Node(found.get("parent_checkpoint_id") or "", size, writes, values)


class Listing:
    """The checkpoints of one `list` call, newest first, from the last one
    whose history was asked on, and the last answer of the service for the
    part of a chain beyond them."""

    def __init__(self, max_bytes: int) -> None:
        self._lock = threading.Lock()
        self._nodes: OrderedDict[Key, _Node] = OrderedDict()
        self._beyond: tuple[Key, tuple[str, ...], dict[str, RawHistory]] | None = None
        # Past max_bytes the listing takes no more pages: their checkpoints'
        # histories are asked of the service.
        self._room = max_bytes

    def add(self, page: Sequence[Any]) -> None:
        """Take a page of the listing, still on the wire (malformed tuples
        are the caller's to refuse)."""
        nodes = [((f["thread_id"], f["checkpoint_ns"], f["checkpoint_id"]), _node(f)) for f in page]
        with self._lock:
            for key, node in nodes:
                self._room -= node.size
                if self._room < 0:
                    return
                self._nodes[key] = node

    def drop(self, key: Key) -> None:
        with self._lock:
            self._nodes.pop(key, None)
            self._beyond = None

    def walk(self, key: Key, channels: Sequence[str]) -> Walk | None:
        """Start the histories of channels at checkpoint key, walking its
        listed ancestors as the service walks them; None if key is not
        listed (or no longer)."""
        w = Walk(self, list(channels))
        remaining = list(channels)
        thread, ns, _ = key
        seen: set[Key] = set()
        with self._lock:
            node = self._nodes.get(key)
            if node is None:
                return None
            # The newer checkpoints are no ancestors of key nor, in the
            # order get_state_history asks, of any checkpoint asked next.
            while (first := next(iter(self._nodes))) != key:
                del self._nodes[first]
            last = key
            while remaining and node.parent:
                pkey = (thread, ns, node.parent)
                parent = self._nodes.get(pkey)
                if parent is None:
                    break
                if pkey in seen:  # a parent cycle, which only bad ids make, ends the walk
                    remaining = []
                    break
                seen.add(pkey)
                for ch in remaining:
                    if ch in parent.writes:
                        w.per[ch].append(parent.writes[ch])
                    if ch in parent.values:
                        w.seeds[ch] = parent.values[ch]
                remaining = [ch for ch in remaining if ch not in w.seeds]
                node, last = parent, pkey
            memo = self._beyond
        if remaining and node.parent:
            if memo is not None and memo[0] == last and memo[1] == tuple(remaining):
                w.rest = memo[2]
            else:
                w.beyond = (last, remaining)
        return w

    def _remember(self, key: Key, channels: Sequence[str], rest: dict[str, RawHistory]) -> None:
        with self._lock:
            self._beyond = (key, tuple(channels), rest)


class Walk:
    """Histories put together from a listing. When `beyond` is set, the
    walk left the listing: the service's histories at that checkpoint of
    those channels (its parent is not listed) go before, given to `take`."""

    def __init__(self, listing: Listing, channels: list[str]) -> None:
        self._listing = listing
        self.channels = channels
        self.per: dict[str, list[list[Any]]] = {ch: [] for ch in channels}  # nearest ancestor first
        self.seeds: dict[str, Any] = {}
        self.beyond: tuple[Key, list[str]] | None = None
        self.rest: dict[str, RawHistory] = {}

    def take(self, rest: dict[str, RawHistory]) -> None:
        """The service's answer for `beyond`, which the listing keeps for the
        next checkpoints, whose chains leave it at the same place."""
        assert self.beyond is not None
        self._listing._remember(self.beyond[0], self.beyond[1], rest)
        self.rest = rest

    def result(self) -> dict[str, RawHistory]:
        out: dict[str, RawHistory] = {}
        for ch in self.channels:
            before = self.rest.get(ch)
            writes = list(before.writes) if before is not None else []
            for ws in reversed(self.per[ch]):
                writes.extend(ws)
            if ch in self.seeds:
                out[ch] = RawHistory(writes, self.seeds[ch])
            else:
                out[ch] = RawHistory(writes, before.seed if before is not None else None)
        return out


class Listings:
    """The last listings of a saver: a history asked for a checkpoint one of
    them holds is put together from it."""

    def __init__(self, kept: int = KEPT_LISTINGS, max_bytes: int = LISTING_BYTES) -> None:
        self._lock = threading.Lock()
        self._kept: deque[Listing] = deque(maxlen=kept)
        self._max_bytes = max_bytes

    def new(self) -> Listing:
        """A listing to fill, which replaces the oldest one kept."""
        listing = Listing(self._max_bytes)
        with self._lock:
            self._kept.append(listing)
        return listing

    def _all(self) -> list[Listing]:
        with self._lock:
            return list(reversed(self._kept))

    def walk(self, key: Key, channels: Sequence[str]) -> Walk | None:
        """The walk of the newest listing that holds key, if any."""
        for listing in self._all():
            if (w := listing.walk(key, channels)) is not None:
                return w
        return None

    def wrote(self, key: Key) -> None:
        """Writes came for a checkpoint: the listings forget it."""
        for listing in self._all():
            listing.drop(key)

    def clear(self) -> None:
        """Checkpoints were deleted or copied over: forget every listing."""
        with self._lock:
            self._kept.clear()
