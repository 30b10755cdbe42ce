/**
 * The saver holds the last DeltaChannel history per thread and names its
 * checkpoint as `known` in the next request: a turn is answered the last
 * turn's writes, not the chain back to the snapshot. A chain that does not
 * reach the held checkpoint is refused it, and asked for whole.
 * Every state is MemorySaver's.
 */

import { randomUUID } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import { DeltaValue, END, MemorySaver, START, StateGraph, StateSchema } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { inject } from "vitest";
import { z } from "zod";

import { HTTPSaver, InvalidRequestError } from "../src/index.js";

const url = inject("saverUrl");

// No snapshot within the test's turns: every history goes back to the root.
const Chat = new StateSchema({
  messages: new DeltaValue(z.array(z.string()).default(() => []), {
    inputSchema: z.string(),
    reducer: (current: string[], writes: string[]) => [...current, ...writes],
    snapshotFrequency: 1000,
  }),
});

function chatGraph(saver: BaseCheckpointSaver) {
  return new StateGraph(Chat)
    .addNode("reply", (state: { messages: string[] }) => ({ messages: `reply ${state.messages.length}` }))
    .addEdge(START, "reply")
    .addEdge("reply", END)
    .compile({ checkpointer: saver });
}

interface Asked {
  body: Record<string, unknown>;
  writes?: number;
  error?: unknown;
}

/** A saver whose delta-history requests are recorded. */
function recordingSaver(): { saver: HTTPSaver; asked: Asked[] } {
  const saver = new HTTPSaver(url);
  const asked: Asked[] = [];
  const transport = (saver as unknown as { transport: { request: (...a: unknown[]) => Promise<unknown> } }).transport;
  const request = transport.request.bind(transport);
  transport.request = async (method: unknown, path: unknown, opts?: unknown) => {
    const isDelta = String(path).endsWith("/delta-history");
    const body = (opts as { body?: Record<string, unknown> } | undefined)?.body ?? {};
    try {
      const out = await request(method, path, opts);
      if (isDelta) {
        const channels = (out as { channels: Record<string, { writes: unknown[] }> }).channels;
        asked.push({ body, writes: Object.values(channels).reduce((n, h) => n + h.writes.length, 0) });
      }
      return out;
    } catch (error) {
      if (isDelta) asked.push({ body, error });
      throw error;
    }
  };
  return { saver, asked };
}

function newConfig(): RunnableConfig {
  return { configurable: { thread_id: `held-${randomUUID()}` } };
}

it("answers a turn what is new since the history it holds", async () => {
  const { saver, asked } = recordingSaver();
  const graph = chatGraph(saver);
  const expected = chatGraph(new MemorySaver());
  const config = newConfig();
  for (let i = 0; i < 20; i++) {
    expect(await graph.invoke({ messages: `hi ${i}` }, config)).toEqual(
      await expected.invoke({ messages: `hi ${i}` }, config),
    );
  }
  const later = asked.slice(3);
  expect(later.length).toBeGreaterThan(0);
  for (const a of later) {
    expect(a.body.known).toBeTruthy();
    expect(a.writes).toBeLessThanOrEqual(4);
  }
  // A saver that holds nothing is answered the whole, and agrees.
  const fresh = recordingSaver();
  const state = (await chatGraph(fresh.saver).getState(config)).values as { messages: string[] };
  expect(state.messages).toHaveLength(40);
  expect(state).toEqual((await graph.getState(config)).values);
  expect(fresh.asked[0]!.body.known).toBeUndefined();
  expect(fresh.asked[0]!.writes).toBeGreaterThanOrEqual(38);
});

it("asks for the whole history when the chain no longer reaches the one it holds", async () => {
  // Another process deletes the thread and runs it again: the held history's
  // checkpoint is gone, and the new chain (no snapshot) does not reach it.
  async function scenario(saver: BaseCheckpointSaver, other: BaseCheckpointSaver) {
    const graph = chatGraph(saver);
    const config = newConfig();
    for (let i = 0; i < 3; i++) await graph.invoke({ messages: `hi ${i}` }, config);
    await other.deleteThread(String(config.configurable!.thread_id));
    for (let i = 0; i < 3; i++) await chatGraph(other).invoke({ messages: `again ${i}` }, config);
    return graph.invoke({ messages: "and on" }, config);
  }
  const { saver, asked } = recordingSaver();
  const memory = new MemorySaver();
  expect(await scenario(saver, new HTTPSaver(url))).toEqual(await scenario(memory, memory));
  const refused = asked.filter((a) => a.error !== undefined);
  expect(refused).toHaveLength(1);
  expect(refused[0]!.error).toBeInstanceOf(InvalidRequestError);
  expect(refused[0]!.body.known).toBeTruthy();
  expect(asked.at(-1)!.body.known).toBeUndefined();
});
