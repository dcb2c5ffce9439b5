"""SPEC §10 'the terminal closes while the host pauses, or the run folder is removed': the
host exits within its bound and no thread is left (issue 30, item 10).

Before: `legion demo --headless` or `legion run` whose project folder was removed (a
cleanup script's `rm -rf`, with or without a SIGTERM first) ran for ever — the ledger's
writer died with its folder, the close stopped at the first step that wrote, and the
ledger reader's thread then held the interpreter in `threading._shutdown`.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from process_helpers import holds_a_line, until
from supervisor_helpers import LEGION, cli_env, git

from legion_tui.host_exit import EXIT_BOUND_S

pytestmark = pytest.mark.host

# What a host may take from the folder's removal to its exit: the folder watch looks once
# a second, then the close runs (it has nothing left to record).
GONE_BOUND = EXIT_BOUND_S + 5.0


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    git(project, "commit", "-q", "--allow-empty", "-m", "first")
    return project


def _agents_live(project: Path) -> bool:
    """A session file of the run holds a line: agents are writing into the folder."""
    return any(holds_a_line(p) for p in project.glob(".legion/runs/*/sessions/*.jsonl"))


async def _host_without_its_folder(
    tmp_path: Path, *args: str, signal_first: bool = False
) -> tuple[int, str]:
    project = _project(tmp_path)
    proc = await asyncio.create_subprocess_exec(
        LEGION, *args, cwd=project, env=cli_env(),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert await until(lambda: _agents_live(project), bound=60), "no agent started"
        if signal_first:
            proc.send_signal(signal.SIGTERM)
        # Out of the way at once, then removed: an `rm -rf` takes a while, and a host that
        # fails a write in the middle of it, and closes before it ends, still sees its
        # folder there (it then names the write that failed, not the folder).
        gone = tmp_path / "removed"
        project.rename(gone)
        shutil.rmtree(gone, ignore_errors=True)
        shutil.rmtree(project, ignore_errors=True)  # what the host made again meanwhile
        assert proc.stderr is not None
        err = await asyncio.wait_for(proc.stderr.read(), GONE_BOUND)
        code = await asyncio.wait_for(proc.wait(), GONE_BOUND)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return code, err.decode()


async def test_a_demo_whose_folder_is_removed_ends_and_says_why(tmp_path: Path) -> None:
    code, err = await _host_without_its_folder(
        tmp_path, "demo", "--headless", "--duration", "600"
    )
    assert code == 1
    # "replaced": git, working in the demo's sandbox repository inside the run folder,
    # may make its folders again in the second before the host looks.
    assert re.search(r"was (removed|replaced by another): its agents were stopped and "
                     r"the host ended", err), err  # fmt: skip
    assert "Traceback" not in err, err
    assert "did not end" not in err  # the close ended every thread; no fallback needed


async def test_a_run_whose_folder_is_removed_ends(tmp_path: Path) -> None:
    code, err = await _host_without_its_folder(
        tmp_path, "run", "--kind", "sim", "centurion", "--task", "a long one", "--speed", "0.05"
    )
    assert code == 1
    assert "legion run: its run folder" in err and "the host ended" in err, err
    assert "Traceback" not in err and "did not end" not in err, err


async def test_sigterm_then_the_folder_removed_still_ends(tmp_path: Path) -> None:
    code, err = await _host_without_its_folder(
        tmp_path, "demo", "--headless", "--duration", "600", signal_first=True
    )
    assert code in (0, 1), err
    assert "Traceback" not in err and "did not end" not in err, err


def _python(script: str, bound: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True, text=True, timeout=bound,
    )  # fmt: skip


def test_an_armed_deadline_ends_a_process_that_would_not() -> None:
    done = _python(
        """
        import threading
        from legion_tui.host_exit import ExitDeadline
        ExitDeadline("tui", bound=0.5).arm("SIGHUP arrived")
        threading.Event().wait()  # a pause that never ends
        """,
        bound=30,
    )
    assert done.returncode == 1
    assert "legion tui: SIGHUP arrived; the pause did not end within 0.5 s" in done.stderr


def test_a_thread_left_after_the_loop_is_named_and_not_waited_for() -> None:
    done = _python(
        """
        import threading
        from legion_tui.host_exit import end_lingering_threads
        threading.Thread(target=threading.Event().wait, name="forgotten").start()
        print("out before")
        end_lingering_threads("run", 3, linger=0.2)
        """,
        bound=30,
    )
    assert done.returncode == 3
    assert done.stdout == "out before\n"  # flushed before the exit
    assert "legion run: exiting although thread(s) forgotten did not end" in done.stderr


def test_a_host_that_ended_exits_without_the_interpreters_teardown() -> None:
    """With 1 000 agents the host's heap was 1.6 GB, and Python's teardown freed it object
    by object — 20 s after the last agent had ended. A host that ended exits at once: its
    output and its log written, its exit status kept, no object finalised."""
    done = _python(
        """
        import logging, sys
        from legion_tui.host_exit import end_lingering_threads

        class Heap:
            def __del__(self):
                sys.stderr.write("torn down\\n")

        kept = Heap()
        logging.basicConfig(stream=sys.stderr, format="%(message)s")
        logging.getLogger("legion").warning("logged")
        print("out before", end="")
        end_lingering_threads("tui", 0)
        print("never")
        """,
        bound=30,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "out before", "logged\n")


def test_an_error_on_a_hosts_way_out_is_still_printed_by_python() -> None:
    done = _python(
        """
        from legion_tui.host_exit import end_lingering_threads
        try:
            raise RuntimeError("the host broke")
        finally:
            end_lingering_threads("run", 0)
        """,
        bound=30,
    )
    assert done.returncode == 1 and "RuntimeError: the host broke" in done.stderr
