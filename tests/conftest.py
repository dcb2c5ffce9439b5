"""Shared test fixtures."""

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
