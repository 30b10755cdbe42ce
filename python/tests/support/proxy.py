"""TCP proxies on loopback that can be switched off: a crashed server, a load balancer."""

from __future__ import annotations

import random
import socket
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from support.processes import STOP_TIMEOUT, free_port


class TcpProxy:
    """A TCP forwarder on a fixed loopback port that can be switched off, which
    refuses new connections and cuts open ones as a crashed server would, and
    on again on the same port."""

    def __init__(self, target: str) -> None:
        host, port = urlsplit(target).hostname, urlsplit(target).port
        assert host and port, target
        self.target = (host, port)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        ln = socket.socket()
        ln.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ln.bind(("127.0.0.1", self.port))
        ln.listen(64)
        self._listener = ln
        self._spawn(self._accept, ln)

    def _spawn(self, fn: Callable[..., None], *args: Any) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        with self._lock:
            self._threads.append(t)

    def _accept(self, ln: socket.socket) -> None:
        while True:
            try:
                client, _ = ln.accept()
            except OSError:
                return  # switched off
            upstream = self._connect()
            if upstream is None:
                client.close()
                continue
            with self._lock:
                self._conns |= {client, upstream}
            self._serve(client, upstream)

    def _connect(self) -> socket.socket | None:
        """The upstream side of a new connection; None if the target refused it."""
        return _connect(self.target)

    def _serve(self, client: socket.socket, upstream: socket.socket) -> None:
        self._spawn(self._pump, client, upstream)
        self._spawn(self._pump, upstream, client)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self) -> None:
        """Switch off: the port refuses connections, open ones are cut."""
        ln, self._listener = self._listener, None
        if ln is not None:
            try:
                ln.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            ln.close()
        with self._lock:
            conns, self._conns = self._conns, set()
            threads, self._threads = self._threads, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        for t in threads:
            t.join(timeout=STOP_TIMEOUT)


class SpreadProxy(TcpProxy):
    """A TCP proxy in front of several replicas, as a load balancer is: each
    connection goes to a replica picked at random, or to another one when
    that one refuses it (killed, or not listening yet). A client that sends
    `Connection: close` has every request spread. `served` counts the
    connections each replica took."""

    def __init__(self, targets: list[str], seed: int) -> None:
        super().__init__(targets[0])
        self.targets = []
        for t in targets:
            host, port = urlsplit(t).hostname, urlsplit(t).port
            assert host and port, t
            self.targets.append((host, port))
        self.served: Counter[int] = Counter()
        self._rng = random.Random(seed)

    def _connect(self) -> socket.socket | None:
        with self._lock:
            order = self._rng.sample(self.targets, len(self.targets))
        for target in order:
            if (upstream := _connect(target)) is not None:
                with self._lock:
                    self.served[target[1]] += 1
                return upstream
        return None

    def _serve(self, client: socket.socket, upstream: socket.socket) -> None:
        threading.Thread(target=self._relay, args=(client, upstream), daemon=True).start()

    def _relay(self, client: socket.socket, upstream: socket.socket) -> None:
        """Pump both ways until either side ends, then close both: a proxy
        that serves a connection per request must not keep them."""
        back = threading.Thread(target=self._pump, args=(upstream, client), daemon=True)
        back.start()
        self._pump(client, upstream)
        back.join()
        with self._lock:
            self._conns -= {client, upstream}
        client.close()
        upstream.close()


def _connect(target: tuple[str, int]) -> socket.socket | None:
    try:
        upstream = socket.create_connection(target, timeout=5)
        upstream.settimeout(None)
    except OSError:
        return None
    return upstream
