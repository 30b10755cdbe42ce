/**
 * HTTPSaver beyond BaseCheckpointSaver, against the live service: the
 * maintenance calls, the tree queries, scope, conflict detection, a custom
 * serializer, structured metadata, and the idempotency ledger with its
 * helper (explicit and derived keys).
 */

import { randomUUID } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  emptyCheckpoint,
  JsonPlusSerializer,
  type SerializerProtocol,
  uuid6,
} from "@langchain/langgraph-checkpoint";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { END, START, StateGraph, Annotation, MessagesAnnotation } from "@langchain/langgraph";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { inject } from "vitest";

import {
  ConflictError,
  deriveKey,
  GoneError,
  HTTPSaver,
  IdempotencyInProgress,
  IdempotentCallFailed,
  InvalidRequestError,
  NotFoundError,
  SCOPE_KEY,
} from "../src/index.js";
import { CONFIG_KEY_CHECKPOINT_MAP, CONFIG_KEY_SCRATCHPAD, CONFIG_KEY_TASK_ID } from "../src/ledger.js";
import { interruptGraph, sequentialGraph, type Calls } from "./graphs.js";

const url = inject("saverUrl");
const saver = new HTTPSaver(url);
const meta = (step: number, extra: Record<string, unknown> = {}) => ({ source: "loop" as const, step, parents: {}, ...extra });
const tid = (prefix: string) => `${prefix}-${randomUUID()}`;

async function chain(threadId: string, n: number, extra: (i: number) => Record<string, unknown> = () => ({})) {
  let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = uuid6(i);
    config = await saver.put(config, { ...emptyCheckpoint(), id, channel_values: { x: i }, channel_versions: { x: i + 1 } }, meta(i, extra(i)), { x: i + 1 });
    ids.push(id);
  }
  return { config, ids };
}

async function all(s: HTTPSaver, config: RunnableConfig, options = {}) {
  const out = [];
  for await (const t of s.list(config, options)) out.push(t);
  return out;
}

describe("maintenance", () => {
  it("copies a thread with ids and parents unchanged, and refuses a missing source", async () => {
    const src = tid("copy");
    const { ids } = await chain(src, 3);
    const dst = tid("copied");
    await saver.copyThread(src, dst);
    const copied = await all(saver, { configurable: { thread_id: dst } });
    expect(copied.map((t) => t.config.configurable!.checkpoint_id)).toEqual([...ids].reverse());
    expect(copied[0]!.parentConfig?.configurable?.checkpoint_id).toBe(ids[1]);
    expect(copied[0]!.checkpoint.channel_values).toEqual({ x: 2 });
    await expect(saver.copyThread(tid("none"), tid("x"))).rejects.toBeInstanceOf(NotFoundError);
  });

  it("deletes the checkpoints of given runs", async () => {
    const thread = tid("runs");
    await chain(thread, 4, (i) => ({ run_id: i < 2 ? "run-a" : "run-b" }));
    await saver.deleteForRuns(["run-b"]);
    const left = await all(saver, { configurable: { thread_id: thread } });
    expect(left.map((t) => t.metadata?.step)).toEqual([1, 0]);
    await saver.deleteForRuns([]); // nothing to do, no request
  });

  it("refuses a late put or putWrites with a config from before deleteThread, and takes a fresh run", async () => {
    // LangGraph issue 7206: a run still going when its thread is deleted
    // must not bring the thread back.
    const thread = tid("gone");
    const { config: old } = await chain(thread, 2);
    await saver.deleteThread(thread);
    const put = await saver.put(old, { ...emptyCheckpoint(), id: uuid6(5) }, meta(2), {}).catch((e: unknown) => e);
    expect(put).toBeInstanceOf(GoneError);
    expect(put).toMatchObject({ code: "gone", status: 410 });
    await expect(saver.putWrites(old, [["x", 1]], "late-task")).rejects.toBeInstanceOf(GoneError);
    expect(await all(saver, { configurable: { thread_id: thread } })).toEqual([]);
    const fresh = await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, { ...emptyCheckpoint(), id: uuid6(6) }, meta(-1), {});
    await saver.put(fresh, { ...emptyCheckpoint(), id: uuid6(7) }, meta(0), {});
    expect((await all(saver, { configurable: { thread_id: thread } })).length).toBe(2);
  });

  it("prunes to the latest checkpoint, or deletes", async () => {
    const a = tid("prune");
    const b = tid("prune");
    const { ids } = await chain(a, 3);
    await chain(b, 2);
    await saver.prune([a]);
    const kept = await all(saver, { configurable: { thread_id: a } });
    expect(kept.map((t) => t.config.configurable!.checkpoint_id)).toEqual([ids[2]]);
    expect(kept[0]!.checkpoint.channel_values).toEqual({ x: 2 });
    await saver.prune([a, b], { strategy: "delete" });
    expect(await saver.getTuple({ configurable: { thread_id: b } })).toBeUndefined();
    await expect(saver.prune([a], { strategy: "nope" as "delete" })).rejects.toThrow(/strategy/);
  });

  it("pins a checkpoint, and 404s an unknown one", async () => {
    const thread = tid("pin");
    const session = new HTTPSaver(url, { scope: "session" });
    const id = uuid6(0);
    await session.put({ configurable: { thread_id: thread } }, { ...emptyCheckpoint(), id }, meta(0), {});
    await saver.pin(thread, id);
    const r = await fetch(`${url}/v1/threads/${thread}/checkpoint`, { headers: { Accept: "application/json" } });
    expect(((await r.json()) as { expires_at: number }).expires_at).toBe(0);
    await expect(saver.pin(thread, uuid6(9))).rejects.toBeInstanceOf(NotFoundError);
  });

  it("pings, and deleteThread of a missing thread is fine", async () => {
    await saver.ping();
    await saver.deleteThread(tid("never"));
  });
});

describe("the checkpoint tree", () => {
  it("answers tree, path, children, leaves, abandoned and the resume context of a forked thread", async () => {
    const calls: Calls = new Map();
    const graph = sequentialGraph(saver, calls);
    const config: RunnableConfig = { configurable: { thread_id: tid("tree") } };
    await graph.invoke({ log: ["in"], n: 0 }, config);
    const history = [];
    for await (const s of graph.getStateHistory(config)) history.push(s);
    const beforeB = history.find((s) => s.next[0] === "b")!;
    // Time travel: replay from before "b" abandons the first b, c.
    await graph.invoke(null, beforeB.config);
    const thread = String(config.configurable!.thread_id);

    const tree = await saver.tree(thread);
    expect(tree.threadId).toBe(thread);
    // Replaying an old checkpoint first copies it (a "fork"), then runs b and c again.
    expect(tree.nodes.length).toBe(history.length + 3);
    expect(tree.head?.onLivePath).toBe(true);
    expect(tree.livePath.map((n) => [n.step, n.source])).toEqual([
      [-1, "input"], [0, "loop"], [1, "loop"], [2, "fork"], [3, "loop"], [4, "loop"],
    ]);
    const path = await saver.path(thread);
    expect(path.map((n) => n.checkpointId)).toEqual(tree.livePath.map((n) => n.checkpointId));
    const forkPoint = String(beforeB.config.configurable!.checkpoint_id);
    const children = await saver.children(thread, forkPoint);
    expect(children).toHaveLength(2);
    expect(children.map((c) => c.parentId)).toEqual([forkPoint, forkPoint]);
    expect(tree.children(forkPoint)).toEqual(children);
    const leaves = await saver.leaves(thread);
    expect(leaves).toHaveLength(2);
    const abandoned = await saver.abandoned(thread);
    expect(abandoned).toHaveLength(1);
    expect(abandoned[0]!.forkPoint).toBe(forkPoint);
    expect(abandoned[0]!.checkpointIds).toHaveLength(2);
    const ctx = await saver.resumeContext(thread, { limit: 2 });
    const lines = ctx.text.trim().split("\n");
    expect(lines[0]).toContain("4 earlier steps left out");
    expect(lines).toHaveLength(3);
    expect(String(ctx)).toBe(ctx.text);
    expect(ctx.drawing).toContain(forkPoint.slice(0, 8));
    await expect(saver.tree(tid("none"))).rejects.toBeInstanceOf(NotFoundError);
    await expect(saver.path(thread, undefined, "sub")).rejects.toThrow(/checkpointId/);
  });
});

describe("the resumed agent's memory", () => {
  it("gives the live path's steps with values, and the live messages without the replaced answer", async () => {
    let n = 0;
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async () => {
        n += 1;
        return { messages: [new AIMessage({ content: `answer ${n}`, id: `a${n}` })] };
      })
      .addEdge(START, "agent")
      .addEdge("agent", END)
      .compile({ checkpointer: saver });
    const config: RunnableConfig = { configurable: { thread_id: tid("memory") } };
    await graph.invoke({ messages: [new HumanMessage({ content: "question", id: "h1" })] }, config);
    let beforeAgent;
    for await (const s of graph.getStateHistory(config)) if (s.next[0] === "agent") beforeAgent = s;
    // Replaying from before the agent abandons its first answer.
    await graph.invoke(null, beforeAgent!.config);
    const thread = String(config.configurable!.thread_id);

    const ctx = await saver.resumeContext(thread, { values: true });
    const path = await saver.path(thread);
    expect(ctx.steps.map((s) => s.checkpoint_id)).toEqual(path.map((p) => p.checkpointId));
    expect(ctx.text).toContain("agent wrote messages: ai: answer 2");
    // The abandoned first answer is one line, under the step it forked from.
    const lines = ctx.text.split("\n");
    const at = lines.indexOf("  abandoned: 1 checkpoint, ok");
    expect(lines[at - 1]).toBe(`step ${path[1]!.step}`);
    expect(ctx.text).not.toContain("answer 1");

    const live = await saver.liveMessages(thread);
    expect(live.map((m) => [m.getType(), m.id, m.content])).toEqual([
      ["human", "h1", "question"],
      ["ai", "a2", "answer 2"],
    ]);
    await expect(saver.resumeContext(thread, { valueBytes: 10 })).rejects.toThrow(/values/);
  });
});

describe("scope and conflicts", () => {
  it("sends the thread's scope: the saver's, or the run's configurable", async () => {
    const session = new HTTPSaver(url, { scope: "session" });
    const a = tid("scope");
    await session.put({ configurable: { thread_id: a } }, { ...emptyCheckpoint(), id: uuid6(0) }, meta(0), {});
    const b = tid("scope");
    await saver.put({ configurable: { thread_id: b, [SCOPE_KEY]: "session" } }, { ...emptyCheckpoint(), id: uuid6(0) }, meta(0), {});
    const raw = async (thread: string) => {
      const r = await fetch(`${url}/v1/threads/${thread}/checkpoint`, { headers: { Accept: "application/json" } });
      return (await r.json()) as { scope: string; expires_at: number };
    };
    for (const thread of [a, b]) {
      const got = await raw(thread);
      expect(got.scope).toBe("session");
      expect(got.expires_at).toBeGreaterThan(Date.now() / 1000);
    }
    expect(() => new HTTPSaver(url, { scope: "forever" as "session" })).toThrow(/scope/);
  });

  it("with detectConflicts, a second writer on a moved thread fails and stores nothing", async () => {
    const thread = tid("conflict");
    const one = new HTTPSaver(url, { detectConflicts: true });
    const base: RunnableConfig = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    const first = await one.put(base, { ...emptyCheckpoint(), id: uuid6(0) }, { ...meta(-1), source: "input" }, {});
    // Both writers read `first`; one moves the head, the other then fails.
    await one.put(first, { ...emptyCheckpoint(), id: uuid6(1) }, meta(0), {});
    const late = uuid6(2);
    const err = await one.put(first, { ...emptyCheckpoint(), id: late }, meta(0), {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as Error).message).toContain("moved on from");
    expect(await one.getTuple({ configurable: { thread_id: thread, checkpoint_id: late } })).toBeUndefined();
    // The same put sent twice (an answer lost) is its own head, not a conflict.
    const again = uuid6(3);
    const head = (await one.getTuple(base))!.config;
    const cp = { ...emptyCheckpoint(), id: again };
    await one.put(head, cp, meta(1), {});
    await expect(one.put(head, cp, meta(1), {})).resolves.toEqual({
      configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: again },
    });
  });
});

describe("serialisation", () => {
  // A serializer that scrambles the JSON one (a stand-in for encryption):
  // the service must only ever see its bytes.
  class Scrambled implements SerializerProtocol {
    private readonly inner = new JsonPlusSerializer();
    async dumpsTyped(data: unknown): Promise<[string, Uint8Array]> {
      const [type, bytes] = await this.inner.dumpsTyped(data);
      return [`scrambled+${type}`, bytes.map((b) => b ^ 0x5a)];
    }
    async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
      if (!type.startsWith("scrambled+")) throw new Error(`not scrambled: ${type}`);
      const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
      return this.inner.loadsTyped(type.slice("scrambled+".length), bytes.map((b) => b ^ 0x5a));
    }
  }

  it("uses this.serde for checkpoints, values and writes, so a custom serializer works", async () => {
    const secret = new HTTPSaver(url, { serde: new Scrambled() });
    const calls: Calls = new Map();
    const graph = interruptGraph(secret, calls);
    const config: RunnableConfig = { configurable: { thread_id: tid("serde") } };
    await graph.invoke({ log: ["top secret"] }, config);
    expect((await graph.getState(config)).values).toEqual({ log: ["top secret", "before"] });
    const r = await fetch(`${url}/v1/threads/${config.configurable!.thread_id}/checkpoint`, { headers: { Accept: "application/json" } });
    const raw = await r.text();
    expect(raw).toContain("scrambled+json");
    expect(Buffer.from(raw).toString()).not.toContain("top secret");
    // Metadata is structured whatever the serializer: the service filters on it.
    const json = JSON.parse(raw) as { metadata: { source: string; step: number } };
    expect(json.metadata.source).toBe("loop");
    // A saver without the serializer cannot read the values.
    await expect(saver.getTuple(config)).rejects.toThrow(/Unknown serialization type/);
  });

  it("stores metadata as a structured map the service filters on", async () => {
    const thread = tid("meta");
    const when = new Date("2026-01-02T03:04:05.000Z");
    await chain(thread, 3, (i) => ({ user: i === 1 ? "ada" : "bo", nested: { at: when, n: i }, gone: undefined }));
    const found = await all(saver, { configurable: { thread_id: thread } }, { filter: { user: "ada" } });
    expect(found.map((t) => t.metadata?.step)).toEqual([1]);
    expect(found[0]!.metadata).toEqual({ source: "loop", step: 1, parents: {}, user: "ada", nested: { at: when.toISOString(), n: 1 } });
    const bad = { ...emptyCheckpoint(), id: uuid6(7) };
    await expect(saver.put({ configurable: { thread_id: thread } }, bad, meta(0, { n: 10n }), {})).rejects.toThrow(/BigInt/);
  });

  it("pages a long list and honours limit and before", async () => {
    const thread = tid("page");
    const { ids } = await chain(thread, 130);
    const config = { configurable: { thread_id: thread } };
    const every = await all(saver, config);
    expect(every.map((t) => t.config.configurable!.checkpoint_id)).toEqual([...ids].reverse());
    const some = await all(saver, config, { limit: 105, before: { configurable: { checkpoint_id: ids[120] } } });
    expect(some.map((t) => t.config.configurable!.checkpoint_id)).toEqual(ids.slice(15, 120).reverse());
  });
});

describe("the idempotency ledger", () => {
  it("claims, completes and fails keys", async () => {
    const key = tid("key");
    const first = await saver.claim(key, { leaseMs: 60_000 });
    expect(first.state).toBe("claimed");
    expect(first.attempt).toBe(1);
    expect(first.leaseExpiresAt).toBeGreaterThan(Date.now());
    const second = await saver.claim(key);
    expect(second.state).toBe("in_progress");
    await saver.complete(key, first.token!, { receipt: 42 });
    expect(await saver.claim(key)).toMatchObject({ state: "completed", result: { receipt: 42 } });
    await expect(saver.complete(key, first.token!, 1)).rejects.toBeInstanceOf(ConflictError);

    const other = tid("key");
    const c = await saver.claim(other);
    await saver.fail(other, c.token!, "x".repeat(5000), { retryable: false });
    const failed = await saver.claim(other);
    expect(failed.state).toBe("failed");
    expect(failed.error?.message).toHaveLength(4096);
    await expect(saver.claim("")).rejects.toThrow(/non-empty/);
    await expect(saver.claim("k".repeat(300))).rejects.toBeInstanceOf(InvalidRequestError);
  });

  it("runs a call once per key, stores failures, and waits for another caller's lease", async () => {
    const key = tid("once");
    let runs = 0;
    const charge = async (amount: number) => ({ charged: amount, run: ++runs });
    const call = saver.idempotent(key)(charge);
    expect(await call(10)).toEqual({ charged: 10, run: 1 });
    expect(await call(10)).toEqual({ charged: 10, run: 1 });
    expect(runs).toBe(1);

    // A retryable failure lets the next call run; a non-retryable one fails the key.
    class Declined extends Error {}
    const flaky = tid("flaky");
    let tries = 0;
    const fn = async () => {
      tries += 1;
      if (tries === 1) throw new Error("network");
      if (tries === 2) throw new Declined("card declined");
      return "never";
    };
    const wrapped = saver.idempotent(flaky, { nonRetryable: [Declined] })(fn);
    await expect(wrapped()).rejects.toThrow("network");
    await expect(wrapped()).rejects.toThrow("card declined");
    const err = await wrapped().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdempotentCallFailed);
    expect((err as IdempotentCallFailed).failure).toContain("card declined");
    expect(tries).toBe(2);

    // Another caller holds the lease: wait for it, then see its result.
    const held = tid("held");
    const holder = await saver.claim(held, { leaseMs: 60_000 });
    const waiting = saver.idempotent(held, { timeoutMs: 10_000 }).run(() => "second");
    setTimeout(() => void saver.complete(held, holder.token!, "first"), 200);
    expect(await waiting).toBe("first");
    const stuck = tid("stuck");
    await saver.claim(stuck, { leaseMs: 60_000 });
    await expect(saver.idempotent(stuck, { timeoutMs: 100 }).run(() => 1)).rejects.toBeInstanceOf(IdempotencyInProgress);

    // A key function of the call's arguments; the block form hands out the key.
    const perOrder = saver.idempotent((order: string) => `order-${order}-${key}`)(async (order: string) => `done ${order}`);
    expect(await perOrder("a")).toBe("done a");
    const seen = await saver.idempotent(`order-a-${key}`).run(({ key: k }) => `not run ${k}`);
    expect(seen).toBe("done a");
  });

  it("derives a key from the running task that a resume reproduces", async () => {
    const effects: string[] = [];
    const keys: string[] = [];
    let fail = true;
    const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const graph = new StateGraph(State)
      .addNode("pay", async (_state: typeof State.State, config: RunnableConfig) => {
        keys.push(deriveKey("send", 1, config));
        // Two calls of one function in one step get two keys.
        const send = saver.idempotent()(async function send(what: string) {
          effects.push(what);
          return what;
        });
        await send("first");
        await send("second");
        if (fail) {
          fail = false;
          throw new Error("crash after the side effects");
        }
        return { log: ["paid"] };
      })
      .addEdge(START, "pay")
      .addEdge("pay", END)
      .compile({ checkpointer: saver });
    const config: RunnableConfig = { configurable: { thread_id: tid("derived") } };
    await expect(graph.invoke({ log: [] }, config)).rejects.toThrow("crash");
    expect(await graph.invoke(null, config)).toEqual({ log: ["paid"] });
    // The step ran twice; each side effect once.
    expect(effects).toEqual(["first", "second"]);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
    expect(keys[0]).toMatch(/^lg:[0-9a-f]{40}:send#1$/);
    await expect(saver.idempotent().run(() => 1)).rejects.toThrow(/no LangGraph task is running/);
  });

  it("reads the config keys the installed LangGraph.js sets", () => {
    // Not all of LangGraph.js's constants are exported: read its source.
    const constants = readFileSync(join(dirname(createRequire(import.meta.url).resolve("@langchain/langgraph")), "constants.js"), "utf8");
    for (const [name, value] of [
      ["CONFIG_KEY_TASK_ID", CONFIG_KEY_TASK_ID],
      ["CONFIG_KEY_SCRATCHPAD", CONFIG_KEY_SCRATCHPAD],
      ["CONFIG_KEY_CHECKPOINT_MAP", CONFIG_KEY_CHECKPOINT_MAP],
    ]) {
      expect(constants).toContain(`const ${name} = "${value}";`);
    }
  });
});
