"""examples/payment_workflow.py runs against the service and says what it should."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "payment_workflow.py"


def test_payment_example(saver_url: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        env={**os.environ, "SAVER_URL": saver_url},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == f"saver: {saver_url}"
    first_run = out[out.index("running the workflow") + 1 : out.index("resuming the thread")]
    assert first_run == [
        "  step 1 validate",
        "  step 2 reserve",
        "  step 3 price",
        "  step 4 charge",
        "  step 5 ship",
        "run failed at step 5: shipping API answered 429 Too Many Requests",
    ]
    resumed = out[out.index("resuming the thread") + 1 :]
    assert resumed[:3] == ["  step 5 ship", "  step 6 notify", "  step 7 archive"]
    assert resumed[3].startswith("done: validated, reserved, priced 4200, charged ch_1, shipped ")
    assert resumed[4:7] == [
        "charging again under the same key returns ch_1",
        "charges made: 1",
        "steps run: validate=1 reserve=1 price=1 charge=1 ship=2 notify=1 archive=1",
    ]

    ctx_at = out.index("resume context (the live path, for a prompt):")
    tree_at = out.index("checkpoint tree:")
    assert out[ctx_at + 1 : tree_at - 1] == [
        "step -1 · input",
        "step 0",
        "step 1",
        "step 2",
        "step 3",
        "step 4 · error, retried",
        "step 5",
        "step 6",
        "step 7",
    ]
    drawing = out[tree_at + 1 :]
    assert len(drawing) == 9
    assert drawing[5].endswith(" · step 4 · loop · error, retried")
    assert drawing[-1].endswith(" · step 7 · loop · ok · head")
