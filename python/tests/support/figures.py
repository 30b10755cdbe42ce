"""Reliability figures: what the fault, kill and load tests measured, for quoting.

Printed in the terminal summary, even under -q, and kept in
.cache/reliability/figures-<store>.txt.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from support import REPO

# The store the services under test run on (make test-aws sets dynamodb).
# bolt is the embedded store's former name, which the service still accepts.
STORE = {"bolt": "embedded"}.get(os.environ.get("SAVER_STORE") or "embedded", os.environ.get("SAVER_STORE") or "embedded")
FIGURES: list[str] = []

dynamodb_only = pytest.mark.skipif(
    STORE != "dynamodb",
    reason="DynamoDB/S3 faults: runs when the suite runs on the dynamodb store (make test-aws)",
)


def report(line: str) -> None:
    """Record a figure for the terminal summary."""
    FIGURES.append(f"[{STORE}] {line}")


def summarize(terminalreporter: Any) -> None:
    """Print the figures recorded and keep them in the repository's .cache."""
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for line in FIGURES:
        terminalreporter.write_line(line)
    out = REPO / ".cache" / "reliability" / f"figures-{STORE}.txt"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(FIGURES) + "\n")
    except OSError:
        pass
