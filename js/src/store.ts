/**
 * `HTTPStore`: LangGraph.js's long-term memory (a `BaseStore`) kept by the saver service.
 */

import {
  BaseStore,
  type GetOperation,
  type IndexConfig,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
  validateNamespace,
} from "@langchain/langgraph-checkpoint";

import { BadResponseError } from "./errors.js";
import { type ClientOptions, clientTransport } from "./saver.js";
import { isRecord, type Logger, type Transport } from "./transport.js";

export const STORE_BATCH_PATH = "/v1/store/batch";

/** LangGraph's `TTLConfig`, in minutes, as Python's `HTTPStore` takes it. */
export interface StoreTTLConfig {
  /** Minutes until a put that gives no `ttl` expires; unset: such puts never expire. */
  defaultTtl?: number;
  /** Whether reads that do not say restart the TTL of what they return. Default true. */
  refreshOnRead?: boolean;
}

export interface HTTPStoreOptions extends ClientOptions {
  /**
   * Semantic search: `dims`, `embeddings` and `fields` (default `["$"]`, the
   * whole value), as `InMemoryStore` takes them. Texts are embedded here,
   * per put (`index: false` or a field list override `fields`) and per
   * search query; the service keeps the vectors and ranks them.
   */
  index?: IndexConfig;
  /** TTL of items, as Python's `HTTPStore` and LangGraph's Python stores take it. */
  ttl?: StoreTTLConfig;
}

/** A put that may also give its item's TTL in minutes (null: never expires). */
export type StorePutOperation = PutOperation & { ttl?: number | null };
/** A get or search that may say whether it restarts the TTL of what it reads. */
export type StoreGetOperation = GetOperation & { refreshTtl?: boolean };
export type StoreSearchOperation = SearchOperation & { refreshTtl?: boolean };

type Wire = Record<string, unknown>;
type Kind = "get" | "put" | "search" | "list";

// An op's kind, told apart as InMemoryStore tells them apart (the ops are
// plain objects); a listing may come without matchConditions.
function kindOf(op: Operation): Kind {
  if ("namespacePrefix" in op) return "search";
  if ("value" in op) return "put";
  if ("key" in op && "namespace" in op) return "get";
  if ("matchConditions" in op || "maxDepth" in op || "limit" in op) return "list";
  throw new TypeError(`unknown store operation: ${JSON.stringify(op)}`);
}

/**
 * A LangGraph.js store backed by the saver service: `graph.compile({ store: new HTTPStore(url) })`.
 *
 * Items live in the service per tenant (the API key's), under namespaces
 * such as `["users", userId, "memories"]`, so every process, thread and
 * language of an application shares them: what a Python agent's `HTTPStore`
 * puts, this one reads, and the other way round. `batch` sends each batch of
 * ops in one request; the other methods are `BaseStore`'s, which call it.
 *
 * Values are JSON; a value `JSON.stringify` cannot write faithfully (a
 * bigint, a cycle, NaN or an infinity) is refused here.
 */
export class HTTPStore extends BaseStore {
  readonly url: string;
  readonly logger: Logger;
  readonly indexConfig: IndexConfig | undefined;
  readonly ttlConfig: StoreTTLConfig | undefined;
  private readonly transport: Transport;
  private readonly fields: [string, string[]][];

  constructor(urlOrOptions?: string | HTTPStoreOptions, options: HTTPStoreOptions = {}) {
    super();
    const opts: HTTPStoreOptions =
      typeof urlOrOptions === "string" ? { ...options, url: urlOrOptions } : { ...(urlOrOptions ?? {}) };
    ({ url: this.url, transport: this.transport, logger: this.logger } = clientTransport("HTTPStore", opts));
    if (opts.index) {
      const dims = opts.index.dims;
      if (!Number.isInteger(dims) || dims < 1) throw new RangeError("index.dims must be a positive integer");
      if (!opts.index.embeddings) throw new TypeError("index.embeddings is required");
    }
    if (opts.ttl?.defaultTtl !== undefined) positiveMinutes(opts.ttl.defaultTtl, "ttl.defaultTtl");
    this.indexConfig = opts.index;
    this.ttlConfig = opts.ttl;
    this.fields = (opts.index?.fields ?? ["$"]).map((p) => [p, p === "$" ? [p] : tokenizePath(p)]);
  }

  toString(): string {
    return `HTTPStore(${this.url})`;
  }

  // -- BaseStore's methods, with the TTL options Python's store has ----------

  async get(namespace: string[], key: string, options: { refreshTtl?: boolean } = {}): Promise<Item | null> {
    validateNamespace(namespace, { allowEmpty: true, allowReservedRoot: true });
    const op: StoreGetOperation = { namespace, key, refreshTtl: options.refreshTtl };
    return (await this.batch([op]))[0] as Item | null;
  }

  async search(
    namespacePrefix: string[],
    options: { filter?: Record<string, unknown>; limit?: number; offset?: number; query?: string; refreshTtl?: boolean } = {},
  ): Promise<SearchItem[]> {
    validateNamespace(namespacePrefix, { allowEmpty: true, allowReservedRoot: true });
    const { filter, limit = 10, offset = 0, query, refreshTtl } = options;
    const op: StoreSearchOperation = { namespacePrefix, filter, limit, offset, query, refreshTtl };
    return (await this.batch([op]))[0] as SearchItem[];
  }

  /** `BaseStore.put`; `options.ttl` is minutes until the item expires (null: never; unset: `ttl.defaultTtl`). */
  async put(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    index?: false | string[],
    options: { ttl?: number | null } = {},
  ): Promise<void> {
    validateNamespace(namespace);
    const op: StorePutOperation = { namespace, key, value, index };
    if (options.ttl !== undefined) op.ttl = options.ttl;
    await this.batch([op]);
  }

  // -- the one request -------------------------------------------------------

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const kinds = operations.map(kindOf);
    const vectors = await this.embed(operations, kinds);
    const body: Wire = { ops: operations.map((op, i) => this.toWire(op, kinds[i]!, vectors.puts.get(i), vectors.queries)) };
    if (this.indexConfig) body.dims = this.indexConfig.dims;
    const answer = await this.transport.request("POST", STORE_BATCH_PATH, { body });
    return resultsFromWire(kinds, answer) as OperationResults<Op>;
  }

  /**
   * The vectors of a batch: per put, one for each text at its index paths
   * (the config's fields, or its own list; none with `index: false`), and
   * one per distinct search query, as InMemoryStore embeds them. Each
   * distinct text is embedded once.
   */
  private async embed(
    ops: Operation[],
    kinds: Kind[],
  ): Promise<{ puts: Map<number, number[][]>; queries: Map<string, number[]> }> {
    const puts = new Map<number, number[][]>();
    const queries = new Map<string, number[]>();
    const embeddings = this.indexConfig?.embeddings;
    if (!embeddings) return { puts, queries };
    const textsOf = new Map<number, string[]>();
    const distinct = new Map<string, number>();
    // Only the last put of a key is kept, so only its texts are embedded.
    const lastPut = new Map<string, number>();
    ops.forEach((op, i) => {
      if (kinds[i] === "put") lastPut.set(JSON.stringify([(op as PutOperation).namespace, (op as PutOperation).key]), i);
    });
    ops.forEach((op, i) => {
      if (kinds[i] === "put") {
        const put = op as PutOperation;
        if (put.value === null || put.index === false) return;
        if (lastPut.get(JSON.stringify([put.namespace, put.key])) !== i) return;
        const paths = put.index === undefined || put.index === null ? this.fields : put.index.map((p) => [p, tokenizePath(p)] as const);
        const texts = paths.flatMap(([, path]) => getTextAtPath(put.value, path));
        if (texts.length === 0) return;
        textsOf.set(i, texts);
        for (const t of texts) if (!distinct.has(t)) distinct.set(t, distinct.size);
      } else if (kinds[i] === "search") {
        const query = (op as SearchOperation).query;
        if (query) queries.set(query, []);
      }
    });
    const texts = [...distinct.keys()];
    const [docVectors, queryVectors] = await Promise.all([
      texts.length ? embeddings.embedDocuments(texts) : Promise.resolve([] as number[][]),
      Promise.all([...queries.keys()].map((q) => embeddings.embedQuery(q))),
    ]);
    if (docVectors.length !== texts.length) {
      throw new Error(`the embeddings returned ${docVectors.length} vectors for ${texts.length} texts`);
    }
    [...queries.keys()].forEach((q, i) => queries.set(q, queryVectors[i]!));
    for (const [i, ts] of textsOf) puts.set(i, ts.map((t) => docVectors[distinct.get(t)!]!));
    return { puts, queries };
  }

  private toWire(op: Operation, kind: Kind, vectors: number[][] | undefined, queries: Map<string, number[]>): Wire {
    const refresh = (r: boolean | undefined) => r ?? this.ttlConfig?.refreshOnRead ?? true;
    switch (kind) {
      case "get": {
        const get = op as StoreGetOperation;
        return { op: "get", namespace: get.namespace, key: get.key, refresh_ttl: refresh(get.refreshTtl) };
      }
      case "put": {
        const put = op as StorePutOperation;
        const w: Wire = { op: "put", namespace: put.namespace, key: put.key };
        if (put.value !== null && put.value !== undefined) {
          w.value = dumpJSON(put.value, "value");
          if (vectors) w.vectors = vectors.map(vectorBytes);
          const ttl = put.ttl === undefined ? this.ttlConfig?.defaultTtl : put.ttl;
          if (ttl !== undefined && ttl !== null) w.ttl = positiveMinutes(ttl, "ttl");
        }
        return w;
      }
      case "search": {
        const search = op as StoreSearchOperation;
        const w: Wire = {
          op: "search",
          namespace_prefix: search.namespacePrefix,
          limit: search.limit ?? 10,
          offset: search.offset ?? 0,
          refresh_ttl: refresh(search.refreshTtl),
        };
        if (search.filter && Object.keys(search.filter).length > 0) w.filter = dumpJSON(search.filter, "filter");
        if (search.query && queries.has(search.query)) w.query = vectorBytes(queries.get(search.query)!);
        return w;
      }
      case "list": {
        const list = op as ListNamespacesOperation;
        const w: Wire = { op: "list_namespaces", limit: list.limit ?? 100, offset: list.offset ?? 0 };
        if (list.matchConditions?.length) {
          w.match_conditions = list.matchConditions.map((c) => ({ match_type: c.matchType, path: c.path }));
        }
        if (list.maxDepth !== undefined && list.maxDepth !== null) w.max_depth = list.maxDepth;
        return w;
      }
    }
  }
}

/**
 * A vector as the service takes it: little-endian float32s, a msgpack bin
 * (docs/api.md), 4 bytes a number instead of 9 and nothing to decode one by
 * one. A vector holding something other than numbers goes as it is, for the
 * service to refuse; a number past float32's range becomes an infinity,
 * which it refuses as it refused the number.
 */
export function vectorBytes(v: number[]): Uint8Array | number[] {
  if (!v.every((x) => typeof x === "number")) return v;
  const out = new Uint8Array(4 * v.length);
  const view = new DataView(out.buffer);
  v.forEach((x, i) => view.setFloat32(4 * i, x, true));
  return out;
}

function positiveMinutes(value: number, what: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${what} must be a positive number of minutes`);
  }
  return value;
}

/** A value or filter as the JSON text the service keeps (UTF-8 bytes, a msgpack bin). */
function dumpJSON(value: unknown, what: string): Uint8Array {
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v === "number" && !Number.isFinite(v)) throw new TypeError(`the ${what} holds ${v}, which JSON cannot hold`);
    return v;
  });
  if (text === undefined) throw new TypeError(`the ${what} is not JSON`);
  return new TextEncoder().encode(text);
}

function loadJSON(value: unknown): Record<string, unknown> {
  let parsed: unknown = value;
  if (value instanceof Uint8Array) parsed = JSON.parse(new TextDecoder().decode(value));
  else if (typeof value === "string") parsed = JSON.parse(value);
  if (!isRecord(parsed)) throw new BadResponseError("bad_response", "an item's value is not a JSON object");
  return parsed;
}

function dateOf(value: unknown): Date {
  const d = typeof value === "string" ? new Date(value) : new Date(Number.NaN);
  if (Number.isNaN(d.getTime())) throw new BadResponseError("bad_response", `not a time: ${JSON.stringify(value)}`);
  return d;
}

function itemFromWire(w: unknown, search: boolean): Item | SearchItem {
  if (!isRecord(w) || !Array.isArray(w.namespace) || typeof w.key !== "string") {
    throw new BadResponseError("bad_response", "malformed item");
  }
  const item: Item = {
    namespace: w.namespace.map(String),
    key: w.key,
    value: loadJSON(w.value),
    createdAt: dateOf(w.created_at),
    updatedAt: dateOf(w.updated_at),
  };
  if (!search) return item;
  return { ...item, score: typeof w.score === "number" ? w.score : undefined };
}

function resultsFromWire(kinds: Kind[], answer: unknown): unknown[] {
  const results = isRecord(answer) ? answer.results : undefined;
  if (!Array.isArray(results) || results.length !== kinds.length) {
    throw new BadResponseError(
      "bad_response",
      `the service answered ${Array.isArray(results) ? results.length : "no"} results for ${kinds.length} ops`,
    );
  }
  return kinds.map((kind, i) => {
    const r = isRecord(results[i]) ? results[i] : {};
    switch (kind) {
      case "get":
        return r.item ? itemFromWire(r.item, false) : null;
      case "search":
        return asArray(r.items).map((w) => itemFromWire(w, true));
      case "list":
        return asArray(r.namespaces).map((ns) => asArray(ns).map(String));
      default:
        return null;
    }
  });
}

function asArray(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new BadResponseError("bad_response", "expected a list");
  return value;
}

// The texts of a value at a path, as LangGraph.js's InMemoryStore extracts
// them (its store/utils, which the package does not export; the exported
// getTextAtPath is an older, narrower one). Python's get_text_at_path reads
// the same paths.

/** A JSON path in tokens: "chapters[*].content" -> ["chapters", "[*]", "content"]. */
export function tokenizePath(path: string): string[] {
  const tokens: string[] = [];
  let current = "";
  for (let i = 0; i < path.length; ) {
    const c = path[i]!;
    if (c === "[" || c === "{") {
      const close = c === "[" ? "]" : "}";
      if (current) tokens.push(current);
      current = "";
      let depth = 1;
      let token = c;
      for (i += 1; i < path.length && depth > 0; i += 1) {
        if (path[i] === c) depth += 1;
        else if (path[i] === close) depth -= 1;
        token += path[i];
      }
      tokens.push(token);
      continue;
    }
    if (c === ".") {
      if (current) tokens.push(current);
      current = "";
    } else current += c;
    i += 1;
  }
  if (current) tokens.push(current);
  return tokens;
}

/** The texts at a tokenized path ("$": the whole value as indented JSON). */
export function getTextAtPath(obj: unknown, tokens: string[]): string[] {
  return textsAt(obj, tokens, 0);
}

function leafText(v: unknown): string[] {
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return [String(v)];
  if (v === null || v === undefined) return [];
  if (typeof v === "object") return [JSON.stringify(v, null, 2)];
  return [];
}

function textsAt(obj: unknown, tokens: string[], pos: number): string[] {
  if (pos >= tokens.length) return leafText(obj);
  const token = tokens[pos]!;
  const out: string[] = [];
  if (pos === 0 && token === "$") out.push(JSON.stringify(obj, null, 2));
  if (token.startsWith("[") && token.endsWith("]")) {
    if (!Array.isArray(obj)) return [];
    const index = token.slice(1, -1);
    if (index === "*") for (const item of obj) out.push(...textsAt(item, tokens, pos + 1));
    else {
      let idx = Number.parseInt(index, 10);
      if (idx < 0) idx = obj.length + idx;
      if (idx >= 0 && idx < obj.length) out.push(...textsAt(obj[idx], tokens, pos + 1));
    }
  } else if (token.startsWith("{") && token.endsWith("}")) {
    if (typeof obj !== "object" || obj === null) return [];
    for (const field of token.slice(1, -1).split(",").map((f) => f.trim())) {
      let current: unknown = obj;
      for (const part of tokenizePath(field)) {
        if (current && typeof current === "object" && part in current) current = (current as Record<string, unknown>)[part];
        else {
          current = undefined;
          break;
        }
      }
      // As InMemoryStore: a null field here is the text "null".
      if (current === null) out.push("null");
      else if (current !== undefined) out.push(...leafText(current));
    }
  } else if (token === "*") {
    if (Array.isArray(obj)) for (const item of obj) out.push(...textsAt(item, tokens, pos + 1));
    else if (typeof obj === "object" && obj !== null) for (const v of Object.values(obj)) out.push(...textsAt(v, tokens, pos + 1));
  } else if (typeof obj === "object" && obj !== null && token in obj) {
    out.push(...textsAt((obj as Record<string, unknown>)[token], tokens, pos + 1));
  }
  return out;
}
