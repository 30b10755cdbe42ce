/** Kill -9 the service at an interrupt; after a restart the thread resumes where it stopped. */

import { randomUUID } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Command } from "@langchain/langgraph";

import { HTTPSaver } from "../src/index.js";
import { callsOf, interruptGraph, type Calls } from "./graphs.js";
import { ServiceProcess } from "./service.js";

const service = new ServiceProcess();
beforeAll(async () => {
  await service.start();
});
afterAll(async () => {
  await service.dispose();
});

async function ids(saver: HTTPSaver, config: RunnableConfig): Promise<string[]> {
  const out: string[] = [];
  for await (const t of saver.list(config)) out.push(String(t.config.configurable!.checkpoint_id));
  return out;
}

it.each(["sync", "async"] as const)("resumes after kill -9 at an interrupt, durability %s", async (durability) => {
  const calls: Calls = new Map();
  const config: RunnableConfig = { configurable: { thread_id: `restart-${randomUUID()}` } };
  const saver = new HTTPSaver(service.url);
  const graph = interruptGraph(saver, calls);

  const out = (await graph.invoke({ log: ["in"] }, { ...config, durability })) as unknown as {
    __interrupt__: { value: unknown }[];
  };
  expect(out.__interrupt__.map((i: { value: unknown }) => i.value)).toEqual([{ question: "name?" }]);
  const before = await graph.getState(config);
  const historyBefore = await ids(saver, config);

  // No graceful shutdown: whatever was acknowledged must be on disk.
  await service.crashAndRestart();

  // The same saver reconnects to the restarted service on the same port.
  const after = await graph.getState(config);
  expect(after.config).toEqual(before.config);
  expect(after.values).toEqual({ log: ["in", "before"] });
  expect(after.values).toEqual(before.values);
  expect(after.next).toEqual(["ask"]);
  expect(after.tasks.flatMap((t) => t.interrupts.map((i) => i.value))).toEqual([{ question: "name?" }]);

  const final = await graph.invoke(new Command({ resume: "Ada" }), { ...config, durability });
  expect(final).toEqual({ log: ["in", "before", "ask", "hello Ada"], name: "Ada" });
  // It continued from the interrupted step: "before" did not run again.
  expect(callsOf(calls)).toEqual({ after: 1, ask: 2, before: 1 });

  const history = await ids(new HTTPSaver(service.url), config);
  // The new checkpoints extend the old chain; none of the old ones was lost.
  expect(history.slice(-historyBefore.length)).toEqual(historyBefore);
  expect(history.length).toBeGreaterThan(historyBefore.length);
});
