/**
 * `HTTPSaver`: a LangGraph.js checkpoint saver that stores checkpoints in the saver service.
 */

import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseMessage } from "@langchain/core/messages";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type DeltaChannelHistory,
  getCheckpointId,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";

import { ConflictError, InvalidRequestError, NoRouteError, NotFoundError } from "./errors.js";
import { Held, type RawHistory } from "./held.js";
import {
  type Claim,
  type ClaimOptions,
  type Idempotent,
  type IdempotentOptions,
  type KeySpec,
  type Ledger,
  makeIdempotent,
} from "./ledger.js";
import { type Logger, retryPolicy, type RetryPolicy, Transport } from "./transport.js";
import { type Branch, branchesFromWire, contextFromWire, nodesFromWire, type ResumeContext, type ThreadTree, type TreeNode, treeFromWire } from "./tree.js";
import { VERSION } from "./version.js";
import * as wire from "./wire.js";
import type { Call, PruneStrategy, ResumeContextOptions, Scope } from "./wire.js";

export { metadataToWire, type PruneStrategy, type ResumeContextOptions, type Scope, SCOPE_KEY } from "./wire.js";

export const URL_ENV = "SAVER_URL";
export const API_KEY_ENV = "SAVER_API_KEY";

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
  wire.positiveMs(timeoutMs, "timeoutMs");
  const transport = new Transport(url, { headers, timeoutMs, retry: retryPolicy(opts.retry), logger });
  return { url, transport, logger };
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
  // The last delta history per thread, for the next (see held.ts).
  private readonly held = new Held();

  constructor(urlOrOptions?: string | HTTPSaverOptions, options: HTTPSaverOptions = {}) {
    const opts: HTTPSaverOptions =
      typeof urlOrOptions === "string" ? { ...options, url: urlOrOptions } : { ...(urlOrOptions ?? {}) };
    super(opts.serde);
    this.scope = wire.checkScope(opts.scope);
    this.detectConflicts = Boolean(opts.detectConflicts);
    ({ url: this.url, transport: this.transport, logger: this.logger } = clientTransport("HTTPSaver", opts));
  }

  toString(): string {
    return `HTTPSaver(${this.url})`;
  }

  /** Send a call built by wire.ts; the decoded answer. */
  private send(call: Call): Promise<unknown> {
    return this.transport.request(call.method, call.path, { body: call.body, params: call.params });
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

  // -- BaseCheckpointSaver ---------------------------------------------------------

  private async toTuple(found: unknown): Promise<CheckpointTuple> {
    const tuple = await wire.toTuple(this.serde, found);
    if (!wire.needsPendingSends(tuple)) return tuple;
    // Checkpoints of format v < 4 kept pending sends as writes on their
    // parent; as the JS savers do, they are moved into `__pregel_tasks`.
    const parent = await this.getTuple(tuple.parentConfig!);
    return wire.withPendingSends(tuple, parent, this.getNextVersion(undefined));
  }

  /** The checkpoint named by config, or the latest of (thread, ns); undefined if absent. */
  async getTuple(cfg: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const call = wire.getCall(cfg);
    if (call === undefined) return undefined;
    let found: unknown;
    try {
      found = await this.send(call);
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
    return this.toTuple(found);
  }

  /** Checkpoints matching the arguments, newest first, fetched page by page. */
  async *list(cfg: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const search = new wire.Search(cfg, options);
    for (let call = search.next(); call !== undefined; call = search.next()) {
      for (const found of search.page(await this.send(call))) yield await this.toTuple(found);
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
    const put = await wire.putCall(this.serde, cfg, checkpoint, metadata, newVersions, {
      scope: this.scope,
      detectConflicts: this.detectConflicts,
    });
    try {
      return wire.storedConfig(await this.send(put));
    } catch (err) {
      if (!wire.conditioned(put) || !(err instanceof ConflictError)) throw err;
      // The first try may have been stored with its answer lost: read it back.
      let landed: unknown;
      try {
        landed = await this.send(wire.landedCall(put));
      } catch (readErr) {
        if (!(readErr instanceof NotFoundError)) throw readErr;
      }
      return wire.landedConfig(landed, put, err, String(cfg.configurable!.thread_id));
    }
  }

  /** Store a task's pending writes against the checkpoint in config. */
  async putWrites(cfg: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    const call = await wire.writesCall(this.serde, cfg, writes, taskId, taskPath, { scope: this.scope });
    if (call === undefined) return;
    const conf = cfg.configurable!;
    this.held.wrote(String(conf.thread_id), String(conf.checkpoint_ns ?? ""), String(conf.checkpoint_id));
    await this.send(call);
  }

  /** Delete every checkpoint, blob and write of a thread, in all namespaces. */
  async deleteThread(threadId: string): Promise<void> {
    try {
      await this.send(wire.deleteThreadCall(threadId));
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
   * A service without that route (older than this client) gets NoRouteError
   * saying so: the saver never walks the checkpoints one request each, as the
   * base class does.
   */
  async getDeltaChannelHistory(options: {
    config: RunnableConfig;
    channels: string[];
  }): Promise<Record<string, DeltaChannelHistory>> {
    const { config: cfg, channels } = options;
    if (channels.length === 0) return {};
    const conf = (cfg.configurable ?? {}) as Record<string, unknown>;
    if (conf.thread_id === undefined || conf.thread_id === null) return wire.toHistories(this.serde, undefined, channels);
    const thread = String(conf.thread_id);
    const ns = String(conf.checkpoint_ns ?? "");
    const target = getCheckpointId(cfg) ?? "";
    const held = this.held.known(thread, ns, target, channels);
    let raw: Record<string, RawHistory> | undefined;
    if (held !== undefined && held.checkpointId === target) {
      raw = held.histories;
    } else {
      try {
        raw = await this.deltaPages(new wire.DeltaPages(thread, ns, target, channels, held));
      } catch (err) {
        if (!(err instanceof InvalidRequestError) || held === undefined) throw err;
        // The chain does not reach the held history's checkpoint: another branch.
        this.held.forget(thread, ns);
        raw = await this.deltaPages(new wire.DeltaPages(thread, ns, target, channels));
      }
      if (raw !== undefined) this.held.keep(thread, ns, target, raw);
    }
    return wire.toHistories(this.serde, raw, channels);
  }

  /** The histories the pages put together, on the wire; undefined when the target is not there. */
  private async deltaPages(pages: wire.DeltaPages): Promise<Record<string, RawHistory> | undefined> {
    for (let call = pages.call(); call !== undefined; call = pages.call()) {
      let answer: unknown;
      try {
        answer = await this.send(call);
      } catch (err) {
        if (err instanceof NotFoundError && pages.first) return undefined;
        if (err instanceof NoRouteError) throw wire.missingDeltaRoute(err);
        throw err;
      }
      pages.take(answer);
    }
    return pages.raw();
  }

  // -- maintenance ---------------------------------------------------------------

  /**
   * Check that the service is ready and accepts this saver's API key.
   *
   * Throws UnauthorizedError for a bad key, UnavailableError when the
   * service's store does not answer, SaverConnectionError when nothing listens.
   */
  async ping(): Promise<void> {
    for (const call of wire.pingCalls()) await this.send(call);
  }

  /** Copy a thread with ids and parent links unchanged. Throws NotFoundError when the source has none. */
  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    try {
      await this.send(wire.copyThreadCall(sourceThreadId, targetThreadId));
    } finally {
      this.held.dropThreads([targetThreadId]);
    }
  }

  /** Delete the checkpoints (and their writes) whose metadata `run_id` is in runIds. */
  async deleteForRuns(runIds: string[]): Promise<void> {
    const call = wire.deleteForRunsCall(runIds);
    if (call === undefined) return;
    try {
      await this.send(call);
    } finally {
      this.held.clear();
    }
  }

  /** Keep only the newest checkpoint per namespace ("keep_latest"), or delete the threads. */
  async prune(threadIds: string[], options: { strategy?: PruneStrategy } = {}): Promise<void> {
    const call = wire.pruneCall(threadIds, options.strategy ?? "keep_latest");
    if (call === undefined) return;
    try {
      await this.send(call);
    } finally {
      this.held.dropThreads(threadIds);
    }
  }

  /** Make a checkpoint, its channel values and its writes never expire. */
  async pin(threadId: string, checkpointId: string, checkpointNs = ""): Promise<void> {
    await this.send(wire.pinCall(threadId, checkpointId, checkpointNs));
  }

  // -- checkpoint tree -----------------------------------------------------------

  /** The thread's whole checkpoint tree, every namespace, parents before children. */
  async tree(threadId: string): Promise<ThreadTree> {
    return treeFromWire(await this.send(wire.treeCall(threadId, "")));
  }

  /** The nodes from the root down to a checkpoint; to the head without checkpointId. */
  async path(threadId: string, checkpointId?: string, checkpointNs = ""): Promise<TreeNode[]> {
    return nodesFromWire(await this.send(wire.treeCall(threadId, "path", checkpointId, checkpointNs)));
  }

  /** A checkpoint's children (the head's without checkpointId), oldest first. */
  async children(threadId: string, checkpointId?: string, checkpointNs = ""): Promise<TreeNode[]> {
    return nodesFromWire(await this.send(wire.treeCall(threadId, "children", checkpointId, checkpointNs)));
  }

  /** The branch heads of every namespace. */
  async leaves(threadId: string): Promise<TreeNode[]> {
    return nodesFromWire(await this.send(wire.treeCall(threadId, "leaves")));
  }

  /** The root graph's branches that are not on the live path, oldest first. */
  async abandoned(threadId: string): Promise<Branch[]> {
    return branchesFromWire(await this.send(wire.treeCall(threadId, "abandoned")));
  }

  /** The live path as prompt text (`.text`) and the tree drawn (`.drawing`); `limit` keeps the last steps. */
  async resumeContext(threadId: string, options: ResumeContextOptions = {}): Promise<ResumeContext> {
    return contextFromWire(await this.send(wire.contextCall(threadId, options)));
  }

  /**
   * The messages of the live path only, in order, merged by id as
   * add_messages merges them, as LangChain message objects: ready to hand to
   * a chat model on resume. Nothing written only on an abandoned branch is
   * among them.
   */
  async liveMessages(threadId: string, options: { checkpointNs?: string } = {}): Promise<BaseMessage[]> {
    return wire.toMessages(await this.send(wire.messagesCall(threadId, options.checkpointNs)));
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
    return wire.toClaim(this.serde, await this.send(wire.claimCall(key, options)));
  }

  /** Store the result of a claimed key (serialised with `serde`). ConflictError when the token no longer holds it. */
  async complete(key: string, token: string, result: unknown): Promise<void> {
    await this.send(await wire.completeCall(this.serde, key, token, result));
  }

  /** Store a failure of a claimed key; a retryable one lets the next claim run again. */
  async fail(key: string, token: string, message: string, options: { retryable?: boolean } = {}): Promise<void> {
    await this.send(wire.failCall(key, token, message, options.retryable ?? true));
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
