"""Shared test fixtures, and the tiers every test belongs to."""

import os
import subprocess
from collections.abc import Iterator
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, settings

# The real-pi tests' fixtures (a scripted model server; a project world per pi line),
# shared by the files that drive legion on the real pi. A test module that defines its
# own `server` fixture overrides this one.
from real_pi_helpers import server, world  # noqa: F401

# On a timeout, each asyncio task's chain of awaits beside the threads' stacks.
pytest_plugins = ["timeout_tasks"]

# Hypothesis's two wall-clock checks, off for the whole suite: a draw or an example that
# a loaded machine stalls for seconds is not a failure (speed is the benchmarks' to
# measure, bench/). A soak run under load failed test_never_raises_on_any_object on
# `too_slow` (one draw: 3.1 s). Loaded here, before any test module builds its settings.
settings.register_profile("legion", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("legion")

# The agents `make agents` installed beside legion (.venv/agents) are found by `kind: auto`
# when PATH has none (agents.installed). A test says which agent it runs — by PATH, a
# card's command or `--kind` — and a test of "no agent installed" restricts PATH: legion
# looks in no folder of installed agents here, in this process or any it starts, unless
# a test names one (tests/test_installed_agents.py).
os.environ["LEGION_AGENTS_DIR"] = ""

# The tiers (pyproject's markers): one per test, by its module's `pytestmark`.
TIERS = ("unit", "host", "real", "ray")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tiers = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
        if len(tiers) != 1:
            raise pytest.UsageError(
                f"{item.nodeid}: a test belongs to exactly one of the tiers {TIERS} "
                f"(its module's `pytestmark`), not {sorted(tiers) or 'none'}"
            )
        if tiers == {"ray"}:
            # A Ray module's tests share its cluster (a module fixture): on one worker, so
            # `make test` (`--dist loadgroup`) starts it once. Every other test goes to
            # whichever worker is free.
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def _refuse_a_process(*_args: object, **_kwargs: object) -> NoReturn:
    raise AssertionError("a `unit` test started an OS process: its module is `host`")


@pytest.fixture(autouse=True)
def _unit_tests_start_no_process(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The unit tier's promise, kept: `make check` is fast and needs no agent because
    nothing in it can start a process (subprocess, asyncio's and pty's all come here)."""
    if request.node.get_closest_marker("unit") is not None:
        monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse_a_process)
        for start in ("fork", "forkpty", "posix_spawn", "posix_spawnp"):
            monkeypatch.setattr(os, start, _refuse_a_process)
    yield
