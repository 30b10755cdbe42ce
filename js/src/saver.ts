/**
 * `HTTPSaver`: a LangGraph.js checkpoint saver that stores checkpoints in the saver service.
 */

import { randomUUID } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import { type BaseMessage, mapStoredMessagesToChatMessages, type StoredMessage } from "@langchain/core/messages";
import {
  BaseCheckpointSaver,
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

import { BadResponseError, ConflictError, InvalidRequestError, NoRouteError, NotFoundError } from "./errors.js";
import { Held, type RawHistory } from "./held.js";
import {
  type Claim,
  type ClaimOptions,
  type Idempotent,
  type IdempotentOptions,
  type KeySpec,
  type Ledger,
  makeIdempotent,
  MAX_MESSAGE_BYTES,
} from "./ledger.js";
import { type Logger, retryPolicy, type RetryPolicy, Transport, isRecord } from "./transport.js";
import {
  type Branch,
  branchesFromWire,
  contextFromWire,
  nodesFromWire,
  type ResumeContext,
  storedMessagesFromWire,
  type ThreadTree,
  type TreeNode,
  treeFromWire,
} from "./tree.js";
import { VERSION } from "./version.js";

export const URL_ENV = "SAVER_URL";
export const API_KEY_ENV = "SAVER_API_KEY";
/** The configurable key a run sets to choose its thread's retention scope. */
export const SCOPE_KEY = "saver_scope";

export type Scope = "session" | "persistent";

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
export type PruneStrategy = "keep_latest" | "delete";

export interface HTTPSaverOptions {
  /** Base URL of the service, e.g. `http://127.0.0.1:7878`. Default: `SAVER_URL`. */
  url?: string;
  /** Sent as `Authorization: Bearer <apiKey>`. Default: `SAVER_API_KEY`. */
  apiKey?: string;
  /** Serializer for checkpoints, channel values and writes (default LangGraph's JsonPlusSerializer). */
  serde?: SerializerProtocol;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
  /** Per-request timeout in milliseconds. Default 30000. */
  timeoutMs?: number;
  /** How connection failures and 503 answers are retried. */
  retry?: Partial<RetryPolicy>;
  /** Retention of the threads this saver writes: "session" (expires after the
   * service's session TTL) or "persistent"; unset takes the service's default.
   * A run can choose per thread with `configurable.saver_scope`. */
  scope?: Scope;
  /** Fail a run whose thread another writer moved under it (see README). */
  detectConflicts?: boolean;
  /** Where retries and failed ledger records are reported (`warn`; `debug` gets every request). Default: console.warn. */
  logger?: Logger;
}

type Wire = Record<string, unknown>;
interface Typed {
  type: string;
  data: Uint8Array;
}

// The blob stored for a channel that has a new version but no value; the
// service skips such blobs when resolving values.
const EMPTY: Typed = { type: "empty", data: new Uint8Array() };
// Metadata sources of the puts that continue the head a run read: LangGraph's
// input and loop steps. Forks and state updates branch off an older
// checkpoint on purpose and are never conditioned.
const CONDITIONED_SOURCES = new Set(["input", "loop"]);

function checkScope(scope: unknown): Scope | undefined {
  if (scope === undefined || scope === null || scope === "") return undefined;
  if (scope !== "session" && scope !== "persistent") {
    throw new TypeError(`scope must be "session" or "persistent", not ${JSON.stringify(scope)}`);
  }
  return scope;
}

/** Percent-escape a path segment: thread ids may hold '/', '%', spaces, unicode. */
const seg = (value: unknown) => encodeURIComponent(String(value));

function config(threadId: string, ns: string, checkpointId: string): RunnableConfig {
  return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } };
}

function storedConfig(wire: unknown): RunnableConfig {
  if (!isRecord(wire) || typeof wire.thread_id !== "string" || typeof wire.checkpoint_id !== "string") {
    throw new BadResponseError("bad_response", "malformed put answer");
  }
  return config(wire.thread_id, String(wire.checkpoint_ns ?? ""), wire.checkpoint_id);
}

function positiveMs(value: number, what: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${what} must be a positive number of milliseconds`);
  }
  return Math.max(1, Math.ceil(value));
}

/** What every client of the service is configured with (HTTPSaver, HTTPStore). */
export interface ClientOptions {
  url?: string;
  apiKey?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  logger?: Logger;
}

/**
 * The transport of a client of the service: the URL and key from the
 * options or the environment, checked, with the client's headers.
 */
export function clientTransport(
  owner: string,
  opts: ClientOptions,
): { url: string; transport: Transport; logger: Logger } {
  const logger = opts.logger ?? { warn: (message: string) => console.warn(message) };
  const base = opts.url || process.env[URL_ENV];
  if (!base) throw new Error(`${owner} needs the service URL: pass url or set ${URL_ENV}`);
  let parsed: URL;
  try {
    parsed = new URL(base);
  } catch {
    throw new TypeError(`not an http(s) URL: ${JSON.stringify(base)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new TypeError(`not an http(s) URL: ${JSON.stringify(base)}`);
  }
  const url = base.replace(/\/+$/, "");
  const headers: Record<string, string> = { "User-Agent": `saver-client-js/${VERSION}` };
  const apiKey = opts.apiKey ?? process.env[API_KEY_ENV];
  if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
  Object.assign(headers, opts.headers ?? {});
  const timeoutMs = opts.timeoutMs ?? 30_000;
  positiveMs(timeoutMs, "timeoutMs");
  const transport = new Transport(url, { headers, timeoutMs, retry: retryPolicy(opts.retry), logger });
  return { url, transport, logger };
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

/**
 * A LangGraph.js checkpoint saver backed by the saver HTTP service.
 *
 * A drop-in replacement for `MemorySaver`: `graph.compile({ checkpointer: new HTTPSaver(url) })`.
 * Values are serialised on this side with `this.serde`, so an injected
 * serializer keeps working and the service only ever sees opaque bytes;
 * metadata travels as a structured map, which the service filters on.
 */
export class HTTPSaver extends BaseCheckpointSaver implements Ledger {
  readonly url: string;
  readonly scope: Scope | undefined;
  readonly detectConflicts: boolean;
  readonly logger: Logger;
  private readonly transport: Transport;
  // Set once the service answered that it has no delta-history route (an
  // older service): the base class's walk is used from then on.
  private deltaRoute = true;
  // The last delta history per thread, for the next (see held.ts).
  private readonly held = new Held();

  constructor(urlOrOptions?: string | HTTPSaverOptions, options: HTTPSaverOptions = {}) {
    const opts: HTTPSaverOptions =
      typeof urlOrOptions === "string" ? { ...options, url: urlOrOptions } : { ...(urlOrOptions ?? {}) };
    super(opts.serde);
    this.scope = checkScope(opts.scope);
    this.detectConflicts = Boolean(opts.detectConflicts);
    ({ url: this.url, transport: this.transport, logger: this.logger } = clientTransport("HTTPSaver", opts));
  }

  toString(): string {
    return `HTTPSaver(${this.url})`;
  }

  // -- versions ------------------------------------------------------------

  /**
   * The next channel version: the previous one's integer part plus one, as
   * in the JS savers, plus a random fraction.
   *
   * The fraction keeps two forks of one parent that both reach version N+1
   * (time travel, `updateState` on an old checkpoint) from sharing a blob
   * key, since the service stores each (channel, version) once. Versions stay
   * numbers and increase, which is all LangGraph asks of them. Computed
   * locally: it runs many times per step and must never touch the network.
   */
  getNextVersion(current: number | undefined): number {
    let n: number;
    if (current === undefined || current === null) n = 0;
    else if (typeof current === "number") n = Math.floor(current);
    else n = Number.parseInt(String(current).split(".")[0]!, 10) || 0;
    return n + 1 + Math.random();
  }

  // -- wire conversions ---------------------------------------------------------

  private async typed(value: unknown): Promise<Typed> {
    const [type, data] = await this.serde.dumpsTyped(value);
    return { type, data: typeof data === "string" ? new TextEncoder().encode(data) : data };
  }

  private async untyped(typed: unknown): Promise<unknown> {
    if (!isRecord(typed) || typeof typed.type !== "string") {
      throw new BadResponseError("bad_response", "expected a typed value");
    }
    let data = typed.data ?? new Uint8Array();
    if (typeof data === "string") data = Buffer.from(data, "base64"); // a JSON answer carries base64
    if (!(data instanceof Uint8Array)) throw new BadResponseError("bad_response", "typed value without bytes");
    return this.serde.loadsTyped(typed.type, data);
  }

  private scopeOf(conf: Record<string, unknown>): string {
    return checkScope(conf[SCOPE_KEY]) ?? this.scope ?? "";
  }

  private async toTuple(wire: unknown): Promise<CheckpointTuple> {
    if (!isRecord(wire) || typeof wire.thread_id !== "string" || typeof wire.checkpoint_id !== "string") {
      throw new BadResponseError("bad_response", "malformed checkpoint tuple");
    }
    const threadId = wire.thread_id;
    const ns = String(wire.checkpoint_ns ?? "");
    const skeleton = await this.untyped(wire.checkpoint);
    if (!isRecord(skeleton)) throw new BadResponseError("bad_response", "checkpoint is not an object");
    const values: Record<string, unknown> = {};
    for (const v of asList(wire.values, "values")) {
      if (!isRecord(v) || typeof v.channel !== "string") throw new BadResponseError("bad_response", "malformed value");
      if (isRecord(v.value) && v.value.type === "empty") continue;
      values[v.channel] = await this.untyped(v.value);
    }
    const pendingWrites: CheckpointPendingWrite[] = [];
    for (const w of asList(wire.writes, "writes")) {
      if (!isRecord(w) || typeof w.task_id !== "string" || typeof w.channel !== "string") {
        throw new BadResponseError("bad_response", "malformed write");
      }
      pendingWrites.push([w.task_id, w.channel, await this.untyped(w.value)]);
    }
    const checkpoint = { ...skeleton, channel_values: values } as unknown as Checkpoint;
    const parentId = typeof wire.parent_checkpoint_id === "string" ? wire.parent_checkpoint_id : "";
    const tuple: CheckpointTuple = {
      config: config(threadId, ns, wire.checkpoint_id),
      checkpoint,
      metadata: (isRecord(wire.metadata) ? wire.metadata : {}) as CheckpointMetadata,
      pendingWrites,
    };
    if (parentId) tuple.parentConfig = config(threadId, ns, parentId);
    if (checkpoint.v < 4 && parentId) await this.migratePendingSends(tuple, parentId);
    return tuple;
  }

  /**
   * Checkpoints of format v < 4 kept pending sends as writes on their parent;
   * as the JS savers do, they are moved into the `__pregel_tasks` channel.
   */
  private async migratePendingSends(tuple: CheckpointTuple, parentId: string): Promise<void> {
    const conf = tuple.config.configurable!;
    const parent = await this.getTuple(config(conf.thread_id, conf.checkpoint_ns, parentId));
    const sends = (parent?.pendingWrites ?? []).filter(([, channel]) => channel === TASKS).map(([, , v]) => v);
    const cp = tuple.checkpoint;
    cp.channel_values[TASKS] = sends;
    const versions = Object.values(cp.channel_versions);
    cp.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }

  private searchBody(cfg: RunnableConfig | undefined, options: CheckpointListOptions): Wire {
    const conf = (cfg?.configurable ?? {}) as Record<string, unknown>;
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

  // -- BaseCheckpointSaver ---------------------------------------------------------

  /** The checkpoint named by config, or the latest of (thread, ns); undefined if absent. */
  async getTuple(cfg: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const conf = (cfg.configurable ?? {}) as Record<string, unknown>;
    if (conf.thread_id === undefined || conf.thread_id === null) return undefined;
    const params: Record<string, string> = { checkpoint_ns: String(conf.checkpoint_ns ?? "") };
    const id = getCheckpointId(cfg);
    if (id) params.checkpoint_id = id;
    let wire: unknown;
    try {
      wire = await this.transport.request("GET", `/v1/threads/${seg(conf.thread_id)}/checkpoint`, { params });
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
    return this.toTuple(wire);
  }

  /** Checkpoints matching the arguments, newest first, fetched page by page. */
  async *list(cfg: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { limit } = options;
    if (limit !== undefined && limit !== null && limit <= 0) return;
    const search = this.searchBody(cfg, options);
    let remaining: number | null = limit === undefined || limit === null ? null : Math.floor(limit);
    let cursor: string | null = null;
    for (;;) {
      const page = await this.transport.request("POST", "/v1/checkpoints/search", {
        body: { ...search, limit: remaining, cursor },
      });
      if (!isRecord(page) || !Array.isArray(page.tuples)) {
        throw new BadResponseError("bad_response", "search answered without a tuples list");
      }
      const tuples: unknown[] = page.tuples;
      cursor = typeof page.next_cursor === "string" && page.next_cursor ? page.next_cursor : null;
      if (cursor !== null && tuples.length === 0) {
        // Following it would loop forever without making progress.
        throw new BadResponseError("bad_response", "search returned an empty page with a cursor");
      }
      for (const wire of remaining === null ? tuples : tuples.slice(0, remaining)) yield await this.toTuple(wire);
      if (remaining !== null) {
        remaining -= tuples.length;
        if (remaining <= 0) return;
      }
      if (cursor === null) return;
    }
  }

  /**
   * Store a checkpoint and the blobs of its new channel versions.
   *
   * With `detectConflicts`, throws ConflictError when another writer moved the
   * thread's head since the run read it; nothing is stored then.
   */
  async put(
    cfg: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const conf = cfg.configurable as Record<string, unknown> | undefined;
    if (conf === undefined) throw new Error('Failed to put checkpoint: the config has no "configurable"');
    if (conf.thread_id === undefined || conf.thread_id === null) {
      throw new Error('Failed to put checkpoint: the config has no "thread_id" in "configurable"');
    }
    const threadId = String(conf.thread_id);
    const { channel_values: values = {}, ...skeleton } = checkpoint;
    const blobs = await Promise.all(
      Object.entries(newVersions ?? {}).map(async ([channel, version]) => ({
        channel,
        version: String(version),
        value: Object.hasOwn(values, channel) ? await this.typed(values[channel as keyof typeof values]) : EMPTY,
      })),
    );
    const body: Wire = {
      checkpoint_ns: String(conf.checkpoint_ns ?? ""),
      checkpoint_id: checkpoint.id,
      // In put, the config names the parent: the checkpoint this one follows.
      parent_checkpoint_id: String(conf.checkpoint_id ?? ""),
      checkpoint: await this.typed(skeleton),
      metadata: metadataToWire(metadata),
      channel_versions: Object.fromEntries(
        Object.entries(checkpoint.channel_versions ?? {}).map(([ch, v]) => [ch, String(v)]),
      ),
      blobs,
      scope: this.scopeOf(conf),
    };
    const conditioned = this.detectConflicts && CONDITIONED_SOURCES.has(String(metadata?.source));
    // The parent is the head the run read ("" for a new thread).
    if (conditioned) body.expected_head = body.parent_checkpoint_id;
    const path = `/v1/threads/${seg(threadId)}/checkpoints`;
    try {
      return storedConfig(await this.transport.request("POST", path, { body }));
    } catch (err) {
      if (!conditioned || !(err instanceof ConflictError)) throw err;
      // A conditioned put whose first try was stored but whose answer was
      // lost is refused when resent (its own checkpoint is the head by then):
      // a checkpoint under its id with its parent is the put's own.
      let landed: unknown;
      try {
        landed = await this.transport.request("GET", `/v1/threads/${seg(threadId)}/checkpoint`, {
          params: { checkpoint_ns: String(body.checkpoint_ns), checkpoint_id: checkpoint.id },
        });
      } catch (readErr) {
        if (!(readErr instanceof NotFoundError)) throw readErr;
      }
      if (isRecord(landed) && String(landed.parent_checkpoint_id ?? "") === body.parent_checkpoint_id) {
        return storedConfig(landed);
      }
      const parent = String(body.parent_checkpoint_id);
      const where = parent ? `checkpoint ${JSON.stringify(parent)}` : "its start";
      throw new ConflictError(
        err.code,
        `thread ${JSON.stringify(threadId)} (namespace ${JSON.stringify(body.checkpoint_ns)}) moved on from ${where}, ` +
          "where this run was: another writer stored checkpoints since (or the run gave new input to an older " +
          `checkpoint; fork with updateState for that). Checkpoint ${JSON.stringify(checkpoint.id)} was not stored; ` +
          `read the thread again and run from its head. (${err.detail})`,
        { status: err.status, requestId: err.requestId },
      );
    }
  }

  /** Store a task's pending writes against the checkpoint in config. */
  async putWrites(cfg: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    const conf = (cfg.configurable ?? {}) as Record<string, unknown>;
    if (conf.thread_id === undefined || conf.thread_id === null) {
      throw new Error('Failed to put writes: the config has no "thread_id" in "configurable"');
    }
    if (!conf.checkpoint_id) throw new Error('Failed to put writes: the config has no "checkpoint_id" in "configurable"');
    const byIdx = new Map<number, Wire>();
    for (const [pos, [channel, value]] of writes.entries()) {
      const idx = WRITES_IDX_MAP[channel] ?? pos;
      // A later write to the same special channel replaces an earlier one, as
      // in MemorySaver; the service refuses duplicate keys in one call.
      byIdx.set(idx, { task_id: taskId, task_path: taskPath ?? "", idx, channel, value: await this.typed(value) });
    }
    if (byIdx.size === 0) return;
    this.held.wrote(String(conf.thread_id), String(conf.checkpoint_ns ?? ""), String(conf.checkpoint_id));
    await this.transport.request("POST", `/v1/threads/${seg(conf.thread_id)}/writes`, {
      body: {
        checkpoint_ns: String(conf.checkpoint_ns ?? ""),
        checkpoint_id: String(conf.checkpoint_id),
        writes: [...byIdx.values()],
        scope: this.scopeOf(conf),
      },
    });
  }

  /** Delete every checkpoint, blob and write of a thread, in all namespaces. */
  async deleteThread(threadId: string): Promise<void> {
    try {
      await this.transport.request("DELETE", `/v1/threads/${seg(threadId)}`);
    } finally {
      this.held.dropThreads([threadId]);
    }
  }

  /**
   * The on-path writes and seed of each DeltaChannel, in one request to the
   * service (see BaseCheckpointSaver.getDeltaChannelHistory for the contract).
   * A history over the service's page (SAVER_HISTORY_PAGE) comes in pages,
   * newest first: each channel whose history goes on names, as `next`, the
   * ancestor to ask for it next; the pages put together are the whole.
   * The saver holds the last history it put together per thread and
   * namespace (see held.ts): the next one, at a descendant of that checkpoint
   * (the next turn's), is asked as what is new since it (`known`), and one at
   * that checkpoint itself takes no request.
   * Against a service without that route, the base class's walk over
   * `getTuple` is used.
   */
  async getDeltaChannelHistory(options: {
    config: RunnableConfig;
    channels: string[];
  }): Promise<Record<string, DeltaChannelHistory>> {
    const { config: cfg, channels } = options;
    if (channels.length === 0) return {};
    if (!this.deltaRoute) return super.getDeltaChannelHistory(options);
    const conf = (cfg.configurable ?? {}) as Record<string, unknown>;
    const out: Record<string, DeltaChannelHistory> = Object.fromEntries(channels.map((ch) => [ch, { writes: [] }]));
    if (conf.thread_id === undefined || conf.thread_id === null) return out;
    const thread = String(conf.thread_id);
    const ns = String(conf.checkpoint_ns ?? "");
    const target = getCheckpointId(cfg) ?? "";
    const held = this.held.known(thread, ns, target, channels);
    let raw: Record<string, RawHistory> | undefined;
    if (held !== undefined && held.checkpointId === target) {
      raw = held.histories;
    } else {
      let asked: Record<string, RawHistory> | "none" | "fallback";
      try {
        asked = await this.deltaPages(thread, ns, target, channels, held);
      } catch (err) {
        if (!(err instanceof InvalidRequestError) || held === undefined) throw err;
        // The chain does not reach the held history's checkpoint: another branch.
        this.held.forget(thread, ns);
        asked = await this.deltaPages(thread, ns, target, channels, undefined);
      }
      if (asked === "none") return out;
      if (asked === "fallback") return super.getDeltaChannelHistory(options);
      raw = asked;
      this.held.keep(thread, ns, target, raw);
    }
    for (const ch of channels) {
      const h = raw[ch];
      if (h === undefined) continue;
      const writes: DeltaChannelHistory["writes"] = [];
      for (const w of h.writes) writes.push([w.task_id as string, ch, await this.untyped(w.value)]);
      out[ch]!.writes = writes;
      if (h.seed !== null) out[ch]!.seed = await this.untyped(h.seed);
    }
    return out;
  }

  /**
   * The histories at target on the wire, page by page; with held, the service
   * stops at its checkpoint and the held writes go before. "none": the target
   * is not there; "fallback": the service has no delta-history route.
   */
  private async deltaPages(
    thread: string,
    ns: string,
    first: string,
    channels: string[],
    held: { checkpointId: string; histories: Record<string, RawHistory> } | undefined,
  ): Promise<Record<string, RawHistory> | "none" | "fallback"> {
    const known = held?.checkpointId;
    let target = first;
    let asking = channels;
    const seen = new Set<string>();
    const seeds = new Map<string, Wire | null>();
    const spliced = new Set<string>();
    // Each channel's pages, newest first: joined once at the end, since
    // prepending page by page would copy the writes once per page.
    const pages = new Map<string, Wire[][]>();
    while (asking.length > 0) {
      let wire: unknown;
      try {
        const body: Wire = { checkpoint_ns: ns, checkpoint_id: target, channels: asking, paged: true };
        if (known !== undefined) body.known = known;
        wire = await this.transport.request("POST", `/v1/threads/${seg(thread)}/delta-history`, { body });
      } catch (err) {
        if (err instanceof NotFoundError && seen.size === 0) return "none";
        if (err instanceof NoRouteError) {
          this.deltaRoute = false;
          this.logger.warn("the saver service has no delta-history route; walking checkpoints one by one instead");
          return "fallback";
        }
        throw err;
      }
      if (!isRecord(wire) || !isRecord(wire.channels)) {
        throw new BadResponseError("bad_response", "delta-history answered without channels");
      }
      const goingOn: string[] = [];
      let next: string | undefined;
      for (const ch of asking) {
        const entry = Object.hasOwn(wire.channels, ch) ? wire.channels[ch] : undefined;
        if (entry === undefined || entry === null) continue;
        if (!isRecord(entry)) throw new BadResponseError("bad_response", `malformed delta history of ${ch}`);
        const writes: Wire[] = [];
        for (const w of asList(entry.writes, "writes")) {
          if (!isRecord(w) || typeof w.task_id !== "string") throw new BadResponseError("bad_response", "malformed write");
          writes.push(w);
        }
        const taken = pages.get(ch);
        if (taken === undefined) pages.set(ch, [writes]);
        else taken.push(writes);
        seeds.set(ch, entry.seed !== undefined && entry.seed !== null ? (entry.seed as Wire) : null);
        if (entry.next !== undefined && entry.next !== null && entry.next !== "") {
          if (known !== undefined && entry.next === known) {
            spliced.add(ch);
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
        if (seen.has(next)) throw new BadResponseError("bad_response", `delta history goes round at ${next}`);
        seen.add(next);
        target = next;
      }
      asking = goingOn;
    }
    const raw: Record<string, RawHistory> = {};
    for (const [ch, taken] of pages) {
      // A later page is older: its writes come first.
      const writes = taken.reverse().flat();
      const h = spliced.has(ch) ? held!.histories[ch]! : undefined;
      raw[ch] = h ? { writes: [...h.writes, ...writes], seed: h.seed } : { writes, seed: seeds.get(ch) ?? null };
    }
    return raw;
  }

  // -- maintenance ---------------------------------------------------------------

  /**
   * Check that the service is ready and accepts this saver's API key.
   *
   * Throws UnauthorizedError for a bad key, UnavailableError when the
   * service's store does not answer, SaverConnectionError when nothing listens.
   */
  async ping(): Promise<void> {
    await this.transport.request("GET", "/readyz");
    // An empty page: the cheapest call that needs the key.
    await this.transport.request("POST", "/v1/checkpoints/search", { body: { limit: 0 } });
  }

  /** Copy a thread with ids and parent links unchanged. Throws NotFoundError when the source has none. */
  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    try {
      await this.transport.request("POST", `/v1/threads/${seg(sourceThreadId)}/copy`, {
        body: { target_thread_id: String(targetThreadId) },
      });
    } finally {
      this.held.dropThreads([targetThreadId]);
    }
  }

  /** Delete the checkpoints (and their writes) whose metadata `run_id` is in runIds. */
  async deleteForRuns(runIds: string[]): Promise<void> {
    if (runIds.length === 0) return;
    try {
      await this.transport.request("POST", "/v1/runs/delete", { body: { run_ids: runIds.map(String) } });
    } finally {
      this.held.clear();
    }
  }

  /** Keep only the newest checkpoint per namespace ("keep_latest"), or delete the threads. */
  async prune(threadIds: string[], options: { strategy?: PruneStrategy } = {}): Promise<void> {
    const strategy = options.strategy ?? "keep_latest";
    if (strategy !== "keep_latest" && strategy !== "delete") {
      throw new TypeError(`unknown prune strategy ${JSON.stringify(strategy)}; use "keep_latest" or "delete"`);
    }
    if (threadIds.length === 0) return;
    try {
      await this.transport.request("POST", "/v1/threads/prune", {
        body: { thread_ids: threadIds.map(String), strategy },
      });
    } finally {
      this.held.dropThreads(threadIds);
    }
  }

  /** Make a checkpoint, its channel values and its writes never expire. */
  async pin(threadId: string, checkpointId: string, checkpointNs = ""): Promise<void> {
    await this.transport.request("POST", `/v1/threads/${seg(threadId)}/checkpoints/pin`, {
      body: { checkpoint_ns: checkpointNs, checkpoint_id: checkpointId },
    });
  }

  // -- checkpoint tree -----------------------------------------------------------

  private treeRequest(threadId: string, query: string, checkpointId?: string, checkpointNs = "") {
    let params: Record<string, string> = {};
    if (checkpointId) params = { checkpoint_ns: checkpointNs, checkpoint_id: checkpointId };
    else if (checkpointNs) throw new TypeError("checkpointNs needs a checkpointId");
    return { path: `/v1/threads/${seg(threadId)}/tree${query ? `/${query}` : ""}`, params };
  }

  /** The thread's whole checkpoint tree, every namespace, parents before children. */
  async tree(threadId: string): Promise<ThreadTree> {
    const { path, params } = this.treeRequest(threadId, "");
    return treeFromWire(await this.transport.request("GET", path, { params }));
  }

  /** The nodes from the root down to a checkpoint; to the head without checkpointId. */
  async path(threadId: string, checkpointId?: string, checkpointNs = ""): Promise<TreeNode[]> {
    const { path, params } = this.treeRequest(threadId, "path", checkpointId, checkpointNs);
    return nodesFromWire(await this.transport.request("GET", path, { params }));
  }

  /** A checkpoint's children (the head's without checkpointId), oldest first. */
  async children(threadId: string, checkpointId?: string, checkpointNs = ""): Promise<TreeNode[]> {
    const { path, params } = this.treeRequest(threadId, "children", checkpointId, checkpointNs);
    return nodesFromWire(await this.transport.request("GET", path, { params }));
  }

  /** The branch heads of every namespace. */
  async leaves(threadId: string): Promise<TreeNode[]> {
    const { path, params } = this.treeRequest(threadId, "leaves");
    return nodesFromWire(await this.transport.request("GET", path, { params }));
  }

  /** The root graph's branches that are not on the live path, oldest first. */
  async abandoned(threadId: string): Promise<Branch[]> {
    const { path, params } = this.treeRequest(threadId, "abandoned");
    return branchesFromWire(await this.transport.request("GET", path, { params }));
  }

  /** The live path as prompt text (`.text`) and the tree drawn (`.drawing`); `limit` keeps the last steps. */
  async resumeContext(threadId: string, options: ResumeContextOptions = {}): Promise<ResumeContext> {
    const { path, params } = this.treeRequest(threadId, "context");
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
    return contextFromWire(await this.transport.request("GET", path, { params }));
  }

  /**
   * The messages of the live path only, in order, merged by id as
   * add_messages merges them, as LangChain message objects: ready to hand to
   * a chat model on resume. Nothing written only on an abandoned branch is
   * among them.
   */
  async liveMessages(threadId: string, options: { checkpointNs?: string } = {}): Promise<BaseMessage[]> {
    const { path, params } = this.treeRequest(threadId, "messages");
    if (options.checkpointNs) params.checkpoint_ns = options.checkpointNs;
    const stored = storedMessagesFromWire(await this.transport.request("GET", path, { params }));
    return mapStoredMessagesToChatMessages(stored as unknown as StoredMessage[]);
  }

  // -- idempotency ledger --------------------------------------------------------

  /**
   * Claim an idempotency key before a side effect.
   *
   * Of any number of concurrent claims, exactly one is granted (`claimed`,
   * with a token). Others see `in_progress` (with the lease's end),
   * `completed` (with the stored result, decoded with `serde`) or `failed`.
   */
  async claim(key: string, options: ClaimOptions = {}): Promise<Claim> {
    if (typeof key !== "string" || !key) throw new TypeError("an idempotency key must be a non-empty string");
    // One claim id for every try of this call: when an answer is lost and the
    // transport sends the claim again, the service recognises the resend and
    // grants the same lease, rather than answer in_progress (held by this very
    // call) until the lease runs out.
    const body: Wire = { key, claim_id: randomUUID().replaceAll("-", "") };
    if (options.leaseMs !== undefined) body.lease_ms = positiveMs(options.leaseMs, "leaseMs");
    if (options.ttlMs !== undefined) body.ttl_ms = positiveMs(options.ttlMs, "ttlMs");
    const wire = await this.transport.request("POST", "/v1/idempotency/claim", { body });
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
      claim.result = await this.untyped(wire.result);
    }
    if (isRecord(wire.error)) {
      claim.error = { message: String(wire.error.message ?? ""), retryable: Boolean(wire.error.retryable) };
    }
    return claim;
  }

  /** Store the result of a claimed key (serialised with `serde`). ConflictError when the token no longer holds it. */
  async complete(key: string, token: string, result: unknown): Promise<void> {
    await this.transport.request("POST", "/v1/idempotency/complete", {
      body: { key, token, result: await this.typed(result) },
    });
  }

  /** Store a failure of a claimed key; a retryable one lets the next claim run again. */
  async fail(key: string, token: string, message: string, options: { retryable?: boolean } = {}): Promise<void> {
    let text = String(message);
    const data = new TextEncoder().encode(text);
    if (data.length > MAX_MESSAGE_BYTES) {
      // The service refuses longer messages.
      text = new TextDecoder().decode(data.subarray(0, MAX_MESSAGE_BYTES)).replace(/\uFFFD$/, "");
    }
    await this.transport.request("POST", "/v1/idempotency/fail", {
      body: { key, token, error: { message: text, retryable: options.retryable ?? true } },
    });
  }

  /**
   * Run a side effect at most once per key, however often its step runs.
   *
   *     const charge = saver.idempotent("charge-" + orderId)(chargeCard);
   *     const receipt = await charge(order);
   *
   * or, with the key passed on to the downstream API:
   *
   *     const receipt = await saver.idempotent("charge-" + orderId).run(({ key }) =>
   *       payments.charge(order, { idempotencyKey: key }));
   *
   * The first call claims the key, runs, and stores its result (with `serde`);
   * a later call under the same key returns the stored result without
   * running. If the call throws, the failure is stored and the error rethrown;
   * the next call runs again, unless the error is one of `nonRetryable` (or
   * has `retryable === false`), in which case later calls throw
   * IdempotentCallFailed. While another caller holds the key, a call waits
   * for its lease and throws IdempotencyInProgress after `timeoutMs`.
   *
   * Without a key, one is derived from the running LangGraph task (see
   * `deriveKey`), stable across retries and resumes of the step: inside a
   * node or `task()` only. A function key is called with the call's arguments.
   */
  idempotent(key?: KeySpec, options: IdempotentOptions = {}): Idempotent {
    return makeIdempotent(this, key, options);
  }
}

function asList(value: unknown, what: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new BadResponseError("bad_response", `${what} is not a list`);
  return value;
}
