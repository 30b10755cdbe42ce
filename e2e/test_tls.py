"""HTTPSaver over TLS: the service with a certificate, the client verifying it.

The certificate is self-signed for 127.0.0.1 (openssl makes it); the client
trusts it through SSL_CERT_FILE, as a deployment with its own authority would,
and refuses the service without it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from saver_client import HTTPSaver, RetryPolicy, SaverConnectionError

from support.checkpoints import checkpoint, config, meta
from support.processes import START_TIMEOUT, saver_binary, wait_until

FAST = RetryPolicy(max_attempts=2, max_delay=5.0, backoff=0.001, max_backoff=0.01)


@pytest.fixture(scope="module")
def tls_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A service on TLS; yields its https URL and the certificate to trust."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("the TLS test needs openssl to make its certificate")
    work = tmp_path_factory.mktemp("tls")
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-nodes",
         "-subj", "/CN=saver test", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    addr_file = work / "addr"
    env = {**os.environ, "SAVER_TLS_CERT": str(cert), "SAVER_TLS_KEY": str(key), "SAVER_STORE": "embedded"}
    proc = subprocess.Popen(
        [saver_binary(), "serve", "-addr", "127.0.0.1:0", "-addr-file", str(addr_file), "-db", str(work / "s.db")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )
    try:
        wait_until("the TLS service", lambda: addr_file.exists() and addr_file.read_text().strip().rsplit(":", 1)[-1].isdigit(),
                   timeout=START_TIMEOUT)
        yield f"https://{addr_file.read_text().strip()}", cert
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_sync_and_async_over_tls(tls_service: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    url, cert = tls_service
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    thread = f"tls-{uuid.uuid4()}"
    with HTTPSaver(url, retry=FAST) as saver:
        cp = checkpoint()
        stored = saver.put(config(thread), cp, meta(), {})
        saver.put_writes(stored, [("ch", "v")], "task")
        tup = saver.get_tuple(config(thread))
        assert tup is not None and tup.checkpoint["id"] == cp["id"] and tup.pending_writes == [("task", "ch", "v")]

        async def read() -> str:
            got = await saver.aget_tuple(config(thread))
            assert got is not None
            return got.checkpoint["id"]

        assert asyncio.run(read()) == cp["id"]


def test_an_untrusted_certificate_is_refused(tls_service: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = tls_service
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with HTTPSaver(url, retry=FAST) as saver:
        with pytest.raises(SaverConnectionError):
            saver.get_tuple(config("t"))

        async def read() -> None:
            await saver.aget_tuple(config("t"))

        with pytest.raises(SaverConnectionError):
            asyncio.run(read())
