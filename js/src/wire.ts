/**
 * The service's requests and answers, without I/O.
 *
 * Each builder returns a `Call` (method, path, body, query) for the transport
 * to send, and each parser turns a decoded answer into LangGraph.js values,
 * throwing `BadResponseError` on a malformed one. Values go through the
 * saver's serde, passed in at each call. The Python client's `_wire.py` is the
 * same module; the two build the same requests.
 */

import { randomUUID } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import { type BaseMessage, mapStoredMessagesToChatMessages, type StoredMessage } from "@langchain/core/messages";
import {
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type DeltaChannelHistory,
  getCheckpointId,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
} from "@langchain/langgraph-checkpoint";

import { BadResponseError, ConflictError, NoRouteError } from "./errors.js";
import type { RawHistory } from "./held.js";
import { type Claim, type ClaimOptions, MAX_MESSAGE_BYTES } from "./ledger.js";
import { isRecord } from "./transport.js";
import { storedMessagesFromWire } from "./tree.js";
import { VERSION } from "./version.js";

export type Wire = Record<string, unknown>;

/** A value as the saver's serde wrote it. */
export interface Typed {
  type: string;
  data: Uint8Array;
}

/** One request to the service: what the transport sends. */
export interface Call {
  method: string;
  path: string;
  body?: Wire;
  params?: Record<string, string>;
}

/** The configurable key a run sets to choose its thread's retention scope. */
export const SCOPE_KEY = "saver_scope";

export type Scope = "session" | "persistent";

export type PruneStrategy = "keep_latest" | "delete";

/** Options of `resumeContext`. */
export interface ResumeContextOptions {
  /** Keep the last N steps; 0 keeps all. */
  limit?: number;
  /** Say per step which nodes ran and what they wrote; the steps come as `steps`. */
  values?: boolean;
  /** With values: cut each rendered value at this many bytes (default 200). */
  valueBytes?: number;
  /** With values: the live path of this subgraph namespace. */
  checkpointNs?: string;
}

// The blob stored for a channel that has a new version but no value; the
// service skips such blobs when resolving values.
const EMPTY: Typed = { type: "empty", data: new Uint8Array() };
// Metadata sources of the puts that continue the head a run read: LangGraph's
// input and loop steps. Forks and state updates branch off an older
// checkpoint on purpose and are never conditioned.
const CONDITIONED_SOURCES = new Set(["input", "loop"]);

const DELTA_HISTORY = "/delta-history";

export function checkScope(scope: unknown): Scope | undefined {
  if (scope === undefined || scope === null || scope === "") return undefined;
  if (scope !== "session" && scope !== "persistent") {
    throw new TypeError(`scope must be "session" or "persistent", not ${JSON.stringify(scope)}`);
  }
  return scope;
}

/** A thread's path; the id percent-escaped, since it may hold '/', '%', spaces, unicode. */
export function threadPath(threadId: unknown, suffix = ""): string {
  return `/v1/threads/${encodeURIComponent(String(threadId))}${suffix}`;
}

export function configOf(threadId: string, ns: string, checkpointId: string): RunnableConfig {
  return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } };
}

export function positiveMs(value: number, what: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${what} must be a positive number of milliseconds`);
  }
  return Math.max(1, Math.ceil(value));
}

export async function typed(serde: SerializerProtocol, value: unknown): Promise<Typed> {
  const [type, data] = await serde.dumpsTyped(value);
  return { type, data: typeof data === "string" ? new TextEncoder().encode(data) : data };
}

export async function untyped(serde: SerializerProtocol, value: unknown): Promise<unknown> {
  if (!isRecord(value) || typeof value.type !== "string") {
    throw new BadResponseError("bad_response", "expected a typed value");
  }
  let data = value.data ?? new Uint8Array();
  if (typeof data === "string") data = Buffer.from(data, "base64"); // a JSON answer carries base64
  if (!(data instanceof Uint8Array)) throw new BadResponseError("bad_response", "typed value without bytes");
  return serde.loadsTyped(value.type, data);
}

/**
 * Metadata as the JSON-like values the service stores and filters on.
 *
 * The JS savers store metadata as JSON (Postgres as JSONB); this is the same
 * conversion: `toJSON` is honoured (a Date becomes its ISO string), undefined
 * and functions are left out of objects. A value JSON cannot hold (a bigint,
 * a cycle) is refused here rather than stored in a shape nobody can filter on.
 */
export function metadataToWire(metadata: unknown): Wire {
  const text = JSON.stringify(metadata ?? {});
  const value: unknown = text === undefined ? {} : JSON.parse(text);
  if (!isRecord(value)) throw new TypeError("checkpoint metadata must be an object");
  return value;
}

function asList(value: unknown, what: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new BadResponseError("bad_response", `${what} is not a list`);
  return value;
}

function configurable(cfg: RunnableConfig | undefined): Record<string, unknown> {
  return (cfg?.configurable ?? {}) as Record<string, unknown>;
}

// -- checkpoints: the LangGraph saver contract ---------------------------------

/** The scope a write carries: the run's `saver_scope`, else the saver's, else "" (the service's default). */
export function scopeOf(conf: Record<string, unknown>, fallback: Scope | undefined): string {
  return checkScope(conf[SCOPE_KEY]) ?? fallback ?? "";
}

/** The put of a checkpoint and the blobs of its new channel versions. */
export async function putCall(
  serde: SerializerProtocol,
  cfg: RunnableConfig,
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
  newVersions: ChannelVersions,
  options: { scope: Scope | undefined; detectConflicts: boolean },
): Promise<Call> {
  const conf = cfg.configurable as Record<string, unknown> | undefined;
  if (conf === undefined) throw new Error('Failed to put checkpoint: the config has no "configurable"');
  if (conf.thread_id === undefined || conf.thread_id === null) {
    throw new Error('Failed to put checkpoint: the config has no "thread_id" in "configurable"');
  }
  const { channel_values: values = {}, ...skeleton } = checkpoint;
  const blobs = await Promise.all(
    Object.entries(newVersions ?? {}).map(async ([channel, version]) => ({
      channel,
      version: String(version),
      value: Object.hasOwn(values, channel) ? await typed(serde, values[channel as keyof typeof values]) : EMPTY,
    })),
  );
  const body: Wire = {
    checkpoint_ns: String(conf.checkpoint_ns ?? ""),
    checkpoint_id: checkpoint.id,
    // In put, the config names the parent: the checkpoint this one follows.
    parent_checkpoint_id: String(conf.checkpoint_id ?? ""),
    checkpoint: await typed(serde, skeleton),
    metadata: metadataToWire(metadata),
    channel_versions: Object.fromEntries(
      Object.entries(checkpoint.channel_versions ?? {}).map(([ch, v]) => [ch, String(v)]),
    ),
    blobs,
    scope: scopeOf(conf, options.scope),
  };
  // The parent is the head the run read ("" for a new thread).
  if (options.detectConflicts && CONDITIONED_SOURCES.has(String(metadata?.source))) {
    body.expected_head = body.parent_checkpoint_id;
  }
  return { method: "POST", path: threadPath(conf.thread_id, "/checkpoints"), body };
}

/** The config of a stored checkpoint, from a put's answer (or a tuple). */
export function storedConfig(wire: unknown): RunnableConfig {
  if (!isRecord(wire) || typeof wire.thread_id !== "string" || typeof wire.checkpoint_id !== "string") {
    throw new BadResponseError("bad_response", "malformed put answer");
  }
  return configOf(wire.thread_id, String(wire.checkpoint_ns ?? ""), wire.checkpoint_id);
}

/** Whether a put is conditioned on the thread's head (`detectConflicts`). */
export function conditioned(put: Call): boolean {
  return put.body !== undefined && Object.hasOwn(put.body, "expected_head");
}

/** The read that tells whether a conditioned put was stored after all. */
export function landedCall(put: Call): Call {
  const body = put.body!;
  return {
    method: "GET",
    path: put.path.replace(/\/checkpoints$/, "/checkpoint"),
    params: { checkpoint_ns: String(body.checkpoint_ns), checkpoint_id: String(body.checkpoint_id) },
  };
}

/**
 * The put's config if the checkpoint read back (undefined: none) is the put's
 * own; else its conflict, thrown.
 *
 * A conditioned put whose first try was stored but whose answer was lost is
 * refused when resent (its own checkpoint is the head by then): a checkpoint
 * under its id with its parent is the put's own.
 */
export function landedConfig(wire: unknown, put: Call, err: ConflictError, threadId: string): RunnableConfig {
  const body = put.body!;
  if (isRecord(wire) && String(wire.parent_checkpoint_id ?? "") === body.parent_checkpoint_id) {
    return storedConfig(wire);
  }
  const parent = String(body.parent_checkpoint_id);
  const where = parent ? `checkpoint ${JSON.stringify(parent)}` : "its start";
  throw new ConflictError(
    err.code,
    `thread ${JSON.stringify(threadId)} (namespace ${JSON.stringify(body.checkpoint_ns)}) moved on from ${where}, ` +
      "where this run was: another writer stored checkpoints since (or the run gave new input to an older " +
      `checkpoint; fork with updateState for that). Checkpoint ${JSON.stringify(body.checkpoint_id)} was not stored; ` +
      `read the thread again and run from its head. (${err.detail})`,
    { status: err.status, requestId: err.requestId },
  );
}

/** The put of a task's pending writes; undefined when there are none. */
export async function writesCall(
  serde: SerializerProtocol,
  cfg: RunnableConfig,
  writes: PendingWrite[],
  taskId: string,
  taskPath: string,
  options: { scope: Scope | undefined },
): Promise<Call | undefined> {
  const conf = configurable(cfg);
  if (conf.thread_id === undefined || conf.thread_id === null) {
    throw new Error('Failed to put writes: the config has no "thread_id" in "configurable"');
  }
  if (!conf.checkpoint_id) throw new Error('Failed to put writes: the config has no "checkpoint_id" in "configurable"');
  const byIdx = new Map<number, Wire>();
  for (const [pos, [channel, value]] of writes.entries()) {
    const idx = WRITES_IDX_MAP[channel] ?? pos;
    // A later write to the same special channel replaces an earlier one, as
    // in MemorySaver; the service refuses duplicate keys in one call.
    byIdx.set(idx, { task_id: taskId, task_path: taskPath ?? "", idx, channel, value: await typed(serde, value) });
  }
  if (byIdx.size === 0) return undefined;
  return {
    method: "POST",
    path: threadPath(conf.thread_id, "/writes"),
    body: {
      checkpoint_ns: String(conf.checkpoint_ns ?? ""),
      checkpoint_id: String(conf.checkpoint_id),
      writes: [...byIdx.values()],
      scope: scopeOf(conf, options.scope),
    },
  };
}

/** The read of the checkpoint config names, or of the latest; undefined without a thread. */
export function getCall(cfg: RunnableConfig): Call | undefined {
  const conf = configurable(cfg);
  if (conf.thread_id === undefined || conf.thread_id === null) return undefined;
  const params: Record<string, string> = { checkpoint_ns: String(conf.checkpoint_ns ?? "") };
  const id = getCheckpointId(cfg);
  if (id) params.checkpoint_id = id;
  return { method: "GET", path: threadPath(conf.thread_id, "/checkpoint"), params };
}

/** A checkpoint tuple from the wire, its values and pending writes decoded. */
export async function toTuple(serde: SerializerProtocol, wire: unknown): Promise<CheckpointTuple> {
  if (!isRecord(wire) || typeof wire.thread_id !== "string" || typeof wire.checkpoint_id !== "string") {
    throw new BadResponseError("bad_response", "malformed checkpoint tuple");
  }
  const threadId = wire.thread_id;
  const ns = String(wire.checkpoint_ns ?? "");
  const skeleton = await untyped(serde, wire.checkpoint);
  if (!isRecord(skeleton)) throw new BadResponseError("bad_response", "checkpoint is not an object");
  const values: Record<string, unknown> = {};
  for (const v of asList(wire.values, "values")) {
    if (!isRecord(v) || typeof v.channel !== "string") throw new BadResponseError("bad_response", "malformed value");
    if (isRecord(v.value) && v.value.type === "empty") continue;
    values[v.channel] = await untyped(serde, v.value);
  }
  const pendingWrites: CheckpointPendingWrite[] = [];
  for (const w of asList(wire.writes, "writes")) {
    if (!isRecord(w) || typeof w.task_id !== "string" || typeof w.channel !== "string") {
      throw new BadResponseError("bad_response", "malformed write");
    }
    pendingWrites.push([w.task_id, w.channel, await untyped(serde, w.value)]);
  }
  const checkpoint = { ...skeleton, channel_values: values } as unknown as Checkpoint;
  const parentId = typeof wire.parent_checkpoint_id === "string" ? wire.parent_checkpoint_id : "";
  const tuple: CheckpointTuple = {
    config: configOf(threadId, ns, wire.checkpoint_id),
    checkpoint,
    metadata: (isRecord(wire.metadata) ? wire.metadata : {}) as CheckpointMetadata,
    pendingWrites,
  };
  if (parentId) tuple.parentConfig = configOf(threadId, ns, parentId);
  return tuple;
}

/** Whether a tuple is of a format (v < 4) that kept pending sends on its parent. */
export function needsPendingSends(tuple: CheckpointTuple): boolean {
  return tuple.checkpoint.v < 4 && tuple.parentConfig !== undefined;
}

/**
 * Move a v < 4 checkpoint's pending sends, kept as writes on its parent, into
 * the `__pregel_tasks` channel, as the JS savers do. `firstVersion` is the
 * version for a checkpoint that has none.
 */
export function withPendingSends(
  tuple: CheckpointTuple,
  parent: CheckpointTuple | undefined,
  firstVersion: number,
): CheckpointTuple {
  const sends = (parent?.pendingWrites ?? []).filter(([, channel]) => channel === TASKS).map(([, , v]) => v);
  const cp = tuple.checkpoint;
  cp.channel_values[TASKS] = sends;
  const versions = Object.values(cp.channel_versions);
  cp.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : firstVersion;
  return tuple;
}

/** A search's fields: every page's body has them, with its limit and cursor. */
export function searchBody(cfg: RunnableConfig | undefined, options: CheckpointListOptions): Wire {
  const conf = configurable(cfg);
  const filter = options.filter && Object.keys(options.filter).length > 0 ? metadataToWire(options.filter) : null;
  const beforeId = options.before ? getCheckpointId(options.before) : "";
  return {
    thread_id: conf.thread_id === undefined || conf.thread_id === null ? null : String(conf.thread_id),
    // An absent checkpoint_ns means every namespace; "" means the root graph.
    checkpoint_ns: conf.checkpoint_ns === undefined || conf.checkpoint_ns === null ? null : String(conf.checkpoint_ns),
    checkpoint_id: (cfg ? getCheckpointId(cfg) : "") || null,
    before: beforeId || null,
    filter,
  };
}

/**
 * A search's pages: the next page's call, and the tuples each answer holds.
 *
 * `next()` is undefined when the search is over: `limit` tuples were taken,
 * the service gave no cursor, or the limit asked for none.
 */
export class Search {
  private remaining: number | null;
  private cursor: string | null = null;
  private done: boolean;
  private readonly fields: Wire;

  constructor(cfg: RunnableConfig | undefined, options: CheckpointListOptions = {}) {
    const { limit } = options;
    this.done = limit !== undefined && limit !== null && limit <= 0;
    this.remaining = limit === undefined || limit === null ? null : Math.floor(limit);
    this.fields = this.done ? {} : searchBody(cfg, options);
  }

  next(): Call | undefined {
    if (this.done) return undefined;
    return {
      method: "POST",
      path: "/v1/checkpoints/search",
      body: { ...this.fields, limit: this.remaining, cursor: this.cursor },
    };
  }

  /** The answer's tuples, still on the wire, up to the limit. */
  page(answer: unknown): unknown[] {
    if (!isRecord(answer) || !Array.isArray(answer.tuples)) {
      throw new BadResponseError("bad_response", "search answered without a tuples list");
    }
    const tuples: unknown[] = answer.tuples;
    const cursor = typeof answer.next_cursor === "string" && answer.next_cursor ? answer.next_cursor : null;
    if (cursor !== null && tuples.length === 0) {
      // Following it would loop forever without making progress.
      throw new BadResponseError("bad_response", "search returned an empty page with a cursor");
    }
    const taken = this.remaining === null ? tuples : tuples.slice(0, this.remaining);
    if (this.remaining !== null) {
      this.remaining -= tuples.length;
      if (this.remaining <= 0) this.done = true;
    }
    this.cursor = cursor;
    if (cursor === null) this.done = true;
    return taken;
  }
}

// -- delta histories ------------------------------------------------------------

/** One page of the histories of channels at checkpointId; with known, down to that ancestor only. */
export function deltaCall(
  threadId: string,
  ns: string,
  checkpointId: string,
  channels: string[],
  known?: string,
): Call {
  const body: Wire = { checkpoint_ns: ns, checkpoint_id: checkpointId, channels, paged: true };
  if (known !== undefined) body.known = known;
  return { method: "POST", path: threadPath(threadId, DELTA_HISTORY), body };
}

/** A delta history held at an ancestor of the target: see held.ts. */
export interface HeldHistories {
  checkpointId: string;
  histories: Record<string, RawHistory>;
}

/**
 * Puts together a delta history the service answers in pages.
 *
 * A history within the service's page is one answer. A longer one comes
 * newest part first: each channel whose history goes on names, as `next`,
 * the ancestor whose own history comes before its writes; the next call asks
 * for it there. The pages put together are the whole history, kept on the
 * wire (`raw`) until `toHistories` decodes it.
 *
 * With `held`, the histories at an ancestor of the target, the service stops
 * there: a channel whose `next` is that ancestor has its held history before
 * the pages' writes.
 */
export class DeltaPages {
  private readonly known: string | undefined;
  private target: string;
  private asking: string[];
  private readonly seen = new Set<string>();
  private readonly seeds = new Map<string, Wire | null>();
  private readonly spliced = new Set<string>();
  // Each channel's pages, newest first: joined once in raw(), since
  // prepending page by page would copy the writes once per page.
  private readonly pages = new Map<string, Wire[][]>();

  constructor(
    private readonly threadId: string,
    private readonly ns: string,
    target: string,
    channels: string[],
    private readonly held?: HeldHistories,
  ) {
    this.known = held?.checkpointId;
    this.target = target;
    this.asking = channels;
  }

  /** Whether no answer was taken yet: the next call is the first. */
  get first(): boolean {
    return this.seen.size === 0;
  }

  /** The next request, or undefined once the history is whole. */
  call(): Call | undefined {
    if (this.asking.length === 0) return undefined;
    return deltaCall(this.threadId, this.ns, this.target, this.asking, this.known);
  }

  /** Take one answer: its writes come before those taken so far. */
  take(wire: unknown): void {
    if (!isRecord(wire) || !isRecord(wire.channels)) {
      throw new BadResponseError("bad_response", "delta-history answered without channels");
    }
    const goingOn: string[] = [];
    let next: string | undefined;
    for (const ch of this.asking) {
      const entry = Object.hasOwn(wire.channels, ch) ? wire.channels[ch] : undefined;
      if (entry === undefined || entry === null) continue;
      if (!isRecord(entry)) throw new BadResponseError("bad_response", `malformed delta history of ${ch}`);
      const writes: Wire[] = [];
      for (const w of asList(entry.writes, "writes")) {
        if (!isRecord(w) || typeof w.task_id !== "string") throw new BadResponseError("bad_response", "malformed write");
        writes.push(w);
      }
      const taken = this.pages.get(ch);
      if (taken === undefined) this.pages.set(ch, [writes]);
      else taken.push(writes);
      this.seeds.set(ch, entry.seed !== undefined && entry.seed !== null ? (entry.seed as Wire) : null);
      if (entry.next !== undefined && entry.next !== null && entry.next !== "") {
        if (this.known !== undefined && entry.next === this.known) {
          this.spliced.add(ch);
          continue;
        }
        if (typeof entry.next !== "string" || (next !== undefined && entry.next !== next)) {
          throw new BadResponseError("bad_response", `delta history page goes on at ${String(entry.next)}`);
        }
        next = entry.next;
        goingOn.push(ch);
      }
    }
    if (next !== undefined) {
      if (this.seen.has(next)) throw new BadResponseError("bad_response", `delta history goes round at ${next}`);
      this.seen.add(next);
      this.target = next;
    }
    this.asking = goingOn;
  }

  /** The whole history of each channel an answer had, on the wire. */
  raw(): Record<string, RawHistory> {
    const out: Record<string, RawHistory> = {};
    for (const [ch, taken] of this.pages) {
      // A later page is older: its writes come first.
      const writes = [...taken].reverse().flat();
      const h = this.spliced.has(ch) ? this.held!.histories[ch]! : undefined;
      out[ch] = h ? { writes: [...h.writes, ...writes], seed: h.seed } : { writes, seed: this.seeds.get(ch) ?? null };
    }
    return out;
  }
}

/**
 * Decode histories, one per channel asked for (empty for one the answer had
 * not): each value afresh, as every saver does, so that a reducer that changes
 * its writes in place changes the state it rebuilds and no other.
 */
export async function toHistories(
  serde: SerializerProtocol,
  raw: Record<string, RawHistory> | undefined,
  channels: string[],
): Promise<Record<string, DeltaChannelHistory>> {
  const out: Record<string, DeltaChannelHistory> = Object.fromEntries(channels.map((ch) => [ch, { writes: [] }]));
  for (const ch of channels) {
    const h = raw !== undefined && Object.hasOwn(raw, ch) ? raw[ch] : undefined;
    if (h === undefined) continue;
    const writes: DeltaChannelHistory["writes"] = [];
    for (const w of h.writes) writes.push([w.task_id as string, ch, await untyped(serde, w.value)]);
    out[ch]!.writes = writes;
    if (h.seed !== null) out[ch]!.seed = await untyped(serde, h.seed);
  }
  return out;
}

/**
 * The error for a service that answered `no_route` to a delta-history call:
 * it is older than this client. The saver never falls back to walking the
 * checkpoints one request each (the base class's way), which would hide the
 * version mismatch and turn one request into one per checkpoint.
 */
export function missingDeltaRoute(err: NoRouteError): NoRouteError {
  return new NoRouteError(
    err.code,
    `the saver service has no delta-history route (POST /v1/threads/{thread_id}${DELTA_HISTORY}), which ` +
      `DeltaChannel histories need: the service is older than this client (saver-client-js ${VERSION}); ` +
      `upgrade the service. (${err.detail})`,
    { status: err.status, requestId: err.requestId },
  );
}

// -- maintenance ----------------------------------------------------------------

export function pingCalls(): [Call, Call] {
  // The second is an empty page: the cheapest call that needs the key.
  return [
    { method: "GET", path: "/readyz" },
    { method: "POST", path: "/v1/checkpoints/search", body: { limit: 0 } },
  ];
}

export function deleteThreadCall(threadId: string): Call {
  return { method: "DELETE", path: threadPath(threadId) };
}

export function pinCall(threadId: string, checkpointId: string, checkpointNs: string): Call {
  return {
    method: "POST",
    path: threadPath(threadId, "/checkpoints/pin"),
    body: { checkpoint_ns: checkpointNs, checkpoint_id: checkpointId },
  };
}

export function deleteForRunsCall(runIds: string[]): Call | undefined {
  if (runIds.length === 0) return undefined;
  return { method: "POST", path: "/v1/runs/delete", body: { run_ids: runIds.map(String) } };
}

export function copyThreadCall(sourceThreadId: string, targetThreadId: string): Call {
  return {
    method: "POST",
    path: threadPath(sourceThreadId, "/copy"),
    body: { target_thread_id: String(targetThreadId) },
  };
}

export function pruneCall(threadIds: string[], strategy: PruneStrategy): Call | undefined {
  if (strategy !== "keep_latest" && strategy !== "delete") {
    throw new TypeError(`unknown prune strategy ${JSON.stringify(strategy)}; use "keep_latest" or "delete"`);
  }
  if (threadIds.length === 0) return undefined;
  return { method: "POST", path: "/v1/threads/prune", body: { thread_ids: threadIds.map(String), strategy } };
}

// -- tree queries -----------------------------------------------------------------

/** The tree queries whose answers are nodes, which the service sends as columns. */
const NODE_QUERIES = new Set(["", "path", "children", "leaves"]);

/** A tree query ("" for the whole tree), at a checkpoint or at the head. */
export function treeCall(threadId: string, query: string, checkpointId?: string, checkpointNs = ""): Call {
  let params: Record<string, string> = {};
  if (checkpointId) params = { checkpoint_ns: checkpointNs, checkpoint_id: checkpointId };
  else if (checkpointNs) throw new TypeError("checkpointNs needs a checkpointId");
  // One array per field (tree.ts, nodesFromWire): half the bytes of a map per node.
  if (NODE_QUERIES.has(query)) params.layout = "columns";
  return { method: "GET", path: threadPath(threadId, query ? `/tree/${query}` : "/tree"), params };
}

export function contextCall(threadId: string, options: ResumeContextOptions = {}): Call {
  const params: Record<string, string> = {};
  if (options.limit !== undefined) {
    if (!Number.isInteger(options.limit) || options.limit < 0) {
      throw new RangeError("limit must be a non-negative integer (0: no limit)");
    }
    params.limit = String(options.limit);
  }
  if (options.values) {
    params.values = "true";
    if (options.valueBytes !== undefined) {
      if (!Number.isInteger(options.valueBytes) || options.valueBytes < 0) {
        throw new RangeError("valueBytes must be a non-negative integer");
      }
      params.value_bytes = String(options.valueBytes);
    }
    if (options.checkpointNs) params.checkpoint_ns = options.checkpointNs;
  } else if (options.valueBytes !== undefined || options.checkpointNs) {
    throw new TypeError("valueBytes and checkpointNs need values: true");
  }
  return { method: "GET", path: threadPath(threadId, "/tree/context"), params };
}

export function messagesCall(threadId: string, checkpointNs?: string): Call {
  const params: Record<string, string> = checkpointNs ? { checkpoint_ns: checkpointNs } : {};
  return { method: "GET", path: threadPath(threadId, "/tree/messages"), params };
}

/** The live path's messages as LangChain message objects. */
export function toMessages(wire: unknown): BaseMessage[] {
  return mapStoredMessagesToChatMessages(storedMessagesFromWire(wire) as unknown as StoredMessage[]);
}

// -- the idempotency ledger -------------------------------------------------------

export function claimCall(key: string, options: ClaimOptions = {}): Call {
  if (typeof key !== "string" || !key) throw new TypeError("an idempotency key must be a non-empty string");
  // One claim id for every try of this call: when an answer is lost and the
  // transport sends the claim again, the service recognises the resend and
  // grants the same lease, rather than answer in_progress (held by this very
  // call) until the lease runs out.
  const body: Wire = { key, claim_id: randomUUID().replaceAll("-", "") };
  if (options.leaseMs !== undefined) body.lease_ms = positiveMs(options.leaseMs, "leaseMs");
  if (options.ttlMs !== undefined) body.ttl_ms = positiveMs(options.ttlMs, "ttlMs");
  return { method: "POST", path: "/v1/idempotency/claim", body };
}

export async function toClaim(serde: SerializerProtocol, wire: unknown): Promise<Claim> {
  if (!isRecord(wire) || typeof wire.key !== "string") throw new BadResponseError("bad_response", "malformed claim answer");
  const state = wire.state;
  if (state !== "claimed" && state !== "in_progress" && state !== "completed" && state !== "failed") {
    throw new BadResponseError("bad_response", `claim answered with unknown state ${JSON.stringify(state)}`);
  }
  const claim: Claim = { key: wire.key, state, attempt: Number(wire.attempt ?? 0) };
  if (typeof wire.token === "string" && wire.token) claim.token = wire.token;
  const lease = Number(wire.lease_expires_at_ms ?? 0);
  if (lease) claim.leaseExpiresAt = lease;
  if (state === "completed" && wire.result !== undefined && wire.result !== null) {
    claim.result = await untyped(serde, wire.result);
  }
  if (isRecord(wire.error)) {
    claim.error = { message: String(wire.error.message ?? ""), retryable: Boolean(wire.error.retryable) };
  }
  return claim;
}

export async function completeCall(serde: SerializerProtocol, key: string, token: string, result: unknown): Promise<Call> {
  return { method: "POST", path: "/v1/idempotency/complete", body: { key, token, result: await typed(serde, result) } };
}

export function failCall(key: string, token: string, message: string, retryable: boolean): Call {
  let text = String(message);
  const data = new TextEncoder().encode(text);
  if (data.length > MAX_MESSAGE_BYTES) {
    // The service refuses longer messages.
    text = new TextDecoder().decode(data.subarray(0, MAX_MESSAGE_BYTES)).replace(/\uFFFD$/, "");
  }
  return { method: "POST", path: "/v1/idempotency/fail", body: { key, token, error: { message: text, retryable } } };
}
