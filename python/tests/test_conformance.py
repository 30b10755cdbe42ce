"""LangGraph's own checkpointer conformance suite against the live service."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from saver_client import HTTPSaver


async def test_conformance_full(saver_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    @checkpointer_test(name="HTTPSaver")
    async def http_saver() -> AsyncIterator[HTTPSaver]:
        async with HTTPSaver(saver_url) as saver:
            yield saver

    failures: list[str] = []

    def on_test_result(cap: str, test: str, passed: bool, err: str | None) -> None:
        if not passed:
            failures.append(f"{cap}/{test}:\n{err}")

    report = await validate(http_saver, progress=ProgressCallbacks(on_test_result=on_test_result))
    with capsys.disabled():  # the report belongs in the test log even when green
        print()
        report.print_report()
        for name, r in sorted(report.results.items()):
            print(
                f"  {name:22s} detected={r.detected} tests_passed={r.tests_passed} "
                f"tests_failed={r.tests_failed}"
            )

    assert not failures, "\n\n".join(failures)
    for cap in sorted(ALL_CAPABILITIES, key=lambda c: c.value):
        result = report.results[cap.value]
        assert result.detected, f"{cap.value} not detected"
        assert result.passed is True, f"{cap.value}: {result.failures}"
        assert result.tests_failed == 0 and result.tests_passed > 0, cap.value
    assert report.passed_all_base()
    assert report.passed_all()
    assert report.conformance_level() == "FULL"
