"""The benchmark's infrastructure: the local AWS stack, PostgreSQL, the counting
proxy, saver services, and the six savers built on them.

Everything runs on 127.0.0.1 and is started by the project's own scripts
(bench/aws.sh wraps localstack/up.sh, bench/pg.sh); `Stack.close()` stops it
all, in reverse order, whatever happened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "bench"
BIN = CACHE / "bin"
SAVER_BIN = ROOT / "bin" / "saver"
AWS_ENV = CACHE / "aws" / ".cache" / "localstack" / "env"
PG_ENV = CACHE / "pg" / "env"

STARTUP_TIMEOUT = 60.0  # seconds for anything we start to answer

# Display order and names of the savers compared.
SAVERS = {
    "ours_bolt": "HTTPSaver (embedded)",
    "ours_dynamo": "HTTPSaver (DynamoDB)",
    "aws": "DynamoDBSaver (AWS)",
    "postgres": "PostgresSaver",
    "sqlite": "SqliteSaver",
    "memory": "InMemorySaver",
}


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def poll(what: str, ready: Callable[[], bool], alive: Callable[[], bool] | None = None) -> None:
    """Wait until ready() is true, failing when the process dies or time runs out."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not ready():
        if alive is not None and not alive():
            raise RuntimeError(f"{what} exited during startup")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready within {STARTUP_TIMEOUT:.0f}s")
        time.sleep(0.05)


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return 200 <= resp.status < 300
    except OSError:
        return False


def read_env_file(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ")
        key, _, value = line.partition("=")
        env[key] = value
    return env


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have used so far."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICK


def children(ppid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == ppid:
            out.append(int(stat.parent.name))
    return out


def remove_store(db: Path) -> None:
    """Removes an embedded store left by an earlier run: a Pebble directory,
    or a bbolt file from before the store moved to Pebble (which the service
    would open, and the run would measure bbolt)."""
    if db.is_dir():
        shutil.rmtree(db)
    else:
        db.unlink(missing_ok=True)


@dataclass
class Process:
    """A child process in its own process group, stopped with SIGTERM then SIGKILL."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def peak_rss_kb(self) -> int | None:
        """VmHWM of the process: its peak resident memory so far."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        except OSError:
            return None
        return None

    def stop(self) -> None:
        if self.alive():
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.popen.wait(timeout=10)


def spawn(name: str, argv: list[str], env: dict[str, str] | None = None) -> Process:
    logs = CACHE / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{name}.log"
    with open(log_path, "wb") as out:
        popen = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
    return Process(name, popen, log_path)


@dataclass
class Service:
    """A running `saver serve` (or profserve, with its second port)."""

    proc: Process
    url: str
    pprof: str = ""


@dataclass
class Stack:
    """What the benchmark runs against; close() stops everything started."""

    run_id: str
    aws_env: dict[str, str] = field(default_factory=dict)
    pg_dsn: str = ""
    proxy: dict[str, str] = field(default_factory=dict)  # dynamodb, s3, control addrs
    _stack: ExitStack = field(default_factory=ExitStack)
    _services: int = 0

    def close(self) -> None:
        self._stack.close()

    # -- external services (project scripts) ---------------------------------

    def start_aws(self) -> None:
        self._stack.callback(subprocess.run, [str(ROOT / "bench" / "aws.sh"), "down"], check=False)
        subprocess.run([str(ROOT / "bench" / "aws.sh"), "up"], check=True)
        self.aws_env = read_env_file(AWS_ENV)
        log(f"AWS stack: DynamoDB {self.aws_env['AWS_ENDPOINT_URL_DYNAMODB']}, "
            f"S3 ({self.aws_env.get('SAVER_LOCAL_S3', '?')}) {self.aws_env['AWS_ENDPOINT_URL_S3']}")
        os.environ.update({k: v for k, v in self.aws_env.items() if not k.startswith("AWS_ENDPOINT")})

    def dynamodb_pids(self) -> list[int]:
        f = AWS_ENV.parent / "dynamodb.pid"
        return [int(f.read_text())] if f.exists() else []

    def postgres_pids(self) -> list[int]:
        f = CACHE / "pg" / "data" / "postmaster.pid"
        if not f.exists():
            return []
        pm = int(f.read_text().split()[0])
        return [pm, *children(pm)]

    def start_pg(self) -> None:
        self._stack.callback(subprocess.run, [str(ROOT / "bench" / "pg.sh"), "down"], check=False)
        subprocess.run([str(ROOT / "bench" / "pg.sh"), "up"], check=True)
        self.pg_dsn = read_env_file(PG_ENV)["BENCH_PG_DSN"]

    def start_proxy(self) -> None:
        """The counting proxy in front of the emulators (for request/byte counts)."""
        addr_file = CACHE / "awsproxy.addr"
        addr_file.unlink(missing_ok=True)
        proc = spawn(
            "awsproxy",
            [
                str(BIN / "awsproxy"),
                "-dynamodb", self.aws_env["AWS_ENDPOINT_URL_DYNAMODB"],
                "-s3", self.aws_env["AWS_ENDPOINT_URL_S3"],
                "-addr-file", str(addr_file),
            ],
        )
        self._stack.callback(proc.stop)
        poll("awsproxy", addr_file.exists, proc.alive)
        self.proxy = json.loads(addr_file.read_text())

    def counts(self) -> dict[str, dict[str, dict[str, int]]]:
        url = f"http://{self.proxy['control']}/counts"
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.load(resp)

    def reset_counts(self) -> None:
        req = urllib.request.Request(f"http://{self.proxy['control']}/reset", method="POST")
        urllib.request.urlopen(req, timeout=10).close()

    def set_delay(self, ms: float) -> None:
        """Add ms before each DynamoDB request through the proxy (simulated network)."""
        req = urllib.request.Request(f"http://{self.proxy['control']}/delay?ms={ms}", method="POST")
        urllib.request.urlopen(req, timeout=10).close()

    def endpoints(self, counted: bool) -> tuple[str, str]:
        """DynamoDB and S3 endpoint URLs, through the counting proxy or direct."""
        if counted:
            return f"http://{self.proxy['dynamodb']}", f"http://{self.proxy['s3']}"
        return self.aws_env["AWS_ENDPOINT_URL_DYNAMODB"], self.aws_env["AWS_ENDPOINT_URL_S3"]

    # -- our service ------------------------------------------------------------

    def start_service(self, store: str, *, counted: bool = False, name: str = "") -> Service:
        """Start `saver serve` on a free port: store "bolt" or "dynamodb"."""
        self._services += 1
        name = name or f"saver-{store}-{self._services}"
        work = CACHE / "run" / name
        work.mkdir(parents=True, exist_ok=True)
        addr_file = work / "addr"
        addr_file.unlink(missing_ok=True)
        argv = [str(SAVER_BIN), "serve", "-addr", "127.0.0.1:0", "-addr-file", str(addr_file)]
        env = {"LOG_LEVEL": "warn"}
        if store == "bolt":
            db = work / "saver.db"
            remove_store(db)
            argv += ["-db", str(db)]
        else:
            ddb, s3 = self.endpoints(counted)
            table = f"bench-ours-{self.run_id}"
            env.update(
                SAVER_STORE="dynamodb",
                SAVER_TABLE=table,
                SAVER_BUCKET=table,
                SAVER_INIT="true",
                # Same retention as the AWS saver's ttl_seconds below.
                SAVER_PERSISTENT_TTL="24h",
                AWS_ENDPOINT_URL_DYNAMODB=ddb,
                AWS_ENDPOINT_URL_S3=s3,
            )
        proc = spawn(name, argv, env)
        self._stack.callback(proc.stop)

        def addr() -> str:
            text = addr_file.read_text().strip() if addr_file.exists() else ""
            return text if text.rpartition(":")[2].isdigit() else ""

        poll(name, lambda: bool(addr()), proc.alive)
        url = f"http://{addr()}"
        poll(f"{name} readiness", lambda: http_ok(url + "/readyz"), proc.alive)
        return Service(proc, url)

    def start_profserve(self, store: str) -> Service:
        """bench/profserve on a free port (see its doc): store "null" keeps
        nothing; `pprof` is its second port, which also answers /echo."""
        self._services += 1
        work = CACHE / "run" / f"profserve-{store}-{self._services}"
        work.mkdir(parents=True, exist_ok=True)
        addr, paddr = work / "addr", work / "pprof"
        for f in (addr, paddr):
            f.unlink(missing_ok=True)
        argv = [str(BIN / "profserve"), "-store", store, "-addr-file", str(addr), "-pprof-addr-file", str(paddr)]
        if store == "bolt":
            argv += ["-db", str(work / "saver.db")]
        proc = spawn(f"profserve-{store}", argv)
        self._stack.callback(proc.stop)
        poll("profserve", lambda: addr.exists() and paddr.exists(), proc.alive)
        svc = Service(proc, "http://" + addr.read_text().strip())
        svc.pprof = paddr.read_text().strip()
        return svc

    # -- AWS's saver's table ------------------------------------------------------

    def create_aws_table(self) -> str:
        """Table (PK/SK strings, on demand, TTL on `ttl`) and bucket for DynamoDBSaver."""
        import boto3

        name = f"bench-aws-{self.run_id}"
        ddb_url, s3_url = self.endpoints(False)
        ddb = boto3.client("dynamodb", endpoint_url=ddb_url)
        ddb.create_table(
            TableName=name,
            AttributeDefinitions=[
                {"AttributeName": "PK", "AttributeType": "S"},
                {"AttributeName": "SK", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "PK", "KeyType": "HASH"},
                {"AttributeName": "SK", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1})
        ddb.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
        )
        boto3.client("s3", endpoint_url=s3_url).create_bucket(Bucket=name)
        return name


# -- the savers ------------------------------------------------------------------


@dataclass
class Savers:
    """The six savers, built once per run; `counted` ones talk through the proxy."""

    savers: dict[str, Any]
    counted: dict[str, Any]
    services: dict[str, Service]
    closers: list[Callable[[], None]]

    def backend_pids(self, name: str, stack: Stack) -> tuple[list[int], list[int]]:
        """The processes that do a saver's storage work outside this one:
        (our service, the database)."""
        pids = {
            "ours_bolt": ([self.services["ours_bolt"].proc.pid], []),
            "ours_dynamo": ([self.services["ours_dynamo"].proc.pid], stack.dynamodb_pids()),
            "aws": ([], stack.dynamodb_pids()),
            "postgres": ([], stack.postgres_pids()),
        }
        return pids.get(name, ([], []))

    def close(self) -> None:
        for close in reversed(self.closers):
            try:
                close()
            except Exception as exc:  # keep closing the others
                log(f"closing a saver failed: {exc!r}")


def build_savers(stack: Stack) -> Savers:
    from botocore.config import Config
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph_checkpoint_aws import DynamoDBSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from saver_client import HTTPSaver

    closers: list[Callable[[], None]] = []
    services = {
        "ours_bolt": stack.start_service("bolt", name="saver-bolt"),
        "ours_dynamo": stack.start_service("dynamodb", name="saver-dynamo"),
        "ours_dynamo_counted": stack.start_service("dynamodb", counted=True, name="saver-dynamo-counted"),
    }
    table = stack.create_aws_table()

    def aws_saver(counted: bool) -> DynamoDBSaver:
        ddb, s3 = stack.endpoints(counted)
        return DynamoDBSaver(
            table_name=table,
            region_name=stack.aws_env["AWS_REGION"],
            endpoint_url=ddb,
            # A pool as large as the most concurrent callers, so that 16
            # threads do not queue on (or churn) boto's default 10.
            boto_config=Config(max_pool_connections=32),
            ttl_seconds=86400,
            s3_offload_config={"bucket_name": table, "endpoint_url": s3},
        )

    pool = ConnectionPool(
        stack.pg_dsn,
        min_size=1,
        max_size=16,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    closers.append(pool.close)
    postgres = PostgresSaver(pool)  # type: ignore[arg-type]
    postgres.setup()

    sqlite_path = CACHE / "run" / "sqlite" / "checkpoints.db"
    sqlite_path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{sqlite_path}{suffix}").unlink(missing_ok=True)
    conn = sqlite3.connect(sqlite_path, check_same_thread=False)
    closers.append(conn.close)
    sqlite = SqliteSaver(conn)
    sqlite.setup()

    ours_bolt = HTTPSaver(services["ours_bolt"].url)
    ours_dynamo = HTTPSaver(services["ours_dynamo"].url)
    ours_counted = HTTPSaver(services["ours_dynamo_counted"].url)
    closers += [ours_bolt.close, ours_dynamo.close, ours_counted.close]
    savers = {
        "ours_bolt": ours_bolt,
        "ours_dynamo": ours_dynamo,
        "aws": aws_saver(False),
        "postgres": postgres,
        "sqlite": sqlite,
        "memory": InMemorySaver(),
    }
    counted = {"ours_dynamo": ours_counted, "aws": aws_saver(True)}
    return Savers(savers, counted, services, closers)
