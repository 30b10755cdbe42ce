/**
 * A DeltaChannel history over the service's page (SAVER_HISTORY_PAGE, one
 * byte here: a page per ancestor) comes in pages, which the client puts
 * together: every state is MemorySaver's.
 */

import { randomUUID } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import { MemorySaver } from "@langchain/langgraph";

import { HTTPSaver } from "../src/index.js";
import { deltaGraph } from "./graphs.js";
import { ServiceProcess } from "./service.js";

const service = new ServiceProcess({ SAVER_HISTORY_PAGE: "1" });
beforeAll(async () => {
  await service.start();
});
afterAll(async () => {
  await service.dispose();
});

it("reads a history over the page in pages, the same as MemorySaver's", async () => {
  const lines: string[] = [];
  const saver = new HTTPSaver(service.url, { logger: { warn: (m) => lines.push(m), debug: (m) => lines.push(m) } });
  const config: RunnableConfig = { configurable: { thread_id: `pages-${randomUUID()}` } };
  const graph = deltaGraph(saver, new Map(), 8);
  const expected = deltaGraph(new MemorySaver(), new Map(), 8);
  expect(await graph.invoke({ history: "hello" }, config)).toEqual(await expected.invoke({ history: "hello" }, config));
  lines.length = 0;
  const got: unknown[] = [];
  const want: unknown[] = [];
  for await (const s of graph.getStateHistory(config)) got.push(s.values);
  for await (const s of expected.getStateHistory(config)) want.push(s.values);
  expect(got).toEqual(want);
  expect(got).toHaveLength(want.length);
  // With a snapshot every third update, most checkpoints need two ancestors
  // or more: a request each.
  const histories = lines.filter((l) => l.includes("/delta-history -> 200")).length;
  expect(histories).toBeGreaterThan(got.length);
});
