"""A FIFO where a session file should be never blocks anything (issue 14 item 5).

Any agent knows `LEGION_RUN_DIR` and can make `sessions/x.jsonl` a FIFO; an `open` of it
blocks until a writer comes — on the event loop, the whole supervisor froze, and `legion
inspect FIFO` hung the same way. Non-regular files are refused with a reason instead.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from supervisor_helpers import cli_env, hosted, spawn_one, until

from legion_tui.regular_files import NotARegularFile
from legion_tui.session.reader import SessionReader
from legion_tui.session.transcript import TranscriptPager
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host

BOUND = 10.0


def _bounded(call: Callable[..., object], *args: object) -> object:
    """`call(*args)` in a thread: its result or its exception; fail if it blocks."""
    outcome: list[tuple[object, BaseException | None]] = []

    def run() -> None:
        try:
            outcome.append((call(*args), None))
        except BaseException as err:  # handed back to the test's thread
            outcome.append((None, err))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    if thread.is_alive():
        pytest.fail(f"{call} blocked on a FIFO for {BOUND} s")
    value, error = outcome[0]
    if error is not None:
        raise error
    return value


def test_the_reader_and_the_pager_refuse_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    reader = SessionReader(fifo)
    assert _bounded(reader.poll) is True
    assert reader.progress.unreadable == "not a regular file"
    assert reader.progress.read_error == "not a regular file"
    assert not reader.has_fd
    pager = TranscriptPager(fifo)
    with pytest.raises(NotARegularFile):
        _bounded(pager.page, 0, 10)


def test_inspect_of_a_fifo_is_a_clear_error(tmp_path: Path) -> None:
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "legion_tui.cli", "inspect", str(fifo)],
        env=cli_env(),
        capture_output=True,
        timeout=BOUND * 3,
    )
    assert done.returncode == 1
    assert done.stderr.decode() == f"legion inspect: cannot read {fifo}: not a regular file\n"


async def test_an_agent_that_makes_its_session_a_fifo_does_not_freeze_the_host(
    tmp_path: Path,
) -> None:
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "fifo.md").write_text(
        "---\nname: fifo\ndescription: Makes its session file a FIFO.\nkind: exec\n"
        'role: worker\ncommand: ["sh", "-c", "mkfifo {session_file} && echo made && '
        'sleep 60"]\n---\nBe hostile.\n',
        encoding="utf-8",
    )
    async with hosted(tmp_path) as sup:
        evil = await spawn_one(sup, "fifo", name="evil")
        view = sup.model.nodes[evil.id]
        await until(lambda: view.terminal_line == "made", BOUND, "the FIFO")
        # On the loop: a blocking open would hang the test.
        progress = sup.progress_watch.progress(evil.id)
        assert progress.read_error == "not a regular file"
        after = await asyncio.wait_for(spawn_one(sup, name="after"), BOUND)
        await until(lambda: sup.model.nodes[after.id].progress.entries > 0, BOUND * 3)
        assert sup.queries.status(ROOT_ID, "evil")["nodes"][0]["unreadable"] == "not a regular file"


@pytest.mark.parametrize("where", [".legion/agents/x.md", ".legion/settings.toml"])
def test_a_fifo_for_a_card_or_the_settings_is_a_problem_not_a_hang(
    tmp_path: Path, where: str
) -> None:
    """`doctor`, `run` and `tui` read the cards and settings first: a FIFO there hung
    each of them at start (issue 14 item 20)."""
    fifo = tmp_path / where
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "legion_tui.cli", "doctor"],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        timeout=BOUND * 3,
    )
    out = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 1, out
    assert "cannot read: not a regular file" in out, out


def test_phases_from_a_fifo_is_a_clear_error(tmp_path: Path) -> None:
    fifo = tmp_path / "machine.yml"
    os.mkfifo(fifo)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "legion_tui.cli",
            "run",
            "centurion",
            "--kind",
            "sim",
            "--task",
            "t",
            "--phases",
            str(fifo),
        ],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        timeout=BOUND * 3,
    )
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "cannot read: [Errno 22] not a regular file" in err, err
