/**
 * The saver service under test: the binary named by SAVER_BIN (default
 * ../bin/saver) on a free loopback port and a temporary database, restartable
 * on the same port and data, as python/tests/support/processes.py runs it. The store is
 * whatever the environment says (make test-aws sets SAVER_STORE=dynamodb and
 * the table); `env` adds variables for one process.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, readFileSync, closeSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

// Bounds for waiting on the service; generous because CI machines are small.
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
const POLL_MS = 20;

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(here, "..", "..");

export function saverBinary(): string {
  return process.env.SAVER_BIN || join(REPO, "bin", "saver");
}

/** The store the services under test run on. */
export const STORE = process.env.SAVER_STORE === "bolt" ? "embedded" : process.env.SAVER_STORE || "embedded"; // bolt: its former name

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function waitUntil(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = START_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await sleep(POLL_MS);
  }
}

async function ready(url: string): Promise<boolean> {
  try {
    const r = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
    await r.arrayBuffer();
    return r.status === 200;
  } catch {
    return false;
  }
}

export class ServiceProcess {
  readonly workdir: string;
  url = "";
  private proc: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private starts = 0;

  constructor(
    private readonly env: Record<string, string> = {},
    workdir?: string,
  ) {
    this.workdir = workdir ?? mkdtempSync(join(tmpdir(), "saver-js-"));
    mkdirSync(this.workdir, { recursive: true });
  }

  get log(): string {
    return join(this.workdir, "service.log");
  }

  get port(): number {
    return Number(this.url.slice(this.url.lastIndexOf(":") + 1));
  }

  get running(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Start the service and wait until it is ready; return its base URL. */
  async start(addr = "127.0.0.1:0"): Promise<string> {
    if (this.running) throw new Error("already running");
    this.starts += 1;
    const addrFile = join(this.workdir, `addr-${this.starts}`);
    const log = openSync(this.log, "a");
    const proc = spawn(
      saverBinary(),
      ["serve", "-addr", addr, "-addr-file", addrFile, "-db", join(this.workdir, "saver.db")],
      { stdio: ["ignore", log, log], env: { ...process.env, ...this.env } },
    );
    closeSync(log);
    this.proc = proc;
    this.exited = new Promise((r) => proc.once("exit", () => r()));
    const deadline = Date.now() + START_TIMEOUT_MS;
    let url = "";
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`saver exited before it was ready:\n${this.logTail()}`);
      if (!url) {
        let text = "";
        try {
          text = readFileSync(addrFile, "utf8").trim();
        } catch {
          // not written yet
        }
        // A half-written file has no port yet; read it again next time.
        if (/:\d+$/.test(text)) url = `http://${text}`;
      }
      if (url && (await ready(url))) {
        this.url = url;
        return url;
      }
      await sleep(POLL_MS);
    }
    await this.kill();
    throw new Error(`saver not ready after ${START_TIMEOUT_MS}ms:\n${this.logTail()}`);
  }

  /** Kill -9: no graceful shutdown, as in a crash. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.proc!.kill("SIGKILL");
    await this.exited;
  }

  /** Graceful stop, escalating to kill -9 if it hangs. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.proc!.kill("SIGTERM");
    const timer = setTimeout(() => this.proc?.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await this.exited;
    clearTimeout(timer);
  }

  /** Kill -9 and start again on the same data and port, so clients reconnect unaided. */
  async crashAndRestart(): Promise<string> {
    const port = this.port;
    await this.kill();
    return this.start(`127.0.0.1:${port}`);
  }

  /** Stop and remove the working directory. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.workdir, { recursive: true, force: true });
  }

  logTail(lines = 40): string {
    try {
      return readFileSync(this.log, "utf8").split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log)";
    }
  }
}
