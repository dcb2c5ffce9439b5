"""A verb whose reader has gone (`legion status | head -1`) stops quietly: no traceback,
nothing more written, and the exit a shell gives a tool the closed pipe stopped (141)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from session_helpers import V3_FIXTURE

pytestmark = pytest.mark.host

LEGION = str(Path(sys.executable).with_name("legion"))


def _into_a_closed_pipe(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the verb writes: its first write fails
    try:
        return subprocess.run(
            [LEGION, *argv], stdout=write, stderr=subprocess.PIPE, cwd=cwd,
            timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(write)


@pytest.mark.parametrize("json", [[], ["--json"]], ids=["text", "json"])
def test_a_verb_whose_reader_has_gone_stops_without_a_traceback(
    json: list[str], tmp_path: Path
) -> None:
    done = _into_a_closed_pipe(["inspect", *json, str(V3_FIXTURE)], tmp_path)
    assert (done.returncode, done.stderr.decode()) == (141, "")


def test_the_help_into_a_closed_pipe_says_nothing_either(tmp_path: Path) -> None:
    done = _into_a_closed_pipe(["--help"], tmp_path)  # argparse drops the failed write
    assert (done.returncode, done.stderr.decode()) == (0, "")
