"""The idempotency ledger through HTTPSaver: claim/complete/fail, and the helper
that runs a side effect once per key, with keys given or derived from the task."""

from __future__ import annotations

import asyncio
import operator
import pickle
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Annotated, Any

import ormsgpack
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy
from typing_extensions import TypedDict

from saver_client import (
    Claim,
    ConflictError,
    HTTPSaver,
    IdempotencyInProgress,
    IdempotentCallFailed,
    InvalidRequestError,
    StoredFailure,
    derive_key,
)
from saver_client._http import ConnectionFailed, Reply
from saver_client import ledger as ledger_module

# Bound for waiting on something another thread does; generous for small CI machines.
WAIT = 30.0


def new_key(prefix: str = "k") -> str:
    return f"{prefix}-{uuid.uuid4()}"


def sleep_past(deadline: float | None) -> None:
    """Sleep until a lease deadline the service reported has passed."""
    assert deadline is not None
    time.sleep(max(0.0, deadline - time.time()) + 0.01)


class SpySaver(HTTPSaver):
    """An HTTPSaver that lets a test wait until claims have seen a given state."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.states: list[str] = []
        self._cond = threading.Condition()

    def _seen(self, claim: Claim) -> Claim:
        with self._cond:
            self.states.append(claim.state)
            self._cond.notify_all()
        return claim

    def claim(self, key: str, *, lease: float | None = None, ttl: float | None = None) -> Claim:
        return self._seen(super().claim(key, lease=lease, ttl=ttl))

    async def aclaim(
        self, key: str, *, lease: float | None = None, ttl: float | None = None
    ) -> Claim:
        return self._seen(await super().aclaim(key, lease=lease, ttl=ttl))

    def wait_for(self, state: str, count: int = 1) -> None:
        with self._cond:
            ok = self._cond.wait_for(lambda: self.states.count(state) >= count, timeout=WAIT)
        assert ok, f"saw {self.states}, wanted {count} x {state}"

    async def await_for(self, state: str, count: int = 1) -> None:
        await asyncio.to_thread(self.wait_for, state, count)


@pytest.fixture
def spy(saver_url: str) -> Iterator[SpySaver]:
    s = SpySaver(saver_url)
    yield s
    s.close()


# -- claim, complete, fail ---------------------------------------------------------


def test_claim_complete_round_trip(saver: HTTPSaver) -> None:
    key = new_key()
    claim = saver.claim(key, lease=30, ttl=3600)
    assert (claim.key, claim.state, claim.attempt) == (key, "claimed", 1)
    assert claim.token and claim.result is None and claim.error is None
    assert claim.lease_expires_at is not None
    assert abs(claim.lease_expires_at - (time.time() + 30)) < 5

    other = saver.claim(key)
    assert (other.state, other.attempt, other.token) == ("in_progress", 1, None)
    assert other.lease_expires_at == claim.lease_expires_at

    result = {"charge": "ch_1", "raw": b"\x00\xff", "at": datetime(2024, 1, 2, tzinfo=timezone.utc)}
    saver.complete(key, claim.token, result)
    done = saver.claim(key)
    assert (done.state, done.attempt, done.token, done.result) == ("completed", 1, None, result)
    # None is a result like any other.
    key2 = new_key()
    saver.complete(key2, str(saver.claim(key2).token), None)
    assert saver.claim(key2).state == "completed"


def test_fail_retryable_then_for_good(saver: HTTPSaver) -> None:
    key = new_key()
    first = saver.claim(key)
    assert first.token is not None
    saver.fail(key, first.token, "gateway timeout")
    # A retryable failure is not reported: the next claim is granted, with it.
    second = saver.claim(key)
    assert (second.state, second.attempt) == ("claimed", 2)
    assert second.error == StoredFailure("gateway timeout", True)
    assert second.token is not None and second.token != first.token

    saver.fail(key, second.token, "card declined", retryable=False)
    failed = saver.claim(key)
    assert (failed.state, failed.attempt, failed.token) == ("failed", 2, None)
    assert failed.error == StoredFailure("card declined", False)


def test_superseded_token_conflicts(saver: HTTPSaver) -> None:
    key = new_key()
    first = saver.claim(key, lease=0.2)
    assert first.token is not None
    sleep_past(first.lease_expires_at)
    second = saver.claim(key)
    assert (second.state, second.attempt) == ("claimed", 2)
    with pytest.raises(ConflictError):
        saver.complete(key, first.token, "late")
    with pytest.raises(ConflictError):
        saver.fail(key, first.token, "late")
    assert second.token is not None
    saver.complete(key, second.token, "on time")
    assert saver.claim(key).result == "on time"


def test_claim_whose_answer_was_lost_is_granted_on_resend(saver_url: str) -> None:
    """The service grants a claim, its answer is lost (a read timeout), the
    client sends it again: the resend carries the same claim id, so it gets
    the same grant, not in_progress (held by itself) until its lease ends."""
    with HTTPSaver(saver_url) as saver:
        pool = saver._transport._sync
        real = pool.send
        lost: list[dict[str, Any]] = []

        def lossy(method: str, target: str, content: Any, headers: Any) -> Reply:
            reply = real(method, target, content, headers)
            if target.endswith("/idempotency/claim") and not lost:
                lost.append(ormsgpack.unpackb(reply.content))
                raise ConnectionFailed("ReadTimeout: the answer was lost")
            return reply

        pool.send = lossy  # type: ignore[method-assign]
        key = new_key()
        claim = saver.claim(key)
        assert lost and lost[0]["state"] == "claimed"
        assert claim.state == "claimed" and claim.token == lost[0]["token"]
        assert saver.claim(key).state == "in_progress"  # a new claim, another id
        saver.complete(key, claim.token, "done")
        assert saver.claim(key).result == "done"


def test_claim_arguments_are_checked(saver: HTTPSaver) -> None:
    with pytest.raises(ValueError):
        saver.claim("")
    with pytest.raises(ValueError):
        saver.claim(new_key(), lease=0)
    with pytest.raises(ValueError):
        saver.claim(new_key(), ttl=-1)
    with pytest.raises(InvalidRequestError):
        saver.claim("k" * 300)
    with pytest.raises(InvalidRequestError):  # the TTL must cover the lease
        saver.claim(new_key(), lease=60, ttl=1)


async def test_async_claim_complete_fail(saver: HTTPSaver) -> None:
    key = new_key()
    claim = await saver.aclaim(key, lease=10)
    assert claim.state == "claimed" and claim.token is not None
    assert (await saver.aclaim(key)).state == "in_progress"
    await saver.afail(key, claim.token, "try again")
    again = await saver.aclaim(key)
    assert (again.state, again.attempt, again.error) == (
        "claimed",
        2,
        StoredFailure("try again", True),
    )
    assert again.token is not None
    await saver.acomplete(key, again.token, [1, "two"])
    done = await saver.aclaim(key)
    assert (done.state, done.result) == ("completed", [1, "two"])
    await saver.aclose()


# -- the helper: once per key ------------------------------------------------------------


def test_helper_runs_once_and_returns_the_stored_result(saver: HTTPSaver) -> None:
    key = new_key("charge")
    calls: list[tuple[str, int]] = []

    def charge(order: str, amount: int) -> dict[str, Any]:
        calls.append((order, amount))
        return {"charge_id": f"ch_{len(calls)}", "amount": amount}

    pay = saver.idempotent(key)(charge)
    assert pay.__name__ == "charge"
    assert pay("o1", 42) == {"charge_id": "ch_1", "amount": 42}
    # Again, even through another wrapper: stored result, no second call.
    assert saver.idempotent(key)(charge)("o1", 42) == {"charge_id": "ch_1", "amount": 42}
    assert calls == [("o1", 42)]


def test_helper_key_function_and_pass_key(saver: HTTPSaver) -> None:
    prefix = new_key("order")
    seen: list[str] = []

    def charge(order: str, *, idempotency_key: str = "") -> str:
        seen.append(idempotency_key)
        return f"paid {order}"

    pay = saver.idempotent(lambda order: f"{prefix}-{order}", pass_key="idempotency_key")(charge)
    assert [pay("a"), pay("a"), pay("b")] == ["paid a", "paid a", "paid b"]
    assert seen == [f"{prefix}-a", f"{prefix}-b"]


def test_helper_retryable_failure_runs_again(saver: HTTPSaver) -> None:
    key = new_key()
    calls = 0

    def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("payment API unreachable")
        return "ok"

    call = saver.idempotent(key)(flaky)
    with pytest.raises(ConnectionError):
        call()
    assert call() == "ok"
    assert call() == "ok"
    assert calls == 2
    claim = saver.claim(key)
    assert (claim.state, claim.attempt, claim.result) == ("completed", 2, "ok")


class Declined(Exception):
    pass


class Fraud(Exception):
    retryable = False


def test_helper_non_retryable_failure_is_final(saver: HTTPSaver) -> None:
    key = new_key()
    calls = 0

    def decline() -> None:
        nonlocal calls
        calls += 1
        raise Declined("card declined")

    call = saver.idempotent(key, non_retryable=(Declined,))(decline)
    with pytest.raises(Declined):
        call()
    with pytest.raises(IdempotentCallFailed) as failed:
        call()
    assert calls == 1
    assert (failed.value.key, failed.value.message, failed.value.attempt) == (
        key,
        "Declined: card declined",
        1,
    )
    assert "card declined" in str(failed.value) and key in str(failed.value)
    copy = pickle.loads(pickle.dumps(failed.value))
    assert (copy.key, copy.message, copy.attempt) == (key, "Declined: card declined", 1)

    # An exception may mark itself: retryable = False.
    key2 = new_key()

    def fraud() -> None:
        raise Fraud("blocked")

    with pytest.raises(Fraud):
        saver.idempotent(key2)(fraud)()
    with pytest.raises(IdempotentCallFailed, match="Fraud: blocked"):
        saver.idempotent(key2)(fraud)()


def test_helper_context_manager(saver: HTTPSaver) -> None:
    key = new_key()
    with saver.idempotent(key) as call:
        assert (call.key, call.done, call.attempt) == (key, False, 1)
        call.result = {"receipt": 1}
    with saver.idempotent(key) as call:
        assert call.done and call.result == {"receipt": 1}
        with pytest.raises(RuntimeError, match="already completed"):
            call.result = {"receipt": 2}

    # An exception leaving the block fails the key (retryably) and propagates.
    key2 = new_key()
    with pytest.raises(TimeoutError), saver.idempotent(key2) as call:
        raise TimeoutError("slow")
    with saver.idempotent(key2) as call:
        assert not call.done and call.attempt == 2
        assert call.claim.error == StoredFailure("TimeoutError: slow", True)
    # Left without a result: None is stored.
    assert saver.claim(key2).state == "completed"


def test_concurrent_threads_run_the_call_once(spy: SpySaver) -> None:
    key, n = new_key(), 8
    runs: list[int] = []

    def work(i: int) -> dict[str, int]:
        runs.append(i)
        # Hold the key until every other thread has found it in progress.
        spy.wait_for("in_progress", n - 1)
        return {"winner": i}

    call = spy.idempotent(key)(work)
    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(call, range(n)))
    assert len(runs) == 1
    assert results == [{"winner": runs[0]}] * n
    assert spy.states.count("claimed") == 1


def test_waits_for_the_holder_to_complete(spy: SpySaver) -> None:
    key = new_key()
    held = spy.claim(key, lease=WAIT)
    assert held.token is not None
    token = held.token

    def holder() -> None:
        spy.wait_for("in_progress")  # the helper is waiting on us
        spy.complete(key, token, "from the holder")

    t = threading.Thread(target=holder)
    t.start()
    start = time.monotonic()
    result = spy.idempotent(key)(lambda: "not called")()
    t.join()
    assert result == "from the holder"
    assert time.monotonic() - start < WAIT / 2  # polled, did not sit out the lease


def test_takes_over_when_the_holder_lease_ends(saver: HTTPSaver) -> None:
    key = new_key()
    held = saver.claim(key, lease=0.5)
    assert held.token is not None and held.lease_expires_at is not None

    result = saver.idempotent(key, timeout=WAIT)(lambda: "ran")()

    assert result == "ran"
    assert time.time() >= held.lease_expires_at - 0.05  # waited for the lease
    claim = saver.claim(key)
    assert (claim.state, claim.attempt, claim.result) == ("completed", 2, "ran")
    with pytest.raises(ConflictError):  # the dead holder can no longer complete
        saver.complete(key, held.token, "late")


def test_wait_is_bounded_by_timeout(saver: HTTPSaver) -> None:
    key = new_key()
    held = saver.claim(key, lease=WAIT)
    calls = 0

    def work() -> None:
        nonlocal calls
        calls += 1

    start = time.monotonic()
    with pytest.raises(IdempotencyInProgress) as err:
        saver.idempotent(key, timeout=0.3)(work)()
    assert 0.3 <= time.monotonic() - start < WAIT / 2
    assert err.value.key == key and err.value.lease_expires_at == held.lease_expires_at
    assert calls == 0


# -- the helper, async ----------------------------------------------------------------


async def test_async_helper_runs_once(spy: SpySaver) -> None:
    key, n = new_key(), 5
    runs: list[int] = []

    async def work(i: int) -> str:
        runs.append(i)
        await spy.await_for("in_progress", n - 1)
        return f"winner {i}"

    call = spy.idempotent(key)(work)
    results = await asyncio.gather(*(call(i) for i in range(n)))
    assert len(runs) == 1 and results == [f"winner {runs[0]}"] * n
    assert await call(99) == f"winner {runs[0]}"

    async def decline() -> None:
        raise Declined("no")

    key2 = new_key()
    with pytest.raises(Declined):
        await spy.idempotent(key2, non_retryable=(Declined,))(decline)()
    with pytest.raises(IdempotentCallFailed):
        await spy.idempotent(key2)(decline)()
    await spy.aclose()


async def test_async_context_manager(saver: HTTPSaver) -> None:
    key = new_key()
    async with saver.idempotent(key) as call:
        assert not call.done
        call.result = "first"
    async with saver.idempotent(key) as call:
        assert call.done and call.result == "first"
    key2 = new_key()
    with pytest.raises(KeyError):
        async with saver.idempotent(key2):
            raise KeyError("x")
    async with saver.idempotent(key2) as call:
        assert call.attempt == 2 and call.claim.error is not None
    await saver.aclose()


async def test_async_wait_is_bounded(saver: HTTPSaver) -> None:
    key = new_key()
    held = await saver.aclaim(key, lease=1.0)

    async def work() -> str:
        return "after the lease"

    with pytest.raises(IdempotencyInProgress):
        await saver.idempotent(key, timeout=0.05)(work)()
    assert await saver.idempotent(key, timeout=WAIT)(work)() == "after the lease"
    assert held.lease_expires_at is not None and time.time() >= held.lease_expires_at - 0.05
    await saver.aclose()


# -- keys derived from the running task ---------------------------------------------------


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def test_configurable_keys_match_langgraph() -> None:
    from langgraph._internal import _constants as c

    assert ledger_module.CONFIG_KEY_TASK_ID == c.CONFIG_KEY_TASK_ID
    assert ledger_module.CONFIG_KEY_SCRATCHPAD == c.CONFIG_KEY_SCRATCHPAD
    assert ledger_module.CONFIG_KEY_RUNTIME == c.CONFIG_KEY_RUNTIME
    assert ledger_module.CONFIG_KEY_CHECKPOINT_MAP == c.CONFIG_KEY_CHECKPOINT_MAP


def test_derived_key_needs_a_task(saver: HTTPSaver) -> None:
    with pytest.raises(RuntimeError, match="no LangGraph task is running"):
        saver.idempotent()(lambda: 1)()
    with pytest.raises(RuntimeError, match="task id"):
        derive_key("x", config={"configurable": {"thread_id": "t"}})


def test_derived_keys_are_stable_across_replays_and_distinct_per_call(saver: HTTPSaver) -> None:
    """Same step run again (failure then resume, or a retry in process) -> same keys;
    other steps, other calls, other names, other threads -> other keys."""
    side_calls: list[str] = []
    derived: dict[str, list[str]] = {}
    fail_once = {"c": True, "d": True}

    def side(*, key: str = "") -> str:
        side_calls.append(key)
        return key

    def record(node: str, keys: list[str]) -> None:
        derived.setdefault(node, []).extend(keys)

    def a(state: Log) -> Log:
        first = saver.idempotent(pass_key="key")(side)()
        second = saver.idempotent(pass_key="key")(side)()
        other = saver.idempotent(name="refund", pass_key="key")(side)()
        assert first == derive_key(side.__qualname__, 1)
        assert second == derive_key(side.__qualname__, 2)
        assert other == derive_key("refund", 1)
        record("a", [first, second, other])
        return {"log": ["a"]}

    def b(state: Log) -> Log:
        record("b", [saver.idempotent(pass_key="key")(side)()])
        return {"log": ["b"]}

    def c(state: Log) -> Log:
        # Fails once after the side effect; the graph fails and is resumed.
        record("c", [saver.idempotent(pass_key="key")(side)()])
        if fail_once["c"]:
            fail_once["c"] = False
            raise RuntimeError("c failed after its side effect")
        return {"log": ["c"]}

    def d(state: Log) -> Log:
        # Fails once after the side effect; LangGraph retries it in process.
        record("d", [saver.idempotent(pass_key="key")(side)()])
        if fail_once["d"]:
            fail_once["d"] = False
            raise ConnectionError("d failed after its side effect")
        return {"log": ["d"]}

    g = StateGraph(Log)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_node("c", c)
    retry = RetryPolicy(max_attempts=2, initial_interval=0.01, jitter=False)
    g.add_node("d", d, retry_policy=retry)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", "d")
    g.add_edge("d", END)
    graph = g.compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": f"keys-{uuid.uuid4()}"}}

    with pytest.raises(RuntimeError, match="c failed"):
        graph.invoke({"log": []}, config, durability="sync")
    assert graph.invoke(None, config, durability="sync")["log"] == ["a", "b", "c", "d"]

    # c ran twice and d twice (a retry), each time under one key: one side effect.
    assert len(derived["c"]) == 2 and derived["c"][0] == derived["c"][1]
    assert len(derived["d"]) == 2 and derived["d"][0] == derived["d"][1]
    keys = [*derived["a"], *derived["b"], derived["c"][0], derived["d"][0]]
    assert len(set(keys)) == 6
    assert side_calls == keys
    assert all(k.startswith("lg:") and len(k.encode()) <= 256 for k in keys)
    assert [k.rsplit(":", 1)[1] for k in derived["a"]] == [
        f"{side.__qualname__}#1",
        f"{side.__qualname__}#2",
        "refund#1",
    ]

    # Another thread: the same steps are other work.
    other: RunnableConfig = {"configurable": {"thread_id": f"keys-{uuid.uuid4()}"}}
    fail_once.update(c=False, d=False)
    derived.clear()
    graph.invoke({"log": []}, other, durability="sync")
    assert not set(derived["a"] + derived["b"] + derived["c"] + derived["d"]) & set(keys)

    # Time travel forks: LangGraph copies the checkpoint under a new id and runs
    # the step as new work, so its derived key (and side effect) is new too.
    before_b = next(s for s in graph.get_state_history(config) if s.next == ("b",))
    derived.clear()
    graph.invoke(None, before_b.config, durability="sync")
    assert derived["b"][0] not in keys


def test_derived_keys_in_functional_tasks(saver: HTTPSaver) -> None:
    calls: list[str] = []

    def side(n: int, *, key: str = "") -> str:
        calls.append(key)
        return f"{n}:{key}"

    @task
    def pay(n: int) -> str:
        return saver.idempotent(pass_key="key")(side)(n)

    @entrypoint(checkpointer=saver)
    def flow(n: int) -> list[str]:
        return [pay(n).result(), pay(n + 1).result()]

    config: RunnableConfig = {"configurable": {"thread_id": f"func-{uuid.uuid4()}"}}
    out = flow.invoke(1, config)
    assert len(calls) == 2 and calls[0] != calls[1]
    assert out == [f"1:{calls[0]}", f"2:{calls[1]}"]


def test_derived_keys_in_async_nodes(saver_url: str) -> None:
    calls: list[str] = []

    async def side(n: int, *, key: str = "") -> str:
        calls.append(key)
        return key

    async def run() -> list[str]:
        async with HTTPSaver(saver_url) as saver:

            async def node(state: Log) -> Log:
                first = await saver.idempotent(pass_key="key")(side)(1)
                second = await saver.idempotent(pass_key="key")(side)(2)
                async with saver.idempotent(name="block") as call:
                    if not call.done:
                        call.result = call.key
                assert call.key == derive_key("block", 1)
                return {"log": [first, second, call.key]}

            g = StateGraph(Log)
            g.add_node("node", node)
            g.add_edge(START, "node")
            g.add_edge("node", END)
            graph = g.compile(checkpointer=saver)
            config: RunnableConfig = {"configurable": {"thread_id": f"async-{uuid.uuid4()}"}}
            out = await graph.ainvoke({"log": []}, config)
            return list(out["log"])

    log = asyncio.run(run())
    assert log[:2] == calls and len(set(log)) == 3
    assert calls[0].endswith(".side#1") and calls[1].endswith(".side#2")
