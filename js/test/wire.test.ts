/**
 * The wire module on its own, without a service: the requests it builds and
 * how it reads answers, good and malformed. What the saver's tests against
 * the service cover end to end (a tuple's round trip, paging a long search)
 * is here only where an answer the service never gives must be refused.
 */

import { emptyCheckpoint, JsonPlusSerializer, TASKS, type CheckpointTuple } from "@langchain/langgraph-checkpoint";

import { BadResponseError, ConflictError, NoRouteError } from "../src/errors.js";
import { MAX_MESSAGE_BYTES } from "../src/ledger.js";
import { vectorBytes } from "../src/store.js";
import { nodesFromWire, treeFromWire } from "../src/tree.js";
import { VERSION } from "../src/version.js";
import * as wire from "../src/wire.js";

const serde = new JsonPlusSerializer();
const typedJson = async (v: unknown) => wire.typed(serde, v);
// A typed value as an answer holds it: a map.
const onWire = async (v: unknown) => ({ ...(await typedJson(v)) }) as Record<string, unknown>;

describe("threadPath", () => {
  it.each([
    ["t", "", "/v1/threads/t"],
    ["a/b", "/checkpoint", "/v1/threads/a%2Fb/checkpoint"],
    ["50% off", "/writes", "/v1/threads/50%25%20off/writes"],
    ["é?#", "", "/v1/threads/%C3%A9%3F%23"],
  ])("escapes %j", (thread, suffix, want) => {
    expect(wire.threadPath(thread, suffix)).toBe(want);
  });
});

describe("checkScope and scopeOf", () => {
  it("takes the run's scope over the saver's, and neither is empty", () => {
    expect(wire.scopeOf({ saver_scope: "session" }, "persistent")).toBe("session");
    expect(wire.scopeOf({}, "persistent")).toBe("persistent");
    expect(wire.scopeOf({ saver_scope: "" }, undefined)).toBe("");
  });
  it("refuses an unknown scope", () => {
    expect(() => wire.checkScope("forever")).toThrow(/"session" or "persistent"/);
    expect(() => wire.scopeOf({ saver_scope: 3 }, undefined)).toThrow(TypeError);
  });
});

describe("metadataToWire", () => {
  it("converts as JSON does, and refuses what JSON cannot hold", () => {
    const when = new Date(0);
    expect(wire.metadataToWire({ a: 1, at: when, gone: undefined, f: () => 1 })).toEqual({ a: 1, at: when.toISOString() });
    expect(wire.metadataToWire(undefined)).toEqual({});
    expect(() => wire.metadataToWire({ n: 1n })).toThrow(TypeError);
    expect(() => wire.metadataToWire([1])).toThrow(/must be an object/);
  });
});

describe("putCall", () => {
  const cp = { ...emptyCheckpoint(), id: "c2", channel_values: { a: [1] }, channel_versions: { a: 2, b: 2 } };
  const cfg = { configurable: { thread_id: "t/1", checkpoint_ns: "ns", checkpoint_id: "c1" } };

  it("sends the skeleton, string versions, and an empty blob for a version without a value", async () => {
    const call = await wire.putCall(serde, cfg, cp, { source: "loop", step: 1, parents: {} }, { a: 2, b: 2 }, {
      scope: "session",
      detectConflicts: false,
    });
    expect(call.method).toBe("POST");
    expect(call.path).toBe("/v1/threads/t%2F1/checkpoints");
    const body = call.body!;
    expect(body.checkpoint_ns).toBe("ns");
    expect(body.checkpoint_id).toBe("c2");
    expect(body.parent_checkpoint_id).toBe("c1");
    expect(body.channel_versions).toEqual({ a: "2", b: "2" });
    expect(body.scope).toBe("session");
    expect(body.blobs).toEqual([
      { channel: "a", version: "2", value: await typedJson([1]) },
      { channel: "b", version: "2", value: { type: "empty", data: new Uint8Array() } },
    ]);
    const skeleton = (await wire.untyped(serde, body.checkpoint)) as Record<string, unknown>;
    expect(skeleton.id).toBe("c2");
    expect(skeleton).not.toHaveProperty("channel_values");
    expect(wire.conditioned(call)).toBe(false);
  });

  it.each([
    ["input", true],
    ["loop", true],
    ["update", false],
    ["fork", false],
  ])("conditions a %s put on the head only with detectConflicts", async (source, want) => {
    const meta = { source, step: 1, parents: {} } as never;
    const on = await wire.putCall(serde, cfg, cp, meta, {}, { scope: undefined, detectConflicts: true });
    expect(wire.conditioned(on)).toBe(want);
    if (want) expect(on.body!.expected_head).toBe("c1");
    const off = await wire.putCall(serde, cfg, cp, meta, {}, { scope: undefined, detectConflicts: false });
    expect(wire.conditioned(off)).toBe(false);
  });

  it("refuses a config without configurable or thread_id", async () => {
    const meta = { source: "loop", step: 1, parents: {} } as never;
    const opts = { scope: undefined, detectConflicts: false };
    await expect(wire.putCall(serde, {}, cp, meta, {}, opts)).rejects.toThrow(/no "configurable"/);
    await expect(wire.putCall(serde, { configurable: {} }, cp, meta, {}, opts)).rejects.toThrow(/no "thread_id"/);
  });
});

describe("a conditioned put refused", () => {
  const cfg = { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c1" } };
  const refused = new ConflictError("conflict", "head moved", { status: 409, requestId: "rid" });
  let put: wire.Call;
  beforeAll(async () => {
    const cp = { ...emptyCheckpoint(), id: "c2" };
    put = await wire.putCall(serde, cfg, cp, { source: "loop", step: 1, parents: {} }, {}, {
      scope: undefined,
      detectConflicts: true,
    });
  });

  it("reads its own checkpoint back", () => {
    expect(wire.landedCall(put)).toEqual({
      method: "GET",
      path: "/v1/threads/t/checkpoint",
      params: { checkpoint_ns: "", checkpoint_id: "c2" },
    });
  });

  it("is the put's own when the checkpoint read back has the put's parent", () => {
    const landed = { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c2", parent_checkpoint_id: "c1" };
    expect(wire.landedConfig(landed, put, refused, "t")).toEqual(wire.configOf("t", "", "c2"));
  });

  it("is a conflict naming the thread and the parent otherwise", () => {
    const other = { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c2", parent_checkpoint_id: "c0" };
    for (const landed of [other, undefined]) {
      let err: unknown;
      try {
        wire.landedConfig(landed, put, refused, "t");
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConflictError);
      const c = err as ConflictError;
      expect(c.detail).toMatch(/^thread "t" \(namespace ""\) moved on from checkpoint "c1"/);
      expect(c.detail).toContain('Checkpoint "c2" was not stored');
      expect(c.detail).toContain("(head moved)");
      expect([c.status, c.requestId]).toEqual([409, "rid"]);
    }
  });
});

describe("writesCall", () => {
  const cfg = { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c1", saver_scope: "persistent" } };

  it("numbers writes by position, special channels by their index, the later one replacing", async () => {
    const call = await wire.writesCall(
      serde,
      cfg,
      [
        ["a", 1],
        ["__error__", "first"],
        ["b", 2],
        ["__error__", "second"],
      ],
      "task",
      "path",
      { scope: undefined },
    );
    const writes = call!.body!.writes as Record<string, unknown>[];
    expect(writes.map((w) => [w.idx, w.channel])).toEqual([
      [0, "a"],
      [-1, "__error__"],
      [2, "b"],
    ]);
    expect(await wire.untyped(serde, writes[1]!.value)).toBe("second");
    expect(call!.body!.scope).toBe("persistent");
    expect(call!.path).toBe("/v1/threads/t/writes");
  });

  it("sends nothing for no writes, and refuses a config without a checkpoint", async () => {
    expect(await wire.writesCall(serde, cfg, [], "task", "", { scope: undefined })).toBeUndefined();
    await expect(
      wire.writesCall(serde, { configurable: { thread_id: "t" } }, [["a", 1]], "task", "", { scope: undefined }),
    ).rejects.toThrow(/no "checkpoint_id"/);
  });
});

describe("getCall", () => {
  it("names the checkpoint when the config does, and is nothing without a thread", () => {
    expect(wire.getCall({ configurable: { thread_id: "t", checkpoint_ns: "n", checkpoint_id: "c" } })).toEqual({
      method: "GET",
      path: "/v1/threads/t/checkpoint",
      params: { checkpoint_ns: "n", checkpoint_id: "c" },
    });
    expect(wire.getCall({ configurable: { thread_id: "t" } })!.params).toEqual({ checkpoint_ns: "" });
    expect(wire.getCall({ configurable: {} })).toBeUndefined();
  });
});

describe("toTuple", () => {
  const answer = async () => ({
    thread_id: "t",
    checkpoint_ns: "",
    checkpoint_id: "c2",
    parent_checkpoint_id: "c1",
    checkpoint: await typedJson({ v: 4, id: "c2", ts: "x", channel_versions: { a: 1, b: 1 }, versions_seen: {} }),
    metadata: { source: "loop", step: 1 },
    values: [
      { channel: "a", version: "1", value: await typedJson("x") },
      { channel: "b", version: "1", value: { type: "empty", data: new Uint8Array() } },
    ],
    writes: [{ task_id: "w", task_path: "", idx: 0, channel: "a", value: await typedJson("y") }],
  });

  it("decodes values and writes, leaves empty blobs out, and links the parent", async () => {
    const t = await wire.toTuple(serde, await answer());
    expect(t.checkpoint.channel_values).toEqual({ a: "x" });
    expect(t.pendingWrites).toEqual([["w", "a", "y"]]);
    expect(t.parentConfig).toEqual(wire.configOf("t", "", "c1"));
    expect(t.config).toEqual(wire.configOf("t", "", "c2"));
    expect(wire.needsPendingSends(t)).toBe(false);
  });

  it.each([
    ["no checkpoint id", (a: Record<string, unknown>) => ({ ...a, checkpoint_id: undefined })],
    ["values not a list", (a: Record<string, unknown>) => ({ ...a, values: {} })],
    ["a write without a task", (a: Record<string, unknown>) => ({ ...a, writes: [{ channel: "a" }] })],
    ["an untyped checkpoint", (a: Record<string, unknown>) => ({ ...a, checkpoint: "x" })],
  ])("refuses %s", async (_what, spoil) => {
    await expect(wire.toTuple(serde, spoil(await answer()))).rejects.toBeInstanceOf(BadResponseError);
  });
});

describe("withPendingSends", () => {
  it("moves the parent's sends into the tasks channel, at the newest version", () => {
    const tuple = {
      config: wire.configOf("t", "", "c2"),
      parentConfig: wire.configOf("t", "", "c1"),
      checkpoint: { ...emptyCheckpoint(), v: 3, channel_values: {}, channel_versions: { a: 3, b: 5 } },
      metadata: {},
    } as unknown as CheckpointTuple;
    expect(wire.needsPendingSends(tuple)).toBe(true);
    const parent = { pendingWrites: [["p", TASKS, "send-1"], ["p", "a", 1], ["q", TASKS, "send-2"]] } as unknown as CheckpointTuple;
    wire.withPendingSends(tuple, parent, 1);
    expect(tuple.checkpoint.channel_values[TASKS]).toEqual(["send-1", "send-2"]);
    expect(tuple.checkpoint.channel_versions[TASKS]).toBe(5);
  });
});

describe("Search", () => {
  const tuples = (n: number) => Array.from({ length: n }, (_, i) => ({ i }));

  it("carries the search's fields and asks for what is left of the limit, page by page", () => {
    const s = new wire.Search({ configurable: { thread_id: 7 } }, { limit: 5, filter: { source: "loop" } });
    expect(s.next()!.body).toEqual({
      thread_id: "7",
      checkpoint_ns: null,
      checkpoint_id: null,
      before: null,
      filter: { source: "loop" },
      limit: 5,
      cursor: null,
    });
    expect(s.page({ tuples: tuples(3), next_cursor: "k" })).toHaveLength(3);
    expect(s.next()!.body).toMatchObject({ limit: 2, cursor: "k" });
    // More than asked for: cut to the limit, and the search is over.
    expect(s.page({ tuples: tuples(4), next_cursor: "k2" })).toHaveLength(2);
    expect(s.next()).toBeUndefined();
    // Exactly the limit, with a cursor: over too.
    const exact = new wire.Search(undefined, { limit: 2 });
    expect(exact.page({ tuples: tuples(2), next_cursor: "k" })).toHaveLength(2);
    expect(exact.next()).toBeUndefined();
  });

  it("ends without a cursor, and asks nothing for a limit of 0", () => {
    const s = new wire.Search(undefined, {});
    expect(s.next()!.body).toMatchObject({ thread_id: null, limit: null });
    expect(s.page({ tuples: tuples(2) })).toHaveLength(2);
    expect(s.next()).toBeUndefined();
    expect(new wire.Search(undefined, { limit: 0 }).next()).toBeUndefined();
  });

  it("names the root namespace and before", () => {
    const s = new wire.Search({ configurable: { thread_id: "t", checkpoint_ns: "" } }, {
      before: { configurable: { checkpoint_id: "c9" } },
    });
    expect(s.next()!.body).toMatchObject({ checkpoint_ns: "", before: "c9" });
  });

  it("refuses an answer without tuples, or an empty page with a cursor", () => {
    expect(() => new wire.Search(undefined).page({})).toThrow(BadResponseError);
    expect(() => new wire.Search(undefined).page({ tuples: [], next_cursor: "k" })).toThrow(/empty page with a cursor/);
  });
});

describe("DeltaPages", () => {
  const w = (task: string) => ({ task_id: task, channel: "m", value: { type: "json", data: new Uint8Array() } });

  it("asks each page where the last one goes on, and puts the pages oldest first", () => {
    const pages = new wire.DeltaPages("t", "", "c9", ["m", "n"]);
    expect(pages.first).toBe(true);
    expect(pages.call()).toEqual({
      method: "POST",
      path: "/v1/threads/t/delta-history",
      body: { checkpoint_ns: "", checkpoint_id: "c9", channels: ["m", "n"], paged: true },
    });
    pages.take({ channels: { m: { writes: [w("9"), w("8")], next: "c7" }, n: { writes: [w("n")], seed: { type: "s" } } } });
    expect(pages.first).toBe(false);
    expect(pages.call()!.body).toEqual({ checkpoint_ns: "", checkpoint_id: "c7", channels: ["m"], paged: true });
    pages.take({ channels: { m: { writes: [w("7")], seed: { type: "seed" } } } });
    expect(pages.call()).toBeUndefined();
    const raw = pages.raw();
    expect(raw.m!.writes.map((x) => x.task_id)).toEqual(["7", "9", "8"]);
    expect(raw.m!.seed).toEqual({ type: "seed" });
    expect(raw.n).toEqual({ writes: [w("n")], seed: { type: "s" } });
  });

  it("puts a held history before the writes of a channel that goes on at known", () => {
    const held = { checkpointId: "c5", histories: { m: { writes: [w("old")], seed: { type: "held-seed" } } } };
    const pages = new wire.DeltaPages("t", "", "c9", ["m"], held);
    expect(pages.call()!.body).toMatchObject({ known: "c5" });
    pages.take({ channels: { m: { writes: [w("new")], next: "c5" } } });
    expect(pages.call()).toBeUndefined();
    expect(pages.raw().m).toEqual({ writes: [w("old"), w("new")], seed: { type: "held-seed" } });
  });

  it.each([
    ["no channels", {}],
    ["an entry that is not a map", { channels: { m: 3 } }],
    ["a write without a task", { channels: { m: { writes: [{}] } } }],
    ["writes that are not a list", { channels: { m: { writes: {} } } }],
  ])("refuses an answer with %s", (_what, answer) => {
    expect(() => new wire.DeltaPages("t", "", "c9", ["m"]).take(answer)).toThrow(BadResponseError);
  });

  it("refuses channels going on at different ancestors, or a page that goes round", () => {
    const split = new wire.DeltaPages("t", "", "c9", ["m", "n"]);
    expect(() => split.take({ channels: { m: { next: "c7" }, n: { next: "c6" } } })).toThrow(/goes on at c6/);
    const round = new wire.DeltaPages("t", "", "c9", ["m"]);
    round.take({ channels: { m: { next: "c7" } } });
    round.take({ channels: { m: { next: "c8" } } });
    expect(() => round.take({ channels: { m: { next: "c7" } } })).toThrow(/goes round at c7/);
  });
});

describe("toHistories", () => {
  it("decodes each channel asked for, empty where there was nothing", async () => {
    const raw = {
      m: { writes: [{ task_id: "a", channel: "m", value: await typedJson([1]) }], seed: await onWire([0]) },
      extra: { writes: [], seed: null },
    };
    const out = await wire.toHistories(serde, raw, ["m", "n"]);
    expect(out).toEqual({ m: { writes: [["a", "m", [1]]], seed: [0] }, n: { writes: [] } });
    expect(await wire.toHistories(serde, undefined, ["m"])).toEqual({ m: { writes: [] } });
  });

  it("decodes each value afresh, so that a reducer changing one changes no other", async () => {
    const raw = { m: { writes: [{ task_id: "a", channel: "m", value: await typedJson({ id: 1 }) }], seed: null } };
    const first = await wire.toHistories(serde, raw, ["m"]);
    (first.m!.writes[0]![2] as { id: number }).id = 2;
    const second = await wire.toHistories(serde, raw, ["m"]);
    expect(second.m!.writes[0]![2]).toEqual({ id: 1 });
  });
});

describe("missingDeltaRoute", () => {
  it("names the route and says the service is older, keeping what the service said", () => {
    const err = wire.missingDeltaRoute(new NoRouteError("no_route", "Method not allowed on this route.", { status: 405, requestId: "r" }));
    expect(err).toBeInstanceOf(NoRouteError);
    expect(err.detail).toBe(
      "the saver service has no delta-history route (POST /v1/threads/{thread_id}/delta-history), which " +
        `DeltaChannel histories need: the service is older than this client (saver-client-js ${VERSION}); ` +
        "upgrade the service. (Method not allowed on this route.)",
    );
    expect([err.code, err.status, err.requestId]).toEqual(["no_route", 405, "r"]);
  });
});

describe("maintenance and tree calls", () => {
  it("builds each call, and nothing for an empty list", () => {
    expect(wire.pingCalls().map((c) => c.path)).toEqual(["/readyz", "/v1/checkpoints/search"]);
    expect(wire.deleteThreadCall("a b")).toEqual({ method: "DELETE", path: "/v1/threads/a%20b" });
    expect(wire.copyThreadCall("s", "t").body).toEqual({ target_thread_id: "t" });
    expect(wire.pinCall("t", "c", "n").body).toEqual({ checkpoint_ns: "n", checkpoint_id: "c" });
    expect(wire.deleteForRunsCall([])).toBeUndefined();
    expect(wire.deleteForRunsCall(["r"])!.body).toEqual({ run_ids: ["r"] });
    expect(wire.pruneCall([], "delete")).toBeUndefined();
    expect(wire.pruneCall(["t"], "keep_latest")!.body).toEqual({ thread_ids: ["t"], strategy: "keep_latest" });
    expect(() => wire.pruneCall(["t"], "all" as never)).toThrow(/unknown prune strategy/);
  });

  it("asks a tree query at a checkpoint or at the head", () => {
    expect(wire.treeCall("t", "")).toEqual({ method: "GET", path: "/v1/threads/t/tree", params: { layout: "columns" } });
    expect(wire.treeCall("t", "path", "c", "n").params).toEqual({ checkpoint_ns: "n", checkpoint_id: "c", layout: "columns" });
    expect(wire.treeCall("t", "abandoned").params).toEqual({});
    expect(() => wire.treeCall("t", "path", undefined, "n")).toThrow(/needs a checkpointId/);
    expect(wire.messagesCall("t", "n")).toEqual({ method: "GET", path: "/v1/threads/t/tree/messages", params: { checkpoint_ns: "n" } });
  });

  it("checks the resume context's options", () => {
    expect(wire.contextCall("t", { limit: 3, values: true, valueBytes: 10, checkpointNs: "n" }).params).toEqual({
      limit: "3",
      values: "true",
      value_bytes: "10",
      checkpoint_ns: "n",
    });
    expect(() => wire.contextCall("t", { limit: -1 })).toThrow(RangeError);
    expect(() => wire.contextCall("t", { values: true, valueBytes: 1.5 })).toThrow(RangeError);
    expect(() => wire.contextCall("t", { checkpointNs: "n" })).toThrow(/need values: true/);
  });
});

describe("vectorBytes", () => {
  it("sends a vector as little-endian float32s, and anything else as it is", () => {
    const b = vectorBytes([0.5, -0.25, 3]) as Uint8Array;
    expect(b).toBeInstanceOf(Uint8Array);
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    expect([0, 4, 8].map((o) => view.getFloat32(o, true))).toEqual([0.5, -0.25, 3]);
    expect(Array.from(b.subarray(0, 4))).toEqual([0, 0, 0, 0x3f]);
    expect(new DataView((vectorBytes([1e39]) as Uint8Array).buffer).getFloat32(0, true)).toBe(Infinity);
    const odd = [1, "2"] as unknown as number[];
    expect(vectorBytes(odd)).toBe(odd);
  });
});

describe("tree answers", () => {
  const row = (over: Record<string, unknown> = {}) => ({
    id: "c2",
    ns: "",
    parent: "c1",
    parent_ns: "",
    source: "loop",
    step: 2,
    status: "ok",
    has_error: false,
    has_interrupt: true,
    on_live_path: true,
    orphan: false,
    ...over,
  });
  const columns = (...rows: Record<string, unknown>[]) => ({
    columns: Object.fromEntries(Object.keys(row()).map((k) => [k, rows.map((r) => r[k])])),
  });
  const want = {
    checkpointId: "c2",
    checkpointNs: "",
    parentId: "c1",
    parentNs: "",
    source: "loop",
    step: 2,
    status: "ok",
    hasError: false,
    hasInterrupt: true,
    onLivePath: true,
    orphan: false,
  };

  it("reads nodes as columns as it reads them as rows", () => {
    const second = row({ id: "c3", parent: "", step: 3, status: "error", has_error: true, orphan: true });
    const asRows = nodesFromWire({ nodes: [row(), second] });
    expect(asRows[0]).toEqual(want);
    expect(asRows[1]).toEqual({ ...want, checkpointId: "c3", parentId: undefined, step: 3, status: "error", hasError: true, orphan: true });
    expect(nodesFromWire(columns(row(), second))).toEqual(asRows);
    expect(nodesFromWire(columns())).toEqual([]);
    const tree = treeFromWire({ thread_id: "t", head: row(), ...columns(row()) });
    expect(tree.nodes).toEqual([want]);
    expect(tree.head).toEqual(want);
  });

  it("refuses columns of the wrong shape, naming the column", () => {
    const short = columns(row(), row());
    (short.columns.status as unknown[]).pop();
    const noOrphan = columns(row());
    delete noOrphan.columns.orphan;
    for (const [bad, name] of [
      [short, /status/],
      [noOrphan, /orphan/],
      [{ columns: { ...columns(row()).columns, id: "c2" } }, /'id'/],
      [{ columns: [row()] }, /not a map/],
      [columns(row({ id: 7 })), /malformed tree node/],
    ] as const) {
      expect(() => nodesFromWire(bad)).toThrow(BadResponseError);
      expect(() => nodesFromWire(bad)).toThrow(name);
    }
  });
});

describe("the idempotency ledger", () => {
  it("claims with a fresh claim id and the lease and ttl in whole milliseconds", () => {
    const a = wire.claimCall("k", { leaseMs: 1.2, ttlMs: 5000 });
    const b = wire.claimCall("k");
    expect(a.body).toMatchObject({ key: "k", lease_ms: 2, ttl_ms: 5000 });
    expect(a.body!.claim_id).toMatch(/^[0-9a-f]{32}$/);
    expect(b.body!.claim_id).not.toBe(a.body!.claim_id);
    expect(b.body).not.toHaveProperty("lease_ms");
    expect(() => wire.claimCall("")).toThrow(TypeError);
    expect(() => wire.claimCall("k", { leaseMs: 0 })).toThrow(RangeError);
  });

  it("reads a claim's answer, decoding a completed one's result", async () => {
    expect(
      await wire.toClaim(serde, { key: "k", state: "claimed", attempt: 2, token: "tok", lease_expires_at_ms: 99, error: { message: "x", retryable: true } }),
    ).toEqual({ key: "k", state: "claimed", attempt: 2, token: "tok", leaseExpiresAt: 99, error: { message: "x", retryable: true } });
    expect(await wire.toClaim(serde, { key: "k", state: "completed", attempt: 1, result: await typedJson({ ok: 1 }) })).toEqual({
      key: "k",
      state: "completed",
      attempt: 1,
      result: { ok: 1 },
    });
    await expect(wire.toClaim(serde, { key: "k", state: "maybe" })).rejects.toThrow(/unknown state "maybe"/);
    await expect(wire.toClaim(serde, { state: "claimed" })).rejects.toBeInstanceOf(BadResponseError);
  });

  it("completes with the result typed, and cuts a failure's message to what the service takes", async () => {
    const done = await wire.completeCall(serde, "k", "tok", [1]);
    expect(await wire.untyped(serde, (done.body as { result: unknown }).result)).toEqual([1]);
    const long = "é".repeat(MAX_MESSAGE_BYTES); // two bytes each
    const failed = wire.failCall("k", "tok", long, false);
    const error = failed.body!.error as { message: string; retryable: boolean };
    expect(new TextEncoder().encode(error.message).length).toBe(MAX_MESSAGE_BYTES);
    expect(error.message).toBe("é".repeat(MAX_MESSAGE_BYTES / 2));
    expect(error.retryable).toBe(false);
    // Cut inside a character: the partial character is dropped.
    const odd = wire.failCall("k", "tok", "a" + long, true).body!.error as { message: string };
    expect(odd.message).toBe("a" + "é".repeat(MAX_MESSAGE_BYTES / 2 - 1));
  });
});
