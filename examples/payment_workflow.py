"""A seven-step order workflow that charges a card exactly once, even when it fails.

Run it against a saver service (`make run` in another terminal, then
`.venv/bin/python examples/payment_workflow.py`), or let `make example` start a
temporary service for it. SAVER_URL names the service (default
http://127.0.0.1:7878).

The workflow validates, reserves, prices, charges (step 4), ships (step 5),
notifies and archives. The shipping API is flaky: its first call answers 429,
so the first run fails at step 5. Resuming the thread continues at step 5: steps
1-4 do not run again. The charge goes through `saver.idempotent`, keyed by the
order, and the key is passed on to the payment API as its own idempotency key,
so even a step that does run again (after a crash, say) charges once. At the
end the example prints the thread's checkpoint tree, failed attempt included.
"""

from __future__ import annotations

import operator
import os
import uuid
from collections import Counter
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from saver_client import HTTPSaver

DEFAULT_URL = "http://127.0.0.1:7878"
STEPS = ("validate", "reserve", "price", "charge", "ship", "notify", "archive")


class PaymentAPI:
    """A stand-in for a payment provider that honours idempotency keys."""

    def __init__(self) -> None:
        self.charges: dict[str, dict[str, Any]] = {}

    def charge(
        self, order_id: str, amount: int, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        key = idempotency_key or uuid.uuid4().hex
        if key not in self.charges:  # a real provider answers a repeat with the first charge
            self.charges[key] = {"charge_id": f"ch_{len(self.charges) + 1}", "amount": amount}
        return self.charges[key]


class ShippingRateLimited(Exception):
    """The shipping API answered 429 Too Many Requests."""


class ShippingAPI:
    """A stand-in for a shipping API whose first call is rate limited."""

    def __init__(self) -> None:
        self.calls = 0

    def ship(self, order_id: str) -> str:
        self.calls += 1
        if self.calls == 1:
            raise ShippingRateLimited("shipping API answered 429 Too Many Requests")
        return f"trk-{order_id[:8]}"


class Order(TypedDict, total=False):
    order_id: str
    amount: int
    log: Annotated[list[str], operator.add]
    receipt: dict[str, Any]
    tracking: str


def build(saver: HTTPSaver, payments: PaymentAPI, shipping: ShippingAPI, ran: Counter[str]) -> Any:
    def step(name: str) -> None:
        ran[name] += 1
        print(f"  step {STEPS.index(name) + 1} {name}")

    def validate(state: Order) -> Order:
        step("validate")
        return {"log": ["validated"]}

    def reserve(state: Order) -> Order:
        step("reserve")
        return {"log": ["reserved"]}

    def price(state: Order) -> Order:
        step("price")
        return {"log": [f"priced {state['amount']}"]}

    def charge(state: Order) -> Order:
        step("charge")
        # One line: the charge runs once per order, however often this step runs.
        pay = saver.idempotent("charge-" + state["order_id"], pass_key="idempotency_key")(
            payments.charge
        )
        receipt = pay(state["order_id"], state["amount"])
        return {"receipt": receipt, "log": [f"charged {receipt['charge_id']}"]}

    def ship(state: Order) -> Order:
        step("ship")
        tracking = shipping.ship(state["order_id"])
        return {"tracking": tracking, "log": [f"shipped {tracking}"]}

    def notify(state: Order) -> Order:
        step("notify")
        return {"log": ["notified"]}

    def archive(state: Order) -> Order:
        step("archive")
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


def main() -> None:
    url = os.environ.get("SAVER_URL") or DEFAULT_URL
    order_id = uuid.uuid4().hex
    thread_id = f"order-{order_id}"
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    payments, shipping, ran = PaymentAPI(), ShippingAPI(), Counter[str]()

    with HTTPSaver(url) as saver:
        graph = build(saver, payments, shipping, ran)
        print(f"saver: {url}")
        print(f"thread: {thread_id}")
        print("running the workflow")
        try:
            # durability="sync": each checkpoint is stored before the next step.
            graph.invoke(
                {"order_id": order_id, "amount": 4200, "log": []}, config, durability="sync"
            )
        except ShippingRateLimited as exc:
            print(f"run failed at step {STEPS.index('ship') + 1}: {exc}")
        else:
            raise SystemExit("expected the first run to fail at the shipping step")

        print("resuming the thread")
        final = graph.invoke(None, config, durability="sync")
        print(f"done: {', '.join(final['log'])}")

        # The same step running again (a crash before its checkpoint was saved,
        # say) asks under the same key and gets the stored receipt back.
        again = saver.idempotent("charge-" + order_id)(payments.charge)(order_id, 4200)
        print(f"charging again under the same key returns {again['charge_id']}")
        print(f"charges made: {len(payments.charges)}")
        print("steps run: " + " ".join(f"{s}={ran[s]}" for s in STEPS))

        context = saver.resume_context(thread_id)
        print()
        print("resume context (the live path, for a prompt):")
        print(context.text, end="")
        print()
        print("checkpoint tree:")
        print(context.drawing, end="")


if __name__ == "__main__":
    main()
