/**
 * HTTPStore against LangGraph.js's InMemoryStore, op by op, across languages,
 * and in a real graph.
 *
 * The same seeded random op sequences run on HTTPStore (the service) and on
 * InMemoryStore, and every result is compared. Where the service follows
 * PostgresStore (docs/api.md), the reference is adjusted, and each
 * adjustment says why:
 *
 * - A search without a query is ordered newest update first, ties by
 *   namespace then key; InMemoryStore keeps insertion order. The reference's
 *   full result is re-sorted by the batch each item was last put in.
 * - A search with a query returns only items with vectors; InMemoryStore
 *   fills a short page with unscored items.
 * - A put replaces the item's vectors; InMemoryStore keeps the vectors of
 *   fields the new value no longer embeds, even across a delete, so the
 *   reference forgets a key's vectors before each put.
 * - list_namespaces lists only namespaces that hold items; InMemoryStore also
 *   lists those whose items were deleted.
 *
 * Filters compare as Python's InMemoryStore compares them (Python's ==,
 * nested objects and arrays by content), and LangGraph.js's compares with
 * ===: the random filters stay where the two agree, and "filters differ from
 * InMemoryStore's" pins each case where they do not. created_at is kept
 * across updates by the service and by this InMemoryStore alike.
 */

import { createHash, randomBytes } from "node:crypto";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { Embeddings } from "@langchain/core/embeddings";
import {
  Annotation,
  getStore,
  InMemoryStore,
  type LangGraphRunnableConfig,
  type Operation,
  type PutOperation,
  START,
  StateGraph,
} from "@langchain/langgraph";
import { inject } from "vitest";

import { HTTPSaver, HTTPStore, InvalidRequestError, type StorePutOperation } from "../src/index.js";
import { REPO, waitUntil } from "./service.js";

const url = inject("saverUrl");
const run = promisify(execFile);

const DIMS = 8;
const WORDS = ["apple", "pizza", "sushi", "river", "mountain", "code", "music", "tea", "rain", "book"];

/** python/tests/test_store.py's fake_embed: each word adds a direction from its hash. */
export function fakeEmbed(text: string): number[] {
  const v = new Array<number>(DIMS).fill(0);
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const h = createHash("sha256").update(word, "utf8").digest();
    for (let i = 0; i < DIMS; i++) v[i]! += (h[i]! - 127.5) / 127.5;
  }
  return v;
}

class FakeEmbeddings extends Embeddings {
  calls = 0;
  constructor() {
    super({});
  }
  async embedDocuments(texts: string[]): Promise<number[][]> {
    this.calls += 1;
    return texts.map(fakeEmbed);
  }
  async embedQuery(text: string): Promise<number[]> {
    this.calls += 1;
    return fakeEmbed(text);
  }
}

const index = () => ({ dims: DIMS, embeddings: new FakeEmbeddings(), fields: ["text"] });
const hex = () => randomBytes(4).toString("hex");

// mulberry32: a small seeded generator, so a failing sequence can be replayed.
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Item = { namespace: string[]; key: string; value: Record<string, unknown>; score?: number };
type RefInternals = { data: Map<string, Map<string, unknown>>; vectors: Map<string, Map<string, unknown>> };

const cmp = (a: string[], b: string[]) => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return a.length - b.length;
};

/** TTLs (minutes) of the random puts: one no run outlives, and one that has run out by the next batch. */
const LONG_TTL = 60;
/** A store op with HTTPStore's TTL fields. */
type RandomOp = Operation & { refreshTtl?: boolean; ttl?: number };
const SHORT_TTL = 0.0002;

/** Random ops in a private root label, and what the reference needs to follow the service's order. */
class Model {
  readonly r: () => number;
  readonly root: string;
  readonly putBatch = new Map<string, number>();
  batchNo = 0;
  /** Keys whose last put had SHORT_TTL: expired by the next batch (waitOut), gone from the reference then. */
  readonly ephemeral = new Map<string, [string[], string]>();
  expired = 0;
  lastBatch = 0;

  constructor(seed: number) {
    this.r = rng(seed);
    this.root = `r${seed}-${hex()}`;
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.r() * xs.length)]!;
  }

  int(lo: number, hi: number): number {
    return lo + Math.floor(this.r() * (hi - lo + 1));
  }

  ns(): string[] {
    return [this.root, ...this.pick([["a"], ["a", "b"], ["b"], ["a", "c", "d"]])];
  }

  words(n: number): string {
    return Array.from({ length: n }, () => this.pick(WORDS)).join(" ");
  }

  value(): Record<string, unknown> {
    const v: Record<string, unknown> = {
      text: this.words(this.int(1, 3)),
      tag: this.pick(["x", "y"]),
      meta: { k: this.pick(["p", "q"]), list: [1, this.pick([2, 3])] },
    };
    // n absent sometimes: a numeric operator then matches nothing in both stores.
    const n = this.pick([0, 1, 2, 2.5, 3, true, undefined] as const);
    if (n !== undefined) v.n = n;
    return v;
  }

  op(): RandomOp {
    const kind = this.pick(["put", "put", "put", "put", "put", "delete", "get", "get", "search", "search", "search", "search", "list", "list"]);
    const key = `k${this.int(0, 7)}`;
    if (kind === "put") {
      // No TTL, one that outlives the test, or one that has run out by the next batch.
      const ttl = this.pick([undefined, undefined, LONG_TTL, SHORT_TTL]);
      return { namespace: this.ns(), key, value: this.value(), index: this.pick([undefined, undefined, false, ["text"], ["tag"]]), ...(ttl ? { ttl } : {}) };
    }
    if (kind === "delete") return { namespace: this.ns(), key, value: null };
    if (kind === "get") return { namespace: this.ns(), key, refreshTtl: this.pick([true, false]) };
    if (kind === "search") {
      // Only filters that === and Python's == decide alike (see the module's doc).
      const filter = this.pick([
        undefined,
        { tag: "x" },
        { n: { $gte: 2 } },
        { n: { $gt: 0, $lt: 3 } },
        { n: { $lt: 1 } },
        { n: 2.5 },
        { tag: { $ne: "y" } },
        { n: { $ne: 2 } },
        { tag: "x", n: { $lte: 2 } },
      ]);
      const prefix = this.pick([[this.root], [this.root, "a"], [this.root, "a", "b"], [this.root, "z"]]);
      const query = this.pick([undefined, this.words(2)]);
      return { namespacePrefix: prefix, filter, limit: this.int(1, 6), offset: this.int(0, 3), query, refreshTtl: this.pick([true, false]) };
    }
    const matchConditions = this.pick([
      [{ matchType: "prefix" as const, path: [this.root] }],
      [{ matchType: "prefix" as const, path: [this.root, "*", "b"] }, { matchType: "suffix" as const, path: ["b"] }],
      [{ matchType: "prefix" as const, path: [this.root] }, { matchType: "suffix" as const, path: ["*", "d"] }],
      [{ matchType: "prefix" as const, path: [this.root, "a"] }],
    ]);
    return { matchConditions, maxDepth: this.pick([undefined, 1, 2, 3]), limit: this.int(1, 5), offset: this.int(0, 2) };
  }

  batch(): RandomOp[] {
    this.batchNo += 1;
    return Array.from({ length: this.int(1, 4) }, () => this.op());
  }

  /**
   * Lets SHORT_TTL run out since the last batch was answered: a clock to pass, not an event to poll for.
   * Node's timers take whole milliseconds and may fire early (asked for 11.9 ms, 299 waits of 300 were
   * shorter, the shortest 10.1 ms), which let a batch reach the service before an item put SHORT_TTL
   * earlier had expired: so the clock is read again after each timer, until it has passed.
   */
  async waitOut(): Promise<void> {
    if (!this.ephemeral.size) return;
    const until = this.lastBatch + SHORT_TTL * 60_000;
    for (let left = until - performance.now(); left > 0; left = until - performance.now()) {
      await new Promise((resolve) => setTimeout(resolve, Math.ceil(left)));
    }
  }

  /**
   * The reference's results: the reads in one batch (InMemoryStore, like
   * the service, reads before it writes), each search whole, then paged as
   * the service pages; then the puts, each key's vectors forgotten first.
   */
  async applyToReference(ref: InMemoryStore, ops: Operation[]): Promise<unknown[]> {
    const internals = ref as unknown as RefInternals;
    if (this.ephemeral.size) {
      this.expired += this.ephemeral.size;
      for (const [k, [namespace, key]] of this.ephemeral) {
        internals.vectors.get(namespace.join(":"))?.delete(key);
        this.putBatch.delete(k);
      }
      await ref.batch([...this.ephemeral.values()].map(([namespace, key]) => ({ namespace, key, value: null })));
      this.ephemeral.clear();
    }
    for (const [ns, items] of [...internals.data]) if (items.size === 0) internals.data.delete(ns);
    const reads = ops
      .filter((op) => !("value" in op))
      .map((op) => ("namespacePrefix" in op ? { ...op, limit: 10_000, offset: 0 } : op))
      .map(({ refreshTtl: _, ...op }: RandomOp) => op as Operation);
    const got = (await ref.batch(reads)) as unknown[];
    let j = 0;
    const out = ops.map((op) => {
      if ("value" in op) return null;
      const r = got[j++];
      return "namespacePrefix" in op ? this.page(op, r as Item[]) : r;
    });
    const puts = ops.filter((op): op is StorePutOperation => "value" in op);
    for (const op of puts) internals.vectors.get(op.namespace.join(":"))?.delete(op.key);
    await ref.batch(puts.map(({ ttl: _, ...op }) => op));
    for (const op of puts) {
      const k = JSON.stringify([op.namespace, op.key]);
      if (op.value === null) this.putBatch.delete(k);
      else this.putBatch.set(k, this.batchNo);
      if (op.value !== null && op.ttl === SHORT_TTL) this.ephemeral.set(k, [op.namespace, op.key]);
      else this.ephemeral.delete(k);
    }
    return out;
  }

  page(op: { query?: string; offset?: number; limit?: number }, items: Item[]): Item[] {
    const batchOf = (it: Item) => this.putBatch.get(JSON.stringify([it.namespace, it.key]))!;
    const tie = (a: Item, b: Item) => batchOf(b) - batchOf(a) || cmp(a.namespace, b.namespace) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
    let sorted: Item[];
    if (op.query) {
      const round = (x: number) => Math.round(x * 1e6) / 1e6;
      sorted = items.filter((it) => it.score !== undefined).sort((a, b) => round(b.score!) - round(a.score!) || tie(a, b));
    } else sorted = [...items].sort(tie);
    const offset = op.offset ?? 0;
    return sorted.slice(offset, offset + (op.limit ?? 10));
  }
}

function compare(ops: Operation[], got: unknown[], want: unknown[]) {
  expect(got.length).toBe(ops.length);
  ops.forEach((op, i) => {
    const where = JSON.stringify(op);
    const g = got[i];
    const w = want[i];
    if ("value" in op) expect(g, where).toBeNull();
    else if ("namespacePrefix" in op) {
      const gi = g as Item[];
      const wi = w as Item[];
      expect(gi.map((x) => [x.namespace, x.key, x.value]), where).toEqual(wi.map((x) => [x.namespace, x.key, x.value]));
      gi.forEach((x, n) => {
        if (op.query) expect(x.score, where).toBeCloseTo(wi[n]!.score!, 5);
        else expect(x.score, where).toBeUndefined();
      });
    } else if ("key" in op) {
      const gi = g as (Item & { createdAt: Date; updatedAt: Date }) | null;
      const wi = w as Item | null;
      expect(gi === null, where).toBe(wi === null);
      if (gi && wi) {
        expect([gi.namespace, gi.key, gi.value], where).toEqual([wi.namespace, wi.key, wi.value]);
        expect(gi.createdAt.getTime(), where).toBeLessThanOrEqual(gi.updatedAt.getTime());
      }
    } else expect(g, where).toEqual(w);
  });
}

it("is served on every store, DynamoDB included", async () => {
  await expect(new HTTPStore(url).get([`fresh-${Date.now()}`], "k")).resolves.toBeNull();
});

describe("HTTPStore", () => {
  it.each([1, 2, 3, 4])("matches InMemoryStore on random ops (seed %i)", async (seed) => {
    const store = new HTTPStore(url, { index: index() });
    const model = new Model(seed);
    const ref = new InMemoryStore({ index: index() });
    const seen = { search: 0, scored: 0, list: 0, got: 0 };
    for (let b = 0; b < 60; b++) {
      const ops = model.batch();
      await model.waitOut();
      const got = (await store.batch(ops)) as unknown[];
      model.lastBatch = performance.now();
      const want = await model.applyToReference(ref, ops);
      compare(ops, got, want);
      ops.forEach((op, i) => {
        if ("namespacePrefix" in op && (got[i] as Item[]).length) seen[op.query ? "scored" : "search"] += 1;
        if ("matchConditions" in op && (got[i] as string[][]).length) seen.list += 1;
        if ("key" in op && !("value" in op) && got[i]) seen.got += 1;
      });
    }
    // The sequence exercised what it compares: hits of every kind, and expiry.
    expect(Object.values(seen).every((n) => n > 0), JSON.stringify(seen)).toBe(true);
    expect(model.expired, "no item of the sequence expired").toBeGreaterThan(0);
  });

  it("keeps created_at across updates, scores 1 for the same text, lists and deletes", async () => {
    const store = new HTTPStore(url, { index: index() });
    const ns = ["users", hex(), "memories"];
    await store.put(ns, "m1", { text: "likes pizza", n: 1 });
    const first = await store.get(ns, "m1");
    expect(first?.value).toEqual({ text: "likes pizza", n: 1 });
    expect(first?.createdAt).toBeInstanceOf(Date);
    await store.put(ns, "m1", { text: "likes sushi", n: 2 });
    const second = await store.get(ns, "m1");
    expect(second?.createdAt.getTime()).toBe(first?.createdAt.getTime());
    expect(second!.updatedAt.getTime()).toBeGreaterThanOrEqual(first!.updatedAt.getTime());
    const hits = await store.search(ns.slice(0, 2), { query: "likes sushi" });
    expect(hits.map((h) => h.key)).toEqual(["m1"]);
    expect(hits[0]!.score).toBeCloseTo(1, 5);
    expect(await store.listNamespaces({ prefix: ns.slice(0, 2) })).toEqual([ns]);
    await store.delete(ns, "m1");
    expect(await store.get(ns, "m1")).toBeNull();
    expect(await store.listNamespaces({ prefix: ns.slice(0, 2) })).toEqual([]);
  });

  it("embeds each distinct text of a batch once, the fields a put names, nothing for index false", async () => {
    const embeddings = new FakeEmbeddings();
    const store = new HTTPStore(url, { index: { dims: DIMS, embeddings, fields: ["text", "tags[*]"] } });
    const ns = ["emb", hex()];
    await store.batch([
      { namespace: ns, key: "a", value: { text: "river rain", tags: ["tea", "book"] } },
      { namespace: ns, key: "b", value: { text: "river rain", title: "code" }, index: ["title"] },
      { namespace: ns, key: "c", value: { text: "music" }, index: false },
    ]);
    expect(embeddings.calls).toBe(1);
    // a is found by each of its texts (max pooling), b only by its title, c never.
    const top = async (query: string) => (await store.search(ns, { query, limit: 1 }))[0];
    expect(await top("book")).toMatchObject({ key: "a" });
    expect((await top("book"))!.score).toBeCloseTo(1, 5);
    expect(await top("code")).toMatchObject({ key: "b" });
    expect((await store.search(ns, { query: "music" })).map((h) => h.key).sort()).toEqual(["a", "b"]);
    // Without a query every item is listed: one batch, one time, so by key.
    expect((await store.search(ns)).map((h) => [h.key, h.score])).toEqual([
      ["a", undefined],
      ["b", undefined],
      ["c", undefined],
    ]);
  });

  it("filters differ from InMemoryStore's where JS's === is not Python's ==", async () => {
    const store = new HTTPStore(url);
    const ref = new InMemoryStore();
    const ns = ["filters", hex()];
    const values: Record<string, Record<string, unknown>> = {
      bool: { n: true, meta: { k: "p", extra: 1 }, list: [1, 2] },
      nul: { n: null },
      one: { n: 1.0, gone: null },
      str: { n: "" },
      arr: { n: [2] },
    };
    for (const [k, v] of Object.entries(values)) {
      await store.put(ns, k, v);
      await ref.put(ns, k, v);
    }
    const keys = async (s: HTTPStore | InMemoryStore, filter: Record<string, unknown>) =>
      (await s.search(ns, { filter })).map((h) => h.key).sort();
    // [filter, the service (Python's InMemoryStore), LangGraph.js's InMemoryStore]
    const cases: [Record<string, unknown>, string[], string[]][] = [
      [{ n: 1 }, ["bool", "one"], ["one"]], // true == 1
      [{ n: { $eq: 1 } }, ["bool", "one"], ["one"]],
      [{ n: [2] }, ["arr"], []], // arrays element by element
      [{ meta: { k: "p" } }, ["bool"], []], // an object holding the filter's entries
      [{ list: [1, 2] }, ["bool"], []],
      [{ gone: null }, ["arr", "bool", "nul", "one", "str"], ["one"]], // absent is null
      // Number(null), Number("") and Number([2]) are numbers; float() takes none of them.
      [{ n: { $lt: 3 } }, ["bool", "one"], ["arr", "bool", "nul", "one", "str"]],
    ];
    for (const [filter, service, js] of cases) {
      expect(await keys(store, filter), JSON.stringify(filter)).toEqual(service);
      expect(await keys(ref, filter), JSON.stringify(filter)).toEqual(js);
    }
    // $in and $nin are LangGraph.js's own operators; the service refuses them.
    await expect(store.search(ns, { filter: { n: { $in: [1] } } })).rejects.toThrow(/ops\[0\]: filter\.n/);
    expect(await keys(ref, { n: { $in: [1] } })).toEqual(["one"]);
  });

  it("refuses bad input before anything is stored", async () => {
    const store = new HTTPStore(url);
    const ns = ["bad", hex()];
    await expect(
      store.batch([
        { namespace: ns, key: "kept", value: { a: 1 } },
        { namespacePrefix: ns, filter: { n: { $gt: "x" } } },
      ]),
    ).rejects.toThrow(InvalidRequestError);
    expect(await store.get(ns, "kept")).toBeNull();
    await expect(store.put(ns, "nan", { a: Number.NaN })).rejects.toThrow(/NaN/);
    await expect(store.put(ns, "k", { a: 1 }, undefined, { ttl: 0 })).rejects.toThrow(RangeError);
    expect(() => new HTTPStore(url, { index: { dims: 0, embeddings: new FakeEmbeddings() } })).toThrow(RangeError);
  });

  it("expires items after their TTL unless reads refresh it", async () => {
    // 0.03 minutes: 1.8 s.
    const store = new HTTPStore(url, { ttl: { defaultTtl: 0.03, refreshOnRead: false } });
    const ns = ["ttl", hex()];
    await store.put(ns, "refreshed", { a: 1 });
    await store.put(ns, "left", { a: 2 });
    await store.put(ns, "forever", { a: 3 }, undefined, { ttl: null });
    const start = Date.now();
    await waitUntil(
      "the unrefreshed item to expire",
      async () => {
        expect(await store.get(ns, "refreshed", { refreshTtl: true })).not.toBeNull();
        return (await store.get(ns, "left")) === null;
      },
      20_000,
    );
    expect(Date.now() - start).toBeGreaterThanOrEqual(1_000);
    // Past its own TTL by now, and kept alive by the refreshing reads.
    await waitUntil("2.5 s", () => Date.now() - start > 2_500, 10_000);
    expect(await store.get(ns, "refreshed", { refreshTtl: true })).not.toBeNull();
    expect(await store.get(ns, "forever")).not.toBeNull();
    expect((await store.search(ns, { refreshTtl: false })).map((i) => i.key)).toEqual(["forever", "refreshed"]);
  });

  // Python's HTTPStore on the same service, with the same fake embedding.
  const PYTHON_SIDE = `
import hashlib, json, sys
from saver_client import HTTPStore

def fake_embed(texts):
    out = []
    for text in texts:
        v = [0.0] * 8
        for word in text.split():
            h = hashlib.sha256(word.encode()).digest()
            for i in range(8):
                v[i] += (h[i] - 127.5) / 127.5
        out.append(v)
    return out

url, root = sys.argv[1:3]
out = {}
with HTTPStore(url, index={"dims": 8, "embed": fake_embed, "fields": ["text"]}) as store:
    js = store.get((root, "js"), "m1")
    out["js_value"] = js.value
    out["js_times"] = [js.created_at.isoformat(), js.updated_at.isoformat()]
    out["js_hits"] = [[h.key, h.score] for h in store.search((root, "js"), query="green tea")]
    store.put((root, "py"), "p1", {"text": "drinks green tea", "n": 2.5, "big": 2**53, "s": "é ☕", "nested": {"a": [1, None, True]}})
    store.put((root, "py"), "p2", {"text": "climbs mountain"}, index=False)
    out["py_hits"] = [[h.key, h.score] for h in store.search((root,), query="green tea")]
print(json.dumps(out))
`;

  it("shares items with Python's HTTPStore, both ways", async () => {
    const python = process.env.SAVER_PYTHON || join(REPO, ".venv", "bin", "python");
    const store = new HTTPStore(url, { index: index() });
    const root = `x-${hex()}`;
    const jsValue = { text: "likes green tea", n: 1, f: 0.1, s: "日本語 ✓", nested: { list: [1, "two", null, false] } };
    await store.put([root, "js"], "m1", jsValue);
    const { stdout } = await run(python, ["-c", PYTHON_SIDE, url, root], { timeout: 60_000 });
    const py = JSON.parse(stdout) as { js_value: unknown; js_times: string[]; js_hits: [string, number][]; py_hits: [string, number][] };

    // Python reads the JS item as written, and finds it by meaning.
    expect(py.js_value).toEqual(jsValue);
    const mine = await store.get([root, "js"], "m1");
    expect(py.js_times.map((t) => new Date(t).getTime())).toEqual([mine!.createdAt.getTime(), mine!.updatedAt.getTime()]);
    const jsHits = await store.search([root, "js"], { query: "green tea" });
    expect(py.js_hits.map(([k]) => k)).toEqual(jsHits.map((h) => h.key));
    expect(py.js_hits[0]![1]).toBeCloseTo(jsHits[0]!.score!, 5);

    // JS reads the Python items, and its query ranks them as Python's did.
    expect((await store.get([root, "py"], "p1"))?.value).toEqual({
      text: "drinks green tea",
      n: 2.5,
      big: 2 ** 53,
      s: "é ☕",
      nested: { a: [1, null, true] },
    });
    expect((await store.get([root, "py"], "p2"))?.value).toEqual({ text: "climbs mountain" });
    const hits = await store.search([root], { query: "green tea" });
    expect(hits.map((h) => h.key)).toEqual(py.py_hits.map(([k]) => k));
    expect(hits.map((h) => h.key).sort()).toEqual(["m1", "p1"]); // p2 has no vector
    hits.forEach((h, i) => expect(h.score).toBeCloseTo(py.py_hits[i]![1], 5));
    expect(await store.listNamespaces({ prefix: [root] })).toEqual([
      [root, "js"],
      [root, "py"],
    ]);
  });

  it("serves a graph whose nodes use the store", async () => {
    const State = Annotation.Root({
      user: Annotation<string>(),
      text: Annotation<string>(),
      found: Annotation<string[]>(),
    });
    const remember = async (state: typeof State.State, config: LangGraphRunnableConfig) => {
      await config.store!.put(["users", state.user, "memories"], `m${state.text.length}`, { text: state.text });
      return {};
    };
    const recall = async (state: typeof State.State) => {
      const hits = await getStore()!.search(["users", state.user, "memories"], { query: state.text, limit: 3 });
      return { found: hits.map((h) => h.value.text as string) };
    };
    const graph = new StateGraph(State)
      .addNode("remember", remember)
      .addNode("recall", recall)
      .addEdge(START, "remember")
      .addEdge("remember", "recall")
      .compile({ checkpointer: new HTTPSaver(url), store: new HTTPStore(url, { index: index() }) });
    const user = hex();
    let out: typeof State.State | undefined;
    for (const [i, text] of ["likes pizza", "drinks green tea daily"].entries()) {
      out = await graph.invoke({ user, text, found: [] }, { configurable: { thread_id: `t-${user}-${i}` } });
    }
    // The second thread found what the first remembered: the store spans threads.
    expect(new Set(out!.found)).toEqual(new Set(["likes pizza", "drinks green tea daily"]));
    expect(out!.found[0]).toBe("drinks green tea daily");
    // And the memories are the service's: a store made afresh reads them.
    expect(await new HTTPStore(url).listNamespaces({ prefix: ["users", user] })).toEqual([["users", user, "memories"]]);
  });
});
