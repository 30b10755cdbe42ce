"""The crash-resume guarantee when the saver service dies too: the workflow's
process is killed -9 inside the charge step, the service is killed -9 and
restarted on its database, and the resumed workflow still charges the card
exactly once (the client's side of it: python/tests/test_guarantee.py).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from saver_client import HTTPSaver

from support.payments import (
    FakeApis,
    WorkflowProcess,
    assert_exactly_one_charge,
    assert_tree_after_recovery,
    kill_after_charge,
    new_thread,
    resume_to_the_end,
)
from support.processes import ServiceProcess
from support.workflow_proc import STEPS


@pytest.mark.parametrize("key_mode", ["order", "derived"])
def test_killed_in_charge_step_with_saver_crash(
    spawn_service: Callable[[], ServiceProcess],
    apis: FakeApis,
    workflows: Callable[..., WorkflowProcess],
    key_mode: str,
) -> None:
    service = spawn_service()
    thread_id = new_thread()
    with HTTPSaver(service.url) as saver:
        key = kill_after_charge(workflows, saver, apis, thread_id, key_mode)

        # The saver service dies too, without a graceful shutdown, and comes
        # back on the same database and port.
        service.crash_and_restart()

        claim = saver.claim(key)
        assert (claim.state, claim.result["charge_id"]) == ("completed", "ch_1")
        resume_to_the_end(workflows, service.url, apis, thread_id, key_mode)

        assert apis.steps == {**{s: 1 for s in STEPS}, "charge": 2, "ship": 2}
        assert_exactly_one_charge(apis, thread_id)
        assert apis.charge_requests == 1
        assert_tree_after_recovery(saver, thread_id)
