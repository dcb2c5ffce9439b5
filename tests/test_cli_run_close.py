"""The host's close path (review finding 1): fd limit raised, the supervisor always closed."""

from __future__ import annotations

import asyncio
import errno
import resource
import subprocess
import sys
from typing import cast

import pytest

from legion_tui.commands.run import close_host
from legion_tui.supervisor.core import Supervisor

pytestmark = pytest.mark.host


class ClosingSupervisor:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


async def test_a_failing_demo_stop_still_closes_the_supervisor(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sup = ClosingSupervisor()
    stopped: list[str] = []

    async def emfile() -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    async def fine() -> None:
        stopped.append("second")

    await close_host(cast(Supervisor, sup), [emfile, fine])
    assert sup.closed
    assert stopped == ["second"]
    assert "Too many open files" in capsys.readouterr().err


async def test_a_cancelled_demo_stop_still_closes_the_supervisor() -> None:
    sup = ClosingSupervisor()

    async def cancelled() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await close_host(cast(Supervisor, sup), [cancelled])
    assert sup.closed


def test_the_host_raises_its_soft_fd_limit_to_the_hard_one() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip("the hard limit is already at or below the lowered soft one")
    child = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit("
        "resource.RLIMIT_NOFILE)[1]))\n"
        "from legion_tui.commands.run import raise_fd_limit\n"
        "print(*raise_fd_limit())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    soft, limit = (int(x) for x in out.split())
    assert soft == limit == hard
