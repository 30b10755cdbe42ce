"""Support for the client's tests (python/tests) and the service's (e2e/): the fixtures,
processes, graphs, the ack log, load, emulators and proxies (one module each)."""

from pathlib import Path

# The repository's root: python/tests/support/ is three folders below it.
REPO = Path(__file__).resolve().parents[3]
