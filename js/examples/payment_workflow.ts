/**
 * A seven-step order workflow that charges a card exactly once, even when it
 * fails: the TypeScript twin of examples/payment_workflow.py.
 *
 * The workflow validates, reserves, prices, charges (step 4), ships (step 5),
 * notifies and archives. The shipping API is flaky: its first call answers
 * 429, so the first run fails at step 5. Resuming the thread continues at step
 * 5: steps 1-4 do not run again. The charge goes through `saver.idempotent`,
 * keyed by the order, and the key is passed on to the payment API as its own
 * idempotency key, so even a step that does run again (after a crash, say)
 * charges once. At the end it prints the thread's checkpoint tree, failed
 * attempt included. js/test/payment.test.ts runs it against a live service.
 */

import { randomUUID } from "node:crypto";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

import { HTTPSaver } from "../src/index.js";

export const STEPS = ["validate", "reserve", "price", "charge", "ship", "notify", "archive"] as const;
type Step = (typeof STEPS)[number];

export interface Receipt {
  chargeId: string;
  amount: number;
}

/** A stand-in for a payment provider that honours idempotency keys. */
export class PaymentAPI {
  readonly charges = new Map<string, Receipt>();

  async charge(orderId: string, amount: number, options: { idempotencyKey?: string } = {}): Promise<Receipt> {
    const key = options.idempotencyKey ?? randomUUID();
    // A real provider answers a repeat with the first charge.
    if (!this.charges.has(key)) this.charges.set(key, { chargeId: `ch_${this.charges.size + 1}`, amount });
    return this.charges.get(key)!;
  }
}

export class ShippingRateLimited extends Error {
  name = "ShippingRateLimited";
}

/** A stand-in for a shipping API whose first call is rate limited. */
export class ShippingAPI {
  calls = 0;

  async ship(orderId: string): Promise<string> {
    this.calls += 1;
    if (this.calls === 1) throw new ShippingRateLimited("shipping API answered 429 Too Many Requests");
    return `trk-${orderId.slice(0, 8)}`;
  }
}

const Order = Annotation.Root({
  orderId: Annotation<string>(),
  amount: Annotation<number>(),
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  receipt: Annotation<Receipt>(),
  tracking: Annotation<string>(),
});
type OrderState = typeof Order.State;

export function build(
  saver: HTTPSaver,
  payments: PaymentAPI,
  shipping: ShippingAPI,
  ran: Map<Step, number>,
  print: (line: string) => void,
) {
  const step = (name: Step) => {
    ran.set(name, (ran.get(name) ?? 0) + 1);
    print(`  step ${STEPS.indexOf(name) + 1} ${name}`);
  };
  return new StateGraph(Order)
    .addNode("validate", () => (step("validate"), { log: ["validated"] }))
    .addNode("reserve", () => (step("reserve"), { log: ["reserved"] }))
    .addNode("price", (s: OrderState) => (step("price"), { log: [`priced ${s.amount}`] }))
    .addNode("charge", async (s: OrderState) => {
      step("charge");
      // One call: the charge runs once per order, however often this step runs.
      const receipt = await saver
        .idempotent(`charge-${s.orderId}`)
        .run(({ key }) => payments.charge(s.orderId, s.amount, { idempotencyKey: key }));
      return { receipt, log: [`charged ${receipt.chargeId}`] };
    })
    .addNode("ship", async (s: OrderState) => {
      step("ship");
      const tracking = await shipping.ship(s.orderId);
      return { tracking, log: [`shipped ${tracking}`] };
    })
    .addNode("notify", () => (step("notify"), { log: ["notified"] }))
    .addNode("archive", () => (step("archive"), { log: ["archived"] }))
    .addEdge(START, "validate")
    .addEdge("validate", "reserve")
    .addEdge("reserve", "price")
    .addEdge("price", "charge")
    .addEdge("charge", "ship")
    .addEdge("ship", "notify")
    .addEdge("notify", "archive")
    .addEdge("archive", END)
    .compile({ checkpointer: saver });
}

export interface Outcome {
  threadId: string;
  firstError: unknown;
  final: OrderState;
  again: Receipt;
  charges: number;
  ran: Record<Step, number>;
}

export async function main(url = process.env.SAVER_URL || "http://127.0.0.1:7878", print = console.log): Promise<Outcome> {
  const orderId = randomUUID().replaceAll("-", "");
  const threadId = `order-${orderId}`;
  const config = { configurable: { thread_id: threadId } };
  const payments = new PaymentAPI();
  const shipping = new ShippingAPI();
  const ran = new Map<Step, number>();
  const saver = new HTTPSaver(url);
  const graph = build(saver, payments, shipping, ran, print);
  print(`saver: ${url}`);
  print(`thread: ${threadId}`);
  print("running the workflow");
  let firstError: unknown;
  try {
    // durability "sync": each checkpoint is stored before the next step.
    await graph.invoke({ orderId, amount: 4200, log: [] }, { ...config, durability: "sync" });
  } catch (err) {
    firstError = err;
    print(`run failed at step ${STEPS.indexOf("ship") + 1}: ${(err as Error).message}`);
  }
  if (!(firstError instanceof ShippingRateLimited)) throw new Error("expected the first run to fail at the shipping step");

  print("resuming the thread");
  const final = (await graph.invoke(null, { ...config, durability: "sync" })) as OrderState;
  print(`done: ${final.log.join(", ")}`);

  // The same step running again (a crash before its checkpoint was saved,
  // say) asks under the same key and gets the stored receipt back.
  const again = await saver.idempotent(`charge-${orderId}`)(payments.charge.bind(payments))(orderId, 4200);
  print(`charging again under the same key returns ${again.chargeId}`);
  print(`charges made: ${payments.charges.size}`);
  print(`steps run: ${STEPS.map((s) => `${s}=${ran.get(s) ?? 0}`).join(" ")}`);

  const context = await saver.resumeContext(threadId);
  print("");
  print("resume context (the live path, for a prompt):");
  print(context.text.trimEnd());
  print("");
  print("checkpoint tree:");
  print(context.drawing.trimEnd());
  return {
    threadId,
    firstError,
    final,
    again,
    charges: payments.charges.size,
    ran: Object.fromEntries(STEPS.map((s) => [s, ran.get(s) ?? 0])) as Record<Step, number>,
  };
}
