"""Shared test fixtures."""

# The real-pi tests' fixtures (a scripted model server; a project world per pi line),
# shared by the files that drive legion on the real pi. A test module that defines its
# own `server` fixture overrides this one.
from real_pi_helpers import server, world  # noqa: F401

# On a timeout, each asyncio task's chain of awaits beside the threads' stacks.
pytest_plugins = ["timeout_tasks"]
