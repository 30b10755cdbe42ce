"""Fixtures: the saver service under test (support/fixtures.py, shared with e2e/)."""

pytest_plugins = ["support.fixtures"]
