"""`legion --version` (issue 13): the installed version, exit 0, before any command loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from legion_tui import __version__

pytestmark = pytest.mark.host

LEGION = str(Path(sys.executable).with_name("legion"))


def test_legion_version_prints_the_version_and_exits_0() -> None:
    done = subprocess.run(
        [LEGION, "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"legion {__version__}\n", "")
