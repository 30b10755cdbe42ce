/**
 * HTTP plumbing: msgpack bodies, error mapping, retries with backoff and jitter.
 *
 * Requests go through the runtime's `fetch` (Node's undici), which keeps
 * connections alive between requests.
 */

import { randomUUID } from "node:crypto";
import { decode, encode } from "@msgpack/msgpack";

import {
  BadResponseError,
  errorFromResponse,
  SaverConnectionError,
  SaverError,
  UnavailableError,
} from "./errors.js";

export const MSGPACK = "application/msgpack";
export const REQUEST_ID_HEADER = "X-Request-ID";

/**
 * How failed requests are retried.
 *
 * Only connection failures (timeouts included) and 503 `unavailable` are
 * retried. Every operation of the protocol is idempotent (puts upsert, writes
 * are keyed by task and index, deletes are absolute, a claim resent with its
 * claim id gets its own grant back), so a request that may or may not have
 * reached the service can always be sent again.
 */
export interface RetryPolicy {
  /** Total tries per request, the first included. Default 6. */
  maxAttempts: number;
  /** Milliseconds after the first try past which no new try is started. Default 30000. */
  maxDelayMs: number;
  /** Scale of the randomised exponential backoff, in milliseconds. Default 100. */
  backoffMs: number;
  /** Cap of one backoff sleep, in milliseconds (a Retry-After may exceed it). Default 5000. */
  maxBackoffMs: number;
}

export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 6,
  maxDelayMs: 30_000,
  backoffMs: 100,
  maxBackoffMs: 5_000,
});

export function retryPolicy(partial: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY, ...partial };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError("maxAttempts must be an integer of at least 1");
  }
  for (const k of ["maxDelayMs", "backoffMs", "maxBackoffMs"] as const) {
    if (!Number.isFinite(policy[k]) || policy[k] < 0) throw new RangeError(`${k} must be a non-negative number`);
  }
  return policy;
}

/** Where the client reports retries (warn) and, if given, every request (debug). */
export interface Logger {
  warn(message: string): void;
  debug?(message: string): void;
}

/** Seconds to wait from a Retry-After header (delta-seconds or HTTP-date). */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const when = Date.parse(text);
  if (Number.isNaN(when)) return undefined;
  return Math.max(0, (when - Date.now()) / 1000);
}

export interface RequestOptions {
  body?: unknown;
  params?: Record<string, string>;
}

export interface TransportOptions {
  headers: Record<string, string>;
  timeoutMs: number;
  retry: RetryPolicy;
  logger: Logger;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The service's HTTP API, as one method that sends, decodes and retries. */
export class Transport {
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly logger: Logger;

  constructor(baseUrl: string, options: TransportOptions) {
    this.baseUrl = baseUrl;
    this.headers = { Accept: MSGPACK, ...options.headers };
    this.timeoutMs = options.timeoutMs;
    this.retry = options.retry;
    this.logger = options.logger;
  }

  /** Send a request, retrying transient failures; return the decoded body (undefined when empty). */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    // One id for every try of a logical operation, so that the service's log
    // shows the retries of one call together.
    const requestId = randomUUID().replaceAll("-", "");
    const headers: Record<string, string> = { ...this.headers, [REQUEST_ID_HEADER]: requestId };
    let body: Uint8Array | undefined;
    if (options.body !== undefined) {
      body = encode(options.body, { ignoreUndefined: true });
      headers["Content-Type"] = MSGPACK;
    }
    let url = this.baseUrl + path;
    if (options.params && Object.keys(options.params).length > 0) {
      url += `?${new URLSearchParams(options.params).toString()}`;
    }
    const start = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(method, url, headers, body, requestId);
      } catch (err) {
        const retryable = err instanceof SaverConnectionError || err instanceof UnavailableError;
        if (!retryable || attempt >= this.retry.maxAttempts) throw err;
        const wait = this.backoff(err, attempt);
        // As tenacity's stop_before_delay: no try that would start past the budget.
        if (Date.now() - start + wait >= this.retry.maxDelayMs) throw err;
        this.logger.warn(
          `saver request failed (attempt ${attempt}): ${(err as Error).message}; retrying in ${(wait / 1000).toFixed(2)}s`,
        );
        await sleep(wait);
      }
    }
  }

  private backoff(err: SaverError, attempt: number): number {
    if (err instanceof UnavailableError && err.retryAfter !== undefined) {
      // The server's hint, plus a little jitter so that clients it throttled
      // together do not come back in the same millisecond.
      return err.retryAfter * 1000 + Math.random() * this.retry.backoffMs;
    }
    // Full jitter: clients that failed together spread out.
    const high = Math.min(this.retry.maxBackoffMs, this.retry.backoffMs * 2 ** attempt);
    return Math.random() * high;
  }

  private async attempt(
    method: string,
    url: string,
    headers: Record<string, string>,
    body: Uint8Array | undefined,
    requestId: string,
  ): Promise<unknown> {
    const started = performance.now();
    let response: Response;
    let bytes: Uint8Array;
    try {
      response = await fetch(url, {
        method,
        headers,
        body,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (err) {
      throw connectionError(err, requestId, this.timeoutMs);
    }
    this.logger.debug?.(
      `${method} ${url} -> ${response.status} in ${(performance.now() - started).toFixed(1)}ms (request ${requestId})`,
    );
    const rid = response.headers.get(REQUEST_ID_HEADER) ?? requestId;
    if (!response.ok) throw errorOf(response, bytes, rid);
    try {
      return decodeBody(response.headers.get("content-type"), bytes);
    } catch (err) {
      throw new BadResponseError("bad_response", `could not decode the response body: ${(err as Error).message}`, {
        status: response.status,
        requestId: rid,
      });
    }
  }
}

function connectionError(err: unknown, requestId: string, timeoutMs: number): SaverConnectionError {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  let text: string;
  if (e?.name === "TimeoutError") text = `no answer within ${timeoutMs}ms`;
  else {
    const cause = e?.cause ? ` (${e.cause.code ?? e.cause.message ?? String(e.cause)})` : "";
    text = `${e?.name ?? "Error"}: ${e?.message ?? String(err)}${cause}`;
  }
  return new SaverConnectionError("connection_error", text, { requestId });
}

function errorOf(response: Response, bytes: Uint8Array, requestId: string): SaverError {
  let code: string | undefined;
  let message = response.statusText || "error";
  let parsed: unknown;
  try {
    parsed = decodeBody(response.headers.get("content-type"), bytes);
  } catch {
    // A proxy's HTML page, say: keep its start for the message.
    const text = new TextDecoder().decode(bytes.subarray(0, 200)).trim();
    if (text) message = text;
  }
  const err = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : undefined;
  if (err) {
    if (typeof err.code === "string" && err.code) code = err.code;
    if (typeof err.message === "string" && err.message) message = err.message;
  }
  return errorFromResponse(response.status, code, message, {
    requestId,
    retryAfter: parseRetryAfter(response.headers.get("retry-after")),
  });
}

/** Decode a body by its content type: msgpack or JSON; empty is undefined. */
export function decodeBody(contentType: string | null, bytes: Uint8Array): unknown {
  if (bytes.length === 0) return undefined;
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === MSGPACK) {
    // No container or string can be longer than the bytes that hold it: a
    // length header claiming more is refused before anything is allocated.
    const n = bytes.length;
    return decode(bytes, { maxStrLength: n, maxBinLength: n, maxArrayLength: n, maxMapLength: n, maxExtLength: n });
  }
  if (type === "application/json" || type.endsWith("+json")) {
    return JSON.parse(new TextDecoder().decode(bytes));
  }
  throw new Error(`unexpected content type ${JSON.stringify(type || "none")}`);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}
