/** The payment workflow in TypeScript: a failure at step 5, a resume that runs 5 to 7, one charge. */

import { inject } from "vitest";

import { HTTPSaver } from "../src/index.js";
import { main, STEPS } from "../examples/payment_workflow.js";

it("charges once, resumes at the failed step and shows the failed attempt in the tree", async () => {
  const lines: string[] = [];
  const out = await main(inject("saverUrl"), (line) => lines.push(line));

  expect((out.firstError as Error).message).toContain("429");
  expect(out.final.log).toEqual([
    "validated",
    "reserved",
    "priced 4200",
    `charged ${out.final.receipt.chargeId}`,
    `shipped ${out.final.tracking}`,
    "notified",
    "archived",
  ]);
  // Steps 1-4 ran once; the resume ran 5 (again), 6 and 7.
  expect(out.ran).toEqual({ validate: 1, reserve: 1, price: 1, charge: 1, ship: 2, notify: 1, archive: 1 });
  expect(out.charges).toBe(1);
  expect(out.again).toEqual(out.final.receipt);

  // The thread's tree: the live path reaches the end, and the checkpoint
  // before "ship" carries the failed attempt.
  const saver = new HTTPSaver(inject("saverUrl"));
  const tree = await saver.tree(out.threadId);
  expect(tree.head?.onLivePath).toBe(true);
  expect(tree.failures.map((n) => n.status)).toEqual(["retried"]);
  expect(tree.livePath.map((n) => n.step)).toEqual([-1, 0, 1, 2, 3, 4, 5, 6, 7]);
  expect(lines.join("\n")).toContain("checkpoint tree:");
  expect(STEPS).toHaveLength(7);
});
