"""The unit tier keeps its promise (tests/conftest.py): a test marked `unit` cannot start
an OS process, however it asks for one."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

pytestmark = pytest.mark.unit


def test_a_unit_test_cannot_start_a_process() -> None:
    with pytest.raises(AssertionError, match="`unit` test started an OS process"):
        subprocess.run(["true"], check=False)


async def test_nor_through_asyncio_or_a_fork() -> None:
    with pytest.raises(AssertionError, match="`unit` test started an OS process"):
        await asyncio.create_subprocess_exec("true")
    with pytest.raises(AssertionError, match="`unit` test started an OS process"):
        os.fork()
