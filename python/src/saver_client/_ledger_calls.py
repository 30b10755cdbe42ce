"""The idempotency ledger's calls: claim, complete and fail a key, and `idempotent`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig

from saver_client import _wire as wire
from saver_client._core import Core
from saver_client.ledger import DEFAULT_WAIT_TIMEOUT, Claim, Idempotent


class LedgerCalls(Core):
    """The ledger on the service (see `saver_client.ledger` for how a key is used)."""

    def claim(self, key: str, *, lease: float | None = None, ttl: float | None = None) -> Claim:
        """Claim an idempotency key before a side effect.

        Of any number of concurrent claims, exactly one is granted (`claimed`,
        with a token). Others see `in_progress` (with the lease's end),
        `completed` (with the stored result, decoded with `serde`) or `failed`.
        A retryable failure is never reported: the next claim is granted.

        Args:
            key: The idempotency key, at most 256 bytes.
            lease: Seconds the claim holds before another caller may take over;
                the service's default (a minute) if None.
            ttl: Seconds the key's record is kept after its last change; the
                service's default (a day) if None.
        """
        return wire.to_claim(self.serde, self._send(wire.claim_call(key, lease, ttl)))

    async def aclaim(
        self, key: str, *, lease: float | None = None, ttl: float | None = None
    ) -> Claim:
        """Async `claim`."""
        return wire.to_claim(self.serde, await self._asend(wire.claim_call(key, lease, ttl)))

    def complete(self, key: str, token: str, result: Any) -> None:
        """Store the result of a claimed key (serialised with `serde`).

        Raises ConflictError when the token no longer holds the claim.
        """
        self._send(wire.complete_call(self.serde, key, token, result))

    async def acomplete(self, key: str, token: str, result: Any) -> None:
        """Async `complete`."""
        await self._asend(wire.complete_call(self.serde, key, token, result))

    def fail(self, key: str, token: str, message: str, *, retryable: bool = True) -> None:
        """Store a failure of a claimed key. A retryable one lets the next claim run again.

        Raises ConflictError when the token no longer holds the claim.
        """
        self._send(wire.fail_call(key, token, message, retryable))

    async def afail(self, key: str, token: str, message: str, *, retryable: bool = True) -> None:
        """Async `fail`."""
        await self._asend(wire.fail_call(key, token, message, retryable))

    def idempotent(
        self,
        key: str | Callable[..., str] | None = None,
        *,
        name: str | None = None,
        lease: float | None = None,
        ttl: float | None = None,
        timeout: float | None = DEFAULT_WAIT_TIMEOUT,
        non_retryable: tuple[type[BaseException], ...] = (),
        pass_key: str | None = None,
        config: RunnableConfig | None = None,
    ) -> Idempotent:
        """Run a side effect at most once per key, however often its step runs.

        As a decorator, sync or async::

            charge = saver.idempotent("charge-" + order_id)(charge_card)
            receipt = charge(order)

        or as a context manager (`with` / `async with`)::

            with saver.idempotent("charge-" + order_id) as call:
                if not call.done:
                    call.result = charge_card(order, idempotency_key=call.key)
            receipt = call.result

        The first call claims the key, runs, and stores its result (with
        `serde`); a later call under the same key returns the stored result
        without running. If the call raises, the failure is stored and the
        exception re-raised; the next call runs again, unless the exception is
        one of `non_retryable` (or has `retryable = False`), in which case later
        calls raise IdempotentCallFailed. While another caller holds the key,
        a call waits for its lease (polling, at most until the lease ends) and
        raises IdempotencyInProgress after `timeout` seconds.

        Args:
            key: The key, a function of the call's arguments returning it, or
                None to derive one from the running LangGraph task (see
                `derive_key`): inside a node or `@task` only.
            name: The step-local name in a derived key; default the wrapped
                function's qualified name (the block form: "idempotent"). Calls
                of one name in one task are numbered, so two calls of the same
                function in a step get different keys.
            lease: Seconds a claim holds before another caller may take over.
                Longer than the call can take. Default: the service's (a minute).
            ttl: Seconds the key is remembered. Default: the service's (a day).
            timeout: Seconds to wait for another caller's lease; None: no limit.
            non_retryable: Exception classes that fail the key for good.
            pass_key: Name of a keyword parameter of the wrapped function that
                receives the key, to pass on to a downstream API as that API's
                own idempotency key. Give the parameter a default (e.g.
                `idempotency_key: str | None = None`): callers do not pass it.
            config: The task's config, for deriving keys where
                `langgraph.config.get_config()` cannot find it (async code on
                Python 3.10).
        """
        return Idempotent(
            self,
            key,
            name=name,
            lease=lease,
            ttl=ttl,
            timeout=timeout,
            non_retryable=tuple(non_retryable),
            pass_key=pass_key,
            config=config,
        )
