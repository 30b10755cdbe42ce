"""The crash-resume guarantee, end to end: a workflow that fails or is killed
mid-way resumes where it stopped, and charges the card exactly once.

The payment and shipping APIs, the workflow's process and what every scenario
must end with are in support/payments.py; the same with the saver service
killed too is e2e/test_guarantee_crash.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from saver_client import HTTPSaver

from support.payments import (
    FakeApis,
    WorkflowProcess,
    assert_done,
    assert_exactly_one_charge,
    assert_tree_after_recovery,
    config_of,
    kill_after_charge,
    new_thread,
    resume_to_the_end,
)
from support.workflow_proc import STEPS, ShippingUnavailable, build_workflow


# -- 1. the step fails in process; the thread resumes at the failed step ---------------


def test_failed_step_resumes_without_repeating_the_charge(saver: HTTPSaver, apis: FakeApis) -> None:
    thread_id = new_thread()
    config = config_of(thread_id)
    graph = build_workflow(saver, apis.url)

    with pytest.raises(ShippingUnavailable, match="429"):
        graph.invoke({"order_id": thread_id, "amount": 4200, "log": []}, config, durability="sync")
    stuck = graph.get_state(config)
    assert stuck.next == ("ship",)
    assert stuck.values["receipt"]["charge_id"] == "ch_1"
    assert apis.steps == {s: 1 for s in STEPS[:5]}
    # Before the resume, the head is the failed checkpoint: stuck, not retried.
    head = saver.tree(thread_id).head
    assert head is not None and (head.step, head.status) == (4, "error")

    final = graph.invoke(None, config, durability="sync")

    assert_done(final, thread_id)
    # Steps 1-4 ran once; shipping twice (the 429, then the resume); then the rest.
    assert apis.steps == {**{s: 1 for s in STEPS}, "ship": 2}
    assert_exactly_one_charge(apis, thread_id)
    assert apis.charge_requests == 1
    assert_tree_after_recovery(saver, thread_id)


# -- 2./3. the process dies inside the charge step ---------------------------------------


@pytest.mark.parametrize("key_mode", ["order", "derived"])
def test_killed_in_charge_step_resumes_in_new_process(
    saver: HTTPSaver,
    apis: FakeApis,
    workflows: Callable[..., WorkflowProcess],
    key_mode: str,
) -> None:
    thread_id = new_thread()
    key = kill_after_charge(workflows, saver, apis, thread_id, key_mode)

    resume_to_the_end(workflows, saver.url, apis, thread_id, key_mode)

    # Step 4 ran again and the helper returned the stored charge: one charge,
    # and the payment API was not even asked again.
    assert apis.steps == {**{s: 1 for s in STEPS}, "charge": 2, "ship": 2}
    assert_exactly_one_charge(apis, thread_id)
    assert apis.charge_requests == 1
    assert saver.claim(key).attempt == 1
    assert_tree_after_recovery(saver, thread_id)


# -- the window no ledger closes, closed by the downstream key ---------------------------


@pytest.mark.parametrize("key_mode", ["order", "derived"])
def test_killed_between_charge_and_complete_downstream_key_closes_the_window(
    saver: HTTPSaver,
    apis: FakeApis,
    workflows: Callable[..., WorkflowProcess],
    key_mode: str,
) -> None:
    """Killed after the payment API took the charge but before the helper stored
    it: the ledger cannot know the charge happened, so once the dead process's
    lease ends the call runs again; the payment API sees the same key and
    answers with the first charge instead of charging twice."""
    thread_id = new_thread()
    lease = 3.0  # seconds the resumed process waits for the dead one's lease
    first = workflows(
        saver.url,
        apis.url,
        thread_id,
        "--start",
        "--key-mode",
        key_mode,
        "--block",
        "in-charge",
        "--lease",
        str(lease),
    )
    key = first.wait_for("in-charge")["key"]
    assert apis.charged.is_set()
    first.kill()
    held = saver.claim(key)
    assert (held.state, held.attempt) == ("in_progress", 1)

    second = workflows(saver.url, apis.url, thread_id, "--key-mode", key_mode)
    final = second.finish()

    assert_done(final, thread_id)
    assert_exactly_one_charge(apis, thread_id)
    assert apis.charge_requests == 2  # asked twice, charged once
    claim = saver.claim(key)
    assert (claim.state, claim.attempt) == ("completed", 2)
    assert claim.result["charge_id"] == "ch_1"
    assert apis.steps == {**{s: 1 for s in STEPS}, "charge": 2, "ship": 2}
    assert_tree_after_recovery(saver, thread_id)
