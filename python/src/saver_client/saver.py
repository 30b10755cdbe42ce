"""`HTTPSaver`: a LangGraph checkpoint saver that stores checkpoints in the saver service."""

from __future__ import annotations

from collections.abc import Mapping

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol

from saver_client._checkpoint_calls import CheckpointCalls
from saver_client._client import API_KEY_ENV as API_KEY_ENV
from saver_client._client import URL_ENV as URL_ENV
from saver_client._client import ServiceClient, make_transport
from saver_client._http import Timeout
from saver_client._ledger_calls import LedgerCalls
from saver_client._decoded import Decoded
from saver_client._held import Held
from saver_client._listing import Listings
from saver_client._maintenance_calls import MaintenanceCalls
from saver_client._transport import RetryPolicy
from saver_client._tree_calls import TreeCalls
from saver_client._wire import SCOPE_KEY as SCOPE_KEY
from saver_client._wire import Scope as Scope
from saver_client._wire import Wire as Wire
from saver_client._wire import check_scope

__all__ = ["HTTPSaver"]

# The calls come by concern from the mixins, sync and async side by side, each
# building its requests with _wire (no I/O there); this class holds the
# configuration and the connections' lifecycle.
class HTTPSaver(
    ServiceClient,
    CheckpointCalls,
    MaintenanceCalls,
    TreeCalls,
    LedgerCalls,
    BaseCheckpointSaver[str],
):
    """A checkpoint saver backed by the saver HTTP service.

    A drop-in replacement for `InMemorySaver`: `graph.compile(checkpointer=HTTPSaver(url))`.
    Values are serialised on this side with `self.serde`, so an injected
    serializer (for example `EncryptedSerializer`) keeps working and the service
    only ever sees opaque bytes.

    Sync methods borrow kept-alive connections from a pool, one thread at a
    time each; async methods use one pool per event loop. Use it as a context
    manager, or call `close()` / `aclose()`, to release connections.

    Args:
        url: Base URL of the service, e.g. `http://127.0.0.1:7878`. Defaults to
            the `SAVER_URL` environment variable. An https URL is verified
            against the system's certificate authorities, or those of the
            bundle `SSL_CERT_FILE` names.
        serde: Serializer for checkpoints, channel values and writes.
        api_key: Sent as `Authorization: Bearer <api_key>`. Defaults to the
            `SAVER_API_KEY` environment variable.
        headers: Extra headers sent with every request.
        timeout: Seconds to wait for a connection and for each read of an
            answer, or a `Timeout` (or anything with `connect` and `read`
            attributes, such as an `httpx.Timeout`) to give them apart.
        retry: How connection failures and 503 answers are retried.
        scope: Retention of the threads this saver writes: `"session"` (expires
            after the service's session TTL, hours by default) or `"persistent"`.
            `None` takes the service's default. A run can choose per thread
            with `config["configurable"]["saver_scope"]`.
        detect_conflicts: Fail a run whose thread another writer moved under
            it. Each checkpoint an input or loop step puts is then stored only
            if its parent (the checkpoint the run read) is still the newest in
            its namespace; otherwise nothing is stored and `put` raises
            `ConflictError`, so two runs on one thread never fork it silently.
            Forks and `update_state` branch off older checkpoints on purpose
            and are stored unconditionally; a run that starts new input from an
            older `checkpoint_id` is not a fork and fails (fork it with
            `update_state` first). Off by default: LangGraph runs one writer
            per thread and does not need it. Give every writer of a thread the
            same setting: an unconditioned put racing a conditioned one can go
            unseen.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        serde: SerializerProtocol | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | Timeout = 30.0,
        retry: RetryPolicy | None = None,
        scope: Scope | None = None,
        detect_conflicts: bool = False,
    ) -> None:
        super().__init__(serde=serde)
        self.scope = check_scope(scope)
        self.detect_conflicts = bool(detect_conflicts)
        self._listings = Listings()
        self._held = Held()
        self._decoded = Decoded()
        self._transport = make_transport(
            type(self).__name__, url, api_key=api_key, headers=headers, timeout=timeout, retry=retry
        )
