/**
 * The idempotency ledger: a side effect runs once, however often its step runs.
 *
 * A step claims a key before the side effect. The first claim wins a lease and
 * runs the call; its result is stored under the key. A step that runs again (a
 * retry, a resume after a crash) claims the same key, finds the stored result
 * and returns it instead of acting twice. `HTTPSaver.idempotent` wraps this
 * around a call in one line; `deriveKey` is how a key is derived from the
 * running LangGraph task when none is given.
 */

import { createHash } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";

import { IdempotencyInProgress, IdempotentCallFailed, SaverError } from "./errors.js";

export type ClaimState = "claimed" | "in_progress" | "completed" | "failed";

/** A failure stored against a key. */
export interface StoredFailure {
  message: string;
  retryable: boolean;
}

/**
 * What a claim on an idempotency key found.
 *
 * - `claimed`: the caller holds the lease (`token`) until `leaseExpiresAt` and
 *   must `complete` or `fail` the key; `error` is the previous attempt's
 *   retryable failure, if any.
 * - `in_progress`: another caller holds the lease until `leaseExpiresAt`.
 * - `completed`: the call happened; `result` is what it returned.
 * - `failed`: the call failed for good; `error` says why.
 */
export interface Claim {
  key: string;
  state: ClaimState;
  /** Claims granted on this key so far, starting at 1. */
  attempt: number;
  token?: string;
  /** Epoch milliseconds, as `Date.now()`; undefined when no lease is held. */
  leaseExpiresAt?: number;
  result?: unknown;
  error?: StoredFailure;
}

export interface ClaimOptions {
  /** Milliseconds the claim holds before another caller may take over; the service's default (a minute). */
  leaseMs?: number;
  /** Milliseconds the key's record is kept after its last change; the service's default (a day). */
  ttlMs?: number;
}

/** What the helper needs of a saver. */
export interface Ledger {
  claim(key: string, options?: ClaimOptions): Promise<Claim>;
  complete(key: string, token: string, result: unknown): Promise<void>;
  fail(key: string, token: string, message: string, options?: { retryable?: boolean }): Promise<void>;
  readonly logger: { warn(message: string): void };
}

// The service's limits: keys are ids (at most 256 bytes), failure messages at
// most 4096 bytes.
export const MAX_KEY_BYTES = 256;
export const MAX_MESSAGE_BYTES = 4096;

/** How long a caller waits for another caller's lease by default, in milliseconds. */
export const DEFAULT_WAIT_TIMEOUT_MS = 120_000;
// Polls of a key held by another caller start this far apart and back off to
// the cap; a poll never sleeps past the holder's lease deadline.
const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 1_000;

// Configurable keys LangGraph.js sets for a running task (its constants.ts;
// the tests check them against the installed version).
export const CONFIG_KEY_TASK_ID = "__pregel_task_id";
export const CONFIG_KEY_SCRATCHPAD = "__pregel_scratchpad";
export const CONFIG_KEY_CHECKPOINT_MAP = "checkpoint_map";

// -- keys derived from the running task -----------------------------------------

/** The running task: what makes a derived key unique and stable across replays. */
interface TaskScope {
  threadId: string;
  checkpointNs: string;
  checkpointId: string;
  taskId: string;
  attempt: number;
  /** One object per execution of the task (a new one for each resume), shared
   * by everything the task runs; undefined if unknown. */
  execution: object | undefined;
}

const encoder = new TextEncoder();

function truncateBytes(text: string, maxBytes: number): string {
  const data = encoder.encode(text);
  if (data.length <= maxBytes) return text;
  // Drop a code point cut in half rather than emit a replacement character.
  return new TextDecoder("utf-8", { fatal: false }).decode(data.subarray(0, Math.max(0, maxBytes))).replace(/\uFFFD$/, "");
}

function scopeKey(scope: TaskScope, name: string, index: number): string {
  const h = createHash("sha256");
  for (const part of [scope.threadId, scope.checkpointNs, scope.checkpointId, scope.taskId, name]) {
    const data = encoder.encode(part);
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(data.length));
    h.update(len); // unambiguous framing, as the Python client frames them
    h.update(data);
  }
  h.update(String(index));
  const prefix = `lg:${h.digest("hex").slice(0, 40)}:`;
  const label = `#${index}`;
  const room = MAX_KEY_BYTES - encoder.encode(prefix).length - label.length;
  // The name is only there to be read in logs; the digest covers it whole.
  return prefix + truncateBytes(name, room) + label;
}

interface ExecutionInfo {
  checkpointId?: string;
  nodeAttempt?: number;
}

function taskConfig(config: RunnableConfig | undefined): RunnableConfig {
  const found = config ?? (AsyncLocalStorageProviderSingleton.getRunnableConfig() as RunnableConfig | undefined);
  if (found === undefined) {
    throw new Error(
      "no idempotency key given and no LangGraph task is running: call this inside a node or task(), " +
        "pass config (the node's second argument), or pass a key",
    );
  }
  return found;
}

function taskScope(config: RunnableConfig | undefined): TaskScope {
  const cfg = taskConfig(config);
  const conf = (cfg.configurable ?? {}) as Record<string, unknown>;
  const threadId = conf.thread_id;
  const taskId = conf[CONFIG_KEY_TASK_ID];
  if (threadId === undefined || threadId === null || !taskId) {
    const missing = [
      threadId === undefined || threadId === null ? "thread_id (compile the graph with a checkpointer)" : "",
      taskId ? "" : "task id (not inside a node or task())",
    ].filter(Boolean);
    throw new Error(`cannot derive an idempotency key: the running config has no ${missing.join(" and no ")}; pass a key`);
  }
  const ns = String(conf.checkpoint_ns ?? "");
  const info = (cfg as { executionInfo?: ExecutionInfo }).executionInfo;
  let checkpointId = info?.checkpointId;
  if (!checkpointId) {
    // The checkpoint a task runs from is its graph's entry in the map; the
    // graph's namespace is the task's minus its last "name:task_id" part.
    const graphNs = ns.includes("|") ? ns.slice(0, ns.lastIndexOf("|")) : "";
    const map = conf[CONFIG_KEY_CHECKPOINT_MAP] as Record<string, string> | undefined;
    checkpointId = map?.[graphNs];
  }
  if (!checkpointId) throw new Error("cannot derive an idempotency key: no checkpoint id in the config");
  const execution = conf[CONFIG_KEY_SCRATCHPAD];
  return {
    threadId: String(threadId),
    checkpointNs: ns,
    checkpointId: String(checkpointId),
    taskId: String(taskId),
    attempt: Number.isInteger(info?.nodeAttempt) ? (info!.nodeAttempt as number) : 1,
    execution: typeof execution === "object" && execution !== null ? execution : undefined,
  };
}

/**
 * Counts the calls of each name within one execution of a task: per
 * execution object (weakly held) and attempt, or, without one, per task in a
 * bounded map.
 */
class CallCounters {
  private readonly byExecution = new WeakMap<object, Map<number, Map<string, number>>>();
  private readonly byTask = new Map<string, Map<string, number>>();

  constructor(private readonly size = 4096) {}

  next(scope: TaskScope, name: string): number {
    const counts = this.counts(scope);
    const n = (counts.get(name) ?? 0) + 1;
    counts.set(name, n);
    return n;
  }

  private counts(scope: TaskScope): Map<string, number> {
    if (scope.execution !== undefined) {
      let byAttempt = this.byExecution.get(scope.execution);
      if (byAttempt === undefined) {
        byAttempt = new Map();
        this.byExecution.set(scope.execution, byAttempt);
      }
      let counts = byAttempt.get(scope.attempt);
      if (counts === undefined) {
        counts = new Map();
        byAttempt.set(scope.attempt, counts);
      }
      return counts;
    }
    const ident = JSON.stringify([scope.threadId, scope.checkpointNs, scope.checkpointId, scope.taskId]);
    let counts = this.byTask.get(ident);
    if (counts === undefined) {
      counts = new Map();
      this.byTask.set(ident, counts);
      while (this.byTask.size > this.size) this.byTask.delete(this.byTask.keys().next().value!);
    }
    return counts;
  }
}

const COUNTERS = new CallCounters();

/**
 * The idempotency key of the `index`-th call named `name` in the running task.
 *
 * Derived from the thread id, the task's checkpoint namespace, the checkpoint
 * the task runs from and the task id, all of which LangGraph reproduces when
 * the same step runs again from the same checkpoint (a retry, a resume after a
 * failure or a crash). Call it inside a node or `task()`, or pass the node's
 * `config`. `HTTPSaver.idempotent()` without a key uses this, numbering the
 * calls of each name in one execution of the task from 1.
 */
export function deriveKey(name: string, index = 1, config?: RunnableConfig): string {
  if (!Number.isInteger(index) || index < 1) throw new RangeError("index counts from 1");
  return scopeKey(taskScope(config), name, index);
}

function nextTaskKey(name: string, config: RunnableConfig | undefined): string {
  const scope = taskScope(config);
  return scopeKey(scope, name, COUNTERS.next(scope, name));
}

function describe(err: unknown): string {
  const e = err as Error;
  const text = e instanceof Error ? (e.message ? `${e.name}: ${e.message}` : e.name) : String(err);
  return truncateBytes(text, MAX_MESSAGE_BYTES);
}

// -- the helper --------------------------------------------------------------------

export type ErrorClass = abstract new (...args: never[]) => Error;

export interface IdempotentOptions extends ClaimOptions {
  /** The step-local name in a derived key; default the wrapped function's name
   * (`run`: "idempotent"). Calls of one name in one task are numbered, so two
   * calls of the same function in a step get different keys. */
  name?: string;
  /** Milliseconds to wait for another caller's lease; `null`: no limit. Default two minutes. */
  timeoutMs?: number | null;
  /** Error classes that fail the key for good (as does an error with `retryable === false`). */
  nonRetryable?: ErrorClass[];
  /** The task's config, for deriving keys where the running one cannot be found. */
  config?: RunnableConfig;
}

/** The block form's handle on one idempotent call (`Idempotent.run`). */
export interface IdempotentCall {
  /** The key: pass it on to a downstream API as that API's own idempotency key. */
  readonly key: string;
  /** Claims granted on this key so far, this one included. */
  readonly attempt: number;
  /** The previous attempt's retryable failure, if there was one. */
  readonly previousError: StoredFailure | undefined;
}

/**
 * Runs a call at most once per key. Call it on a function to wrap it, or use
 * `run(fn)` to get the key inside the call.
 */
export interface Idempotent {
  <A extends unknown[], R>(fn: (...args: A) => R | Promise<R>): (...args: A) => Promise<Awaited<R>>;
  run<R>(fn: (call: IdempotentCall) => R | Promise<R>): Promise<Awaited<R>>;
}

export type KeySpec = string | ((...args: never[]) => string) | undefined;

export function makeIdempotent(ledger: Ledger, key: KeySpec, options: IdempotentOptions = {}): Idempotent {
  if (typeof key === "string" && !key) throw new Error("an idempotency key must not be empty");
  const timeoutMs = options.timeoutMs === undefined ? DEFAULT_WAIT_TIMEOUT_MS : options.timeoutMs;
  if (timeoutMs !== null && !(timeoutMs >= 0)) throw new RangeError("timeoutMs must not be negative");
  const claimOptions: ClaimOptions = { leaseMs: options.leaseMs, ttlMs: options.ttlMs };

  const resolveKey = (defaultName: string, args: unknown[]): string => {
    if (typeof key === "string") return key;
    if (typeof key === "function") {
      const k = (key as (...a: unknown[]) => unknown)(...args);
      if (typeof k !== "string" || !k) throw new Error(`the key function returned ${String(k)}, not a non-empty string`);
      return k;
    }
    return nextTaskKey(options.name ?? defaultName, options.config);
  };

  const acquire = async (k: string): Promise<Claim> => {
    const deadline = timeoutMs === null ? Infinity : Date.now() + timeoutMs;
    let poll = FIRST_POLL_MS;
    for (;;) {
      const claim = await ledger.claim(k, claimOptions);
      if (claim.state === "failed") throw new IdempotentCallFailed(k, claim.error?.message ?? "failed", claim.attempt);
      if (claim.state === "claimed" || claim.state === "completed") return claim;
      if (claim.state !== "in_progress") throw new SaverError("bad_response", `unexpected claim state ${claim.state}`);
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new IdempotencyInProgress(k, `another caller still holds the lease (attempt ${claim.attempt})`, claim.leaseExpiresAt);
      }
      let wait = poll;
      if (claim.leaseExpiresAt !== undefined) {
        const untilLease = claim.leaseExpiresAt - Date.now();
        // Wake just after the lease ends, when the claim will be granted.
        if (untilLease > 0) wait = Math.min(poll, untilLease + 5);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, remaining)));
      poll = Math.min(poll * 2, MAX_POLL_MS);
    }
  };

  const retryable = (err: unknown): boolean => {
    if (options.nonRetryable?.some((cls) => err instanceof cls)) return false;
    return (err as { retryable?: unknown } | null)?.retryable !== false;
  };

  const execute = async <R>(k: string, fn: (claim: Claim) => R | Promise<R>): Promise<Awaited<R>> => {
    const claim = await acquire(k);
    if (claim.state === "completed") return claim.result as Awaited<R>;
    const token = claim.token!;
    let result: Awaited<R>;
    try {
      result = await fn(claim);
    } catch (err) {
      try {
        await ledger.fail(k, token, describe(err), { retryable: retryable(err) });
      } catch (failErr) {
        ledger.logger.warn(`could not record the failure of key ${JSON.stringify(k)}: ${(failErr as Error).message}`);
      }
      throw err;
    }
    try {
      await ledger.complete(k, token, result);
    } catch (err) {
      // The call happened and its result is returned; only the ledger missed
      // it. Until the lease ends the key stays in progress, then a replay
      // would run the call again, which is why the key should also go
      // downstream.
      ledger.logger.warn(
        `the call under key ${JSON.stringify(k)} succeeded but its result was not recorded: ${(err as Error).message}`,
      );
    }
    return result;
  };

  const wrap = <A extends unknown[], R>(fn: (...args: A) => R | Promise<R>) => {
    const name = fn.name || "anonymous";
    return async (...args: A): Promise<Awaited<R>> => execute(resolveKey(name, args), () => fn(...args));
  };
  const idempotent = wrap as Idempotent;
  idempotent.run = async <R>(fn: (call: IdempotentCall) => R | Promise<R>): Promise<Awaited<R>> => {
    const k = resolveKey("idempotent", []);
    return execute(k, (claim) => fn({ key: k, attempt: claim.attempt, previousError: claim.error }));
  };
  return idempotent;
}
