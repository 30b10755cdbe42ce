/**
 * The client's HTTP behaviour against a stub server it cannot fool: retries
 * on 503 and connection errors (with one request id), Retry-After, timeouts,
 * credentials, error mapping, JSON answers, and the error for a service
 * older than the client, without the delta-history route.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { encode } from "@msgpack/msgpack";
import { DeltaSnapshot, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { inject } from "vitest";

import {
  HTTPSaver,
  InternalServerError,
  InvalidRequestError,
  NoRouteError,
  SaverConnectionError,
  UnauthorizedError,
  UnavailableError,
  VERSION,
} from "../src/index.js";
import { readFileSync } from "node:fs";

type Handler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void | Promise<void>;

interface Stub {
  url: string;
  seen: { method: string; url: string; headers: IncomingMessage["headers"] }[];
  close(): Promise<void>;
}

async function stub(handler: Handler): Promise<Stub> {
  const seen: Stub["seen"] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers });
      void handler(req, Buffer.concat(chunks), res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const data = body === undefined ? Buffer.alloc(0) : Buffer.from(encode(body));
  res.writeHead(status, { "Content-Type": "application/msgpack", "Content-Length": data.length, ...headers });
  res.end(data);
}

const quiet = { warn: () => {} };
const fast = { backoffMs: 1, maxBackoffMs: 5 };

it("retries a 503 as Retry-After says, with one request id for every try", async () => {
  let calls = 0;
  const s = await stub((_req, _body, res) => {
    calls += 1;
    if (calls < 3) send(res, 503, { error: { code: "unavailable", message: "throttled" } }, { "Retry-After": "0" });
    else send(res, 200, { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c" });
  });
  try {
    const saver = new HTTPSaver(s.url, { apiKey: "k-123", retry: fast, logger: quiet });
    await saver.put({ configurable: { thread_id: "t" } }, { ...emptyCheckpoint(), id: "c" }, { source: "input", step: -1, parents: {} }, {});
    expect(calls).toBe(3);
    const ids = new Set(s.seen.map((r) => r.headers["x-request-id"]));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^[0-9a-f]{32}$/);
    expect(s.seen[0]!.headers.authorization).toBe("Bearer k-123");
    expect(s.seen[0]!.headers["content-type"]).toBe("application/msgpack");
    expect(s.seen[0]!.headers["user-agent"]).toBe(`saver-client-js/${VERSION}`);
  } finally {
    await s.close();
  }
});

it("gives up after maxAttempts with the last error, and never retries a 400", async () => {
  let calls = 0;
  const s = await stub((req, _body, res) => {
    calls += 1;
    if (req.url!.startsWith("/v1/threads/bad")) {
      send(res, 400, { error: { code: "invalid", message: "bad thread" } }, { "X-Request-ID": "rid-1" });
    } else send(res, 503, { error: { code: "unavailable", message: "down" } });
  });
  try {
    const saver = new HTTPSaver(s.url, { retry: { ...fast, maxAttempts: 3 }, logger: quiet });
    const err = await saver.deleteThread("t").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect(calls).toBe(3);
    calls = 0;
    const bad = await saver.deleteThread("bad").catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidRequestError);
    expect((bad as InvalidRequestError).requestId).toBe("rid-1");
    expect((bad as InvalidRequestError).detail).toBe("bad thread");
    expect(calls).toBe(1);
  } finally {
    await s.close();
  }
});

it("retries a refused connection, then reports it", async () => {
  const s = await stub(() => {});
  const url = s.url;
  await s.close(); // nothing listens there now
  const warnings: string[] = [];
  const saver = new HTTPSaver(url, { retry: { ...fast, maxAttempts: 3 }, logger: { warn: (m) => warnings.push(m) } });
  const err = await saver.ping().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SaverConnectionError);
  expect((err as Error).message).toMatch(/ECONNREFUSED/);
  expect(warnings).toHaveLength(2);
});

it("times out a request that gets no answer", async () => {
  const s = await stub(() => {}); // never answers
  try {
    const saver = new HTTPSaver(s.url, { timeoutMs: 200, retry: { maxAttempts: 1 }, logger: quiet });
    const err = await saver.ping().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SaverConnectionError);
    expect((err as Error).message).toContain("no answer within 200ms");
  } finally {
    await s.close();
  }
});

it("maps errors without a code by status, and reads JSON answers with base64 bytes", async () => {
  const s = await stub((req, _body, res) => {
    if (req.url!.startsWith("/v1/threads/html")) {
      res.writeHead(502, { "Content-Type": "text/html" });
      res.end("<html>bad gateway</html>");
    } else if (req.url!.startsWith("/v1/threads/gone")) {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end("404 page not found");
    } else if (req.url!.startsWith("/v1/threads/key")) {
      send(res, 401, { error: { code: "unauthorized", message: "no key" } });
    } else {
      const typed = (v: unknown) => ({ type: "json", data: Buffer.from(JSON.stringify(v)).toString("base64") });
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(
        JSON.stringify({
          thread_id: "t", checkpoint_ns: "", checkpoint_id: "c", parent_checkpoint_id: "",
          checkpoint: typed({ v: 4, id: "c", ts: "x", channel_versions: { a: 1 }, versions_seen: {} }),
          metadata: { source: "loop", step: 1, parents: {} },
          values: [{ channel: "a", version: "1", value: typed(["x"]) }],
          writes: [{ task_id: "w", task_path: "", idx: 0, channel: "a", value: typed("y") }],
        }),
      );
    }
  });
  try {
    const saver = new HTTPSaver({ url: s.url, retry: { maxAttempts: 1 }, logger: quiet });
    expect(await saver.deleteThread("html").catch((e: unknown) => e)).toBeInstanceOf(InternalServerError);
    expect(await saver.deleteThread("gone").catch((e: unknown) => e)).toBeInstanceOf(NoRouteError);
    expect(await saver.deleteThread("key").catch((e: unknown) => e)).toBeInstanceOf(UnauthorizedError);
    const t = await saver.getTuple({ configurable: { thread_id: "t" } });
    expect(t?.checkpoint.channel_values).toEqual({ a: ["x"] });
    expect(t?.pendingWrites).toEqual([["w", "a", "y"]]);
    expect(t?.parentConfig).toBeUndefined();
  } finally {
    await s.close();
  }
});

it("takes the URL and key from SAVER_URL and SAVER_API_KEY", async () => {
  const s = await stub((_req, _body, res) => send(res, 200, { status: "ok" }));
  const old = { url: process.env.SAVER_URL, key: process.env.SAVER_API_KEY };
  process.env.SAVER_URL = s.url;
  process.env.SAVER_API_KEY = "from-env";
  try {
    const saver = new HTTPSaver();
    expect(saver.url).toBe(s.url);
    await saver.ping();
    expect(s.seen.map((r) => r.headers.authorization)).toEqual(["Bearer from-env", "Bearer from-env"]);
  } finally {
    if (old.url === undefined) delete process.env.SAVER_URL;
    else process.env.SAVER_URL = old.url;
    if (old.key === undefined) delete process.env.SAVER_API_KEY;
    else process.env.SAVER_API_KEY = old.key;
    await s.close();
  }
  expect(() => new HTTPSaver({ url: "ftp://x" })).toThrow(/http/);
});

it("says the service is older than the client when it has no delta-history route, and walks nothing", async () => {
  const live = inject("saverUrl");
  // Everything goes to the live service, except the delta-history route.
  const s = await stub(async (req, body, res) => {
    if (req.url!.endsWith("/delta-history")) {
      send(res, 404, { error: { code: "no_route", message: "no such route" } }, { "X-Request-ID": "rid-old" });
      return;
    }
    const upstream = await fetch(live + req.url!, {
      method: req.method,
      headers: req.headers as Record<string, string>,
      body: body.length ? body : undefined,
    });
    const data = Buffer.from(await upstream.arrayBuffer());
    res.writeHead(upstream.status, Object.fromEntries(upstream.headers.entries()));
    res.end(data);
  });
  try {
    const warnings: string[] = [];
    const old = new HTTPSaver(s.url, { logger: { warn: (m) => warnings.push(m) } });
    const direct = new HTTPSaver(live);
    const put = (parent: object, values: Record<string, unknown>) => {
      const versions = Object.fromEntries(Object.keys(values).map((k) => [k, 1]));
      return direct.put(parent, { ...emptyCheckpoint(), id: uuid6(3), channel_values: values, channel_versions: versions }, { source: "loop", step: 0, parents: {} }, versions);
    };
    const c0 = await put({ configurable: { thread_id: `delta-${uuid6(3)}` } }, { messages: new DeltaSnapshot([0]) });
    await direct.putWrites(c0, [["messages", [1]]], "task0");
    const c1 = await put(c0, {});
    await direct.putWrites(c1, [["messages", [2]]], "task1");
    const c2 = await put(c1, {});
    // The live service answers it, so the stub's 404 is the route's absence alone.
    expect((await direct.getDeltaChannelHistory({ config: c2, channels: ["messages"] })).messages!.writes).toHaveLength(2);
    for (let i = 0; i < 2; i++) {
      const err = await old.getDeltaChannelHistory({ config: c2, channels: ["messages"] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NoRouteError);
      const e = err as NoRouteError;
      expect(e.detail).toBe(
        "the saver service has no delta-history route (POST /v1/threads/{thread_id}/delta-history), which " +
          `DeltaChannel histories need: the service is older than this client (saver-client-js ${VERSION}); ` +
          "upgrade the service. (no such route)",
      );
      expect([e.code, e.status, e.requestId]).toEqual(["no_route", 404, "rid-old"]);
    }
    // Each call asked the route once and read no checkpoint: no walk.
    expect(s.seen.map((r) => `${r.method} ${r.url.split("?")[0]!.replace(/^\/v1\/threads\/[^/]+/, "")}`)).toEqual([
      "POST /delta-history",
      "POST /delta-history",
    ]);
    expect(warnings).toEqual([]);
  } finally {
    await s.close();
  }
});

it("sends the version of package.json", () => {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  expect(VERSION).toBe(pkg.version);
});

it("ships as ESM with types: the built package loads by its name in plain Node", async () => {
  // A child Node process: the package's exports map and dist/, as an installer sees them.
  const script = 'import("saver-client").then((m) => console.log(typeof m.HTTPSaver, typeof m.deriveKey, m.VERSION))';
  const { execFileSync } = await import("node:child_process");
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: new URL("..", import.meta.url),
    encoding: "utf8",
  });
  expect(out.trim()).toBe(`function function ${VERSION}`);
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    exports: { ".": { types: string; import: string } };
  };
  expect(readFileSync(new URL(`../${pkg.exports["."].types}`, import.meta.url), "utf8")).toContain("HTTPSaver");
  expect(readFileSync(new URL("../dist/saver.d.ts", import.meta.url), "utf8")).toContain("class HTTPSaver extends BaseCheckpointSaver");
});
