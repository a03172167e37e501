"""pytest options for tests/python: `slow` tests (the long fuzz run) are skipped unless
--runslow is given or PYPTO_SLOW=1."""

import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked slow (or set PYPTO_SLOW=1)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test, skipped unless --runslow or PYPTO_SLOW=1")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow") or os.environ.get("PYPTO_SLOW", "") not in ("", "0"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow or PYPTO_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
