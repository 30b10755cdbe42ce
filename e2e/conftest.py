"""Fixtures: the saver service under test, and what these tests share with the client's.

These tests are about the service itself, driven through the Python client:
its /ui in a browser, TLS, metrics, kill -9 and SIGTERM under load, restarts,
replicas on one table, concurrent calls, large values, DynamoDB and S3
failing. What they share with the client's tests (python/tests), the
fixtures among it, lives in one place, python/tests/support/, imported from
here. `make test-e2e` runs them with the client's pytest settings
(python/pyproject.toml).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))

pytest_plugins = ["support.fixtures"]
