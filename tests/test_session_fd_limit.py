"""A watcher over more files than `ulimit -n` allows keeps working (review finding 1).

The child process lowers its soft RLIMIT_NOFILE to 256 and watches 300 session files:
every file must be read (none reported EMFILE) before and after an append to each, and
the watcher must hold at most `max_open` fds for them.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from session_helpers import conversation, line, user

from legion_tui.session.reader import SessionReader, read_session
from legion_tui.session.watcher import MAX_OPEN_FDS, MOST_OPEN_FDS, SessionWatcher, fd_budget

pytestmark = pytest.mark.host

FILES = 300

CHILD = r"""
import asyncio, json, os, resource, sys

resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

from legion_tui.session.watcher import SessionWatcher

sessions, files = sys.argv[1], int(sys.argv[2])
latest = {}

def on_change(node_id, progress):
    latest[node_id] = progress

async def until(condition, what):
    loop = asyncio.get_running_loop()
    end = loop.time() + 20
    while not condition():
        if loop.time() > end:
            raise SystemExit(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)

def all_read(entries):
    return len(latest) == files and all(
        p.entries == entries and p.unreadable is None for p in latest.values()
    )

async def main():
    watcher = SessionWatcher(sessions, on_change, sweep_seconds=0.05)
    task = asyncio.create_task(watcher.run())
    await until(lambda: all_read(4), "the first read of every file")
    first = [p.unreadable for p in latest.values()]
    print("read", flush=True)
    await asyncio.to_thread(sys.stdin.readline)  # the parent appends to every file now
    await until(lambda: all_read(5), "the appends")
    held = watcher.open_fds
    watcher.stop()
    await task
    print(json.dumps({
        "unreadable": [u for u in first if u],
        "held": held,
        "fds": len(os.listdir("/proc/self/fd")),
    }))

asyncio.run(main())
"""


def test_300_files_under_a_soft_limit_of_256(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i in range(FILES):
        (sessions / f"n{i}.jsonl").write_bytes(conversation(1, session_id=f"s{i}"))
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(sessions), str(FILES)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdin is not None and proc.stdout is not None
        # Append only once the child has read every file whole, then release it.
        assert proc.stdout.readline() == "read\n", proc.stderr.read() if proc.stderr else ""
        for i in range(FILES):
            with open(sessions / f"n{i}.jsonl", "ab") as f:
                f.write(line(user(f"late{i}", "f1", "more", 99_000)))
        out, err = proc.communicate("go\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["unreadable"] == []
    assert result["held"] <= MAX_OPEN_FDS
    assert result["fds"] < 256


def test_a_closed_reader_keeps_its_gate_and_reads_on_from_its_offset(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    path.write_bytes(conversation(1))
    with SessionReader(path) as reader:
        assert reader.poll() is True and reader.has_fd
        reader.close()  # the watcher evicted it: the file went idle
        assert reader.poll() is False  # unchanged: one stat, no open, even without an fd
        assert (reader.opens, reader.has_fd) == (1, False)
        offset = reader.offset
        with open(path, "ab") as f:
            f.write(line(user("late", "f1", "more", 99_000)))
        assert reader.poll() is True  # reopened: the same (dev, ino), read on, no restart
        assert reader.opens == 2 and reader.progress.entries == 5
        assert reader.offset > offset


def test_a_file_replaced_while_its_reader_was_closed_restarts(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    path.write_bytes(conversation(2))
    with SessionReader(path) as reader:
        reader.poll()
        reader.close()
        fresh = tmp_path / "fresh.jsonl"
        fresh.write_bytes(conversation(1, session_id="other"))
        os.replace(fresh, path)  # a different inode now lives at the path
        assert reader.poll() is True
        assert reader.progress == read_session(path)


def test_the_watcher_closes_idle_files_beyond_max_open(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"n{i}.jsonl").write_bytes(conversation(1))
    watcher = SessionWatcher(tmp_path, lambda _n, _p: None, max_open=2)
    assert watcher.poll_all() == 5
    assert watcher.open_fds == 2
    assert sum(r.has_fd for r in watcher.readers.values()) == 2
    with open(tmp_path / "n0.jsonl", "ab") as f:
        f.write(line(user("late", "f1", "more", 99_000)))
    assert watcher.poll_all() == 1  # n0 reopened, and now among the two recent ones
    assert watcher.readers[str(tmp_path / "n0.jsonl")].has_fd
    assert watcher.open_fds == 2
    watcher.close()
    assert watcher.open_fds == 0


BUDGETS = [(256, MAX_OPEN_FDS), (1024, 256), (524_288, MOST_OPEN_FDS),
           (resource.RLIM_INFINITY, MOST_OPEN_FDS)]  # fmt: skip


@pytest.mark.parametrize(("soft", "budget"), BUDGETS)
def test_the_fd_budget_is_a_quarter_of_the_soft_limit_within_bounds(
    soft: int, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: 64 fds for a thousand agents each appending a line a second made every
    append reopen its file and close another's; the host lifts the soft limit, and the
    watcher now keeps a quarter of it (pipes and ptys need the rest)."""
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (soft, resource.RLIM_INFINITY))
    assert fd_budget() == budget
    assert SessionWatcher(Path("/nonexistent"), lambda _n, _p: None).max_open == budget
