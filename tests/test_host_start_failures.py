"""A host whose start fails after its ledger opened exits with one clear line (issue 14
item 4): before, the ledger's writer thread outlived the error and the process hung for
ever (only SIGKILL ended it). Each case runs the real CLI with a bound; a hang fails it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from supervisor_helpers import cli_env

from legion_tui.runs import catalog as runs
from legion_tui.supervisor.core import StartFailed, Supervisor

pytestmark = pytest.mark.host

LIMIT = 30.0  # a hang is the bug; a clear refusal takes about a second


def _legion(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "legion_tui.cli", *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        timeout=LIMIT,
    )


def test_a_task_that_is_not_utf8_is_a_clear_refusal_not_a_hang(tmp_path: Path) -> None:
    # argv bytes that are not UTF-8 arrive as lone surrogates, which SQLite cannot store.
    task = os.fsdecode(b"fix the \xff parser")
    done = _legion(tmp_path, "run", "worker", "--kind", "sim", "--task", task, "--speed", "50")
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 1, err
    assert err == "legion run: the task is not valid text (surrogates not allowed)\n", err
    assert not (tmp_path / ".legion").exists()  # refused before the host existed


async def test_a_start_that_fails_after_the_ledger_opened_closes_what_it_began(
    tmp_path: Path,
) -> None:
    """The host itself, asked to start with a root task SQLite cannot store: StartFailed,
    and nothing of it keeps running (before: the ledger's writer thread kept the process
    alive for ever after the traceback)."""
    threads = set(threading.enumerate())
    sup = Supervisor(tmp_path, session="s", task=os.fsdecode(b"bad \xff task"))
    with pytest.raises(StartFailed, match="UnicodeEncodeError"):
        await sup.start()
    assert sup.ledger is not None
    new = [t for t in threading.enumerate() if t not in threads]
    for thread in new:  # the executor's thread ends a moment after its shutdown: bounded
        thread.join(5.0)
    left = [t for t in new if t.is_alive()]
    assert left == [], left


def test_a_ledger_with_corrupt_pages_is_a_clear_refusal_not_a_hang(tmp_path: Path) -> None:
    run = ("run", "worker", "--kind", "sim", "--task", "t", "--session", "s", "--speed", "50")
    first = _legion(tmp_path, *run)
    assert first.returncode == 0, first.stderr.decode()
    info = runs.find_session_run(tmp_path, "s")
    assert info is not None
    ledger = info.ledger_path
    data = bytearray(ledger.read_bytes())
    assert len(data) > 3 * 4096
    data[4096:8192] = b"\x5a" * 4096  # page 2 (a table's root): garbage; the header is fine
    ledger.write_bytes(bytes(data))
    again = _legion(tmp_path, *run)
    err = again.stderr.decode(errors="replace")
    assert again.returncode == 1, err
    assert err.startswith("legion run: ") and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
