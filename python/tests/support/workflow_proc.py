"""A seven-step order workflow whose fourth step charges a card, once.

Imported by the tests (`build_workflow`) and run by them as a separate process
(`python workflow_proc.py ...`) that they can kill -9 at a chosen point. The
payment and shipping APIs, and a recorder of node executions, are HTTP services
the test runs (`--api`); the process reports what it does on stdout, one line
per event, and blocks on stdin where told to, so that the test kills it exactly
there.

Durability is "sync": each checkpoint is stored before the next step starts, so
a step that runs again after a crash runs from the same checkpoint, as the same
task, and derives the same idempotency key.
"""

from __future__ import annotations

import argparse
import json
import operator
import sys
from collections.abc import Callable
from typing import Annotated, Any, cast

import httpx
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel
from typing_extensions import TypedDict

from saver_client import HTTPSaver

STEPS = ("validate", "reserve", "price", "charge", "ship", "notify", "archive")
Graph = Pregel[Any, Any, Any, Any]


class Order(TypedDict, total=False):
    order_id: str
    amount: int
    log: Annotated[list[str], operator.add]
    receipt: dict[str, Any]
    tracking: str


class ShippingUnavailable(Exception):
    """The shipping API asked us to come back later (429)."""


def build_workflow(
    saver: HTTPSaver,
    api_url: str,
    *,
    key_mode: str = "order",
    lease: float | None = None,
    in_charge: Callable[[str], None] | None = None,
    after_charge: Callable[[str, dict[str, Any]], None] | None = None,
) -> Graph:
    """The workflow: one node per step, in sequence, checkpointed by saver.

    key_mode "order" charges under "charge-<order_id>"; "derived" lets the
    helper derive the key from the running task. in_charge runs inside the
    idempotent call, after the payment API accepted the charge; after_charge
    runs once the helper returned (and so completed the key).
    """
    api = httpx.Client(base_url=api_url, timeout=30.0)

    def report(step: str) -> None:
        api.post("/step", json={"step": step}).raise_for_status()

    def charge_card(order_id: str, amount: int, *, idempotency_key: str = "") -> dict[str, Any]:
        resp = api.post(
            "/charge",
            json={"order_id": order_id, "amount": amount},
            headers={"Idempotency-Key": idempotency_key},
        )
        resp.raise_for_status()
        receipt: dict[str, Any] = resp.json()
        if in_charge is not None:
            in_charge(idempotency_key)
        return receipt

    def validate(state: Order) -> Order:
        report("validate")
        assert state["amount"] > 0
        return {"log": ["validated"]}

    def reserve(state: Order) -> Order:
        report("reserve")
        return {"log": ["reserved"]}

    def price(state: Order) -> Order:
        report("price")
        return {"log": [f"priced {state['amount']}"]}

    def charge(state: Order) -> Order:
        report("charge")
        key = f"charge-{state['order_id']}" if key_mode == "order" else None
        pay = saver.idempotent(key, pass_key="idempotency_key", lease=lease)(charge_card)
        receipt = pay(state["order_id"], state["amount"])
        if after_charge is not None:
            after_charge(receipt["idempotency_key"], receipt)
        return {"receipt": receipt, "log": [f"charged {receipt['charge_id']}"]}

    def ship(state: Order) -> Order:
        report("ship")
        resp = api.post("/ship", json={"order_id": state["order_id"]})
        if resp.status_code == 429:
            wait = resp.headers["Retry-After"]
            raise ShippingUnavailable(f"shipping API: 429, retry after {wait}s")
        resp.raise_for_status()
        tracking: str = resp.json()["tracking"]
        return {"tracking": tracking, "log": [f"shipped {tracking}"]}

    def notify(state: Order) -> Order:
        report("notify")
        return {"log": ["notified"]}

    def archive(state: Order) -> Order:
        report("archive")
        return {"log": ["archived"]}

    g = StateGraph(Order)
    nodes = (validate, reserve, price, charge, ship, notify, archive)
    for name, fn in zip(STEPS, nodes, strict=True):
        g.add_node(name, fn)
    g.add_edge(START, STEPS[0])
    for a, b in zip(STEPS, STEPS[1:], strict=False):
        g.add_edge(a, b)
    g.add_edge(STEPS[-1], END)
    return g.compile(checkpointer=saver)


def run_until_done(
    graph: Graph, inputs: Order | None, config: RunnableConfig, attempts: int = 3
) -> Order:
    """Run, and resume after each failure, as an operator (or a scheduler) would."""
    for attempt in range(1, attempts + 1):
        try:
            return cast(Order, graph.invoke(inputs, config, durability="sync"))
        except ShippingUnavailable as exc:
            emit("failed", {"attempt": attempt, "error": str(exc)})
            inputs = None  # resume the thread where it stopped
    raise RuntimeError(f"not done after {attempts} attempts")


def emit(event: str, data: Any) -> None:
    print(event, json.dumps(data), flush=True)


def block_forever() -> None:
    """Wait for the test to kill this process (or to close our stdin)."""
    sys.stdin.readline()
    raise SystemExit("stdin closed while blocked: the test was to kill this process")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--saver", required=True)
    parser.add_argument("--api", required=True)
    parser.add_argument("--thread", required=True)
    parser.add_argument("--order", required=True)
    parser.add_argument("--amount", type=int, default=4200)
    parser.add_argument("--start", action="store_true", help="start the thread (else resume)")
    parser.add_argument("--key-mode", choices=("order", "derived"), default="order")
    parser.add_argument("--block", choices=("none", "in-charge", "after-charge"), default="none")
    parser.add_argument("--lease", type=float, default=None)
    args = parser.parse_args()

    def in_charge(key: str) -> None:
        if args.block == "in-charge":
            emit("in-charge", {"key": key})
            block_forever()

    def after_charge(key: str, receipt: dict[str, Any]) -> None:
        if args.block == "after-charge":
            emit("charged", {"key": key, "receipt": receipt})
            block_forever()

    with HTTPSaver(args.saver) as saver:
        graph = build_workflow(
            saver,
            args.api,
            key_mode=args.key_mode,
            lease=args.lease,
            in_charge=in_charge,
            after_charge=after_charge,
        )
        config: RunnableConfig = {"configurable": {"thread_id": args.thread}}
        inputs: Order | None = None
        if args.start:
            inputs = {"order_id": args.order, "amount": args.amount, "log": []}
        out = run_until_done(graph, inputs, config)
        emit("done", out)


if __name__ == "__main__":
    main()
