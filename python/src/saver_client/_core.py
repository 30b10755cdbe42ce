"""The base of HTTPSaver's concerns: its serializer, its transport, and sending a `Call`.

Each concern (the checkpoint contract, maintenance, tree queries, the ledger)
is a mixin of `Core` that builds its requests with `_wire` and sends them here;
`HTTPSaver` composes them and sets both attributes.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from saver_client._decoded import Decoded
from saver_client._held import Held
from saver_client._listing import Listings
from saver_client._transport import Transport
from saver_client._wire import Call


class Core:
    serde: SerializerProtocol
    _transport: Transport
    # What the last list calls read, for delta histories (see _listing).
    _listings: Listings
    # The last delta history per thread, for the next (see _held).
    _held: Held
    # Copies of the delta histories' values decoded before (see _decoded).
    _decoded: Decoded

    def _send(self, call: Call) -> Any:
        return self._transport.request(call.method, call.path, body=call.body, params=call.params)

    async def _asend(self, call: Call) -> Any:
        return await self._transport.arequest(
            call.method, call.path, body=call.body, params=call.params
        )
