/**
 * LangGraph.js's own checkpointer validation suite against the live service:
 * `validate()` from @langchain/langgraph-checkpoint-validation (every spec of
 * its put, putWrites, getTuple, list and deleteThread suites), and its opt-in
 * getDeltaChannelHistory suite.
 *
 * Its list specs count every checkpoint of the tenant when no thread is given,
 * so the suite gets a service of its own (its own file, or its own table on
 * DynamoDB), emptied after each spec group as `destroyCheckpointer` asks.
 */

import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation";

import { HTTPSaver } from "../src/index.js";
import { ServiceProcess, STORE } from "./service.js";

const service = new ServiceProcess(
  STORE === "dynamodb" && process.env.SAVER_TABLE ? { SAVER_TABLE: `${process.env.SAVER_TABLE}-validation` } : {},
);

async function wipe(saver: HTTPSaver): Promise<void> {
  const threads = new Set<string>();
  for await (const t of saver.list({})) threads.add(String(t.config.configurable?.thread_id));
  await Promise.all([...threads].map((id) => saver.deleteThread(id)));
}

const initializer = {
  checkpointerName: "saver-client HTTPSaver",
  beforeAllTimeout: 60_000,
  async beforeAll() {
    await service.start();
  },
  async afterAll() {
    await service.dispose();
  },
  createCheckpointer() {
    return new HTTPSaver(service.url);
  },
  async destroyCheckpointer(saver: HTTPSaver) {
    await wipe(saver);
  },
};

validate(initializer);
deltaChannelHistoryTests(initializer);
