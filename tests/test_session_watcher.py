"""SessionWatcher on a real folder: appends reach on_change, per-node folders, clean stop."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from session_helpers import conversation, line, user

from legion_tui.session.progress import SessionProgress
from legion_tui.session.watcher import SessionWatcher, node_id_for

pytestmark = pytest.mark.unit

DEADLINE = 5.0


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, SessionProgress]] = []

    def __call__(self, node_id: str, progress: SessionProgress) -> None:
        self.calls.append((node_id, progress))

    def of(self, node_id: str) -> list[SessionProgress]:
        return [p for n, p in self.calls if n == node_id]


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while not condition():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[tuple[SessionWatcher, Recorder, Path]]:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "n1.jsonl").write_bytes(conversation(1))
    rec = Recorder()
    # A long sweep interval: the test must pass on inotify alone.
    watcher = SessionWatcher(sessions, rec, clock=lambda: 1234.0, sweep_seconds=60.0)
    task = asyncio.create_task(watcher.run())
    await asyncio.wait_for(watcher.started.wait(), DEADLINE)
    yield watcher, rec, sessions
    watcher.stop()
    await asyncio.wait_for(task, DEADLINE)


def test_node_id_mapping(tmp_path: Path) -> None:
    d = str(tmp_path)
    assert node_id_for(d, os.path.join(d, "abc.jsonl")) == "abc"
    assert node_id_for(d, os.path.join(d, "abc", "2026-01-01_x.jsonl")) == "abc"
    assert node_id_for(d, os.path.join(d, "abc", "deep", "y.jsonl")) == "abc"
    assert node_id_for(d, os.path.join(d, "abc.log")) is None
    assert node_id_for(d, os.path.join(str(tmp_path.parent), "z.jsonl")) is None


async def test_existing_file_reported_at_start_then_appends(
    running: tuple[SessionWatcher, Recorder, Path],
) -> None:
    watcher, rec, sessions = running
    assert [p.turns for p in rec.of("n1")] == [2]
    assert watcher.last_change_at["n1"] == 1234.0
    append(sessions / "n1.jsonl", line(user("late", "f0", "one more thing", 50_000)))
    await wait_for(lambda: len(rec.of("n1")) == 2, "the append to reach on_change")
    assert rec.of("n1")[-1].recent_user_texts[-1] == "one more thing"


async def test_new_file_in_a_per_node_folder_newest_wins(
    running: tuple[SessionWatcher, Recorder, Path],
) -> None:
    watcher, rec, sessions = running
    folder = sessions / "n2"
    folder.mkdir()
    (folder / "2026-01-01_old.jsonl").write_bytes(conversation(1, session_id="old"))
    await wait_for(lambda: len(rec.of("n2")) >= 1, "the per-node folder file")
    newer = folder / "2026-01-02_new.jsonl"
    newer.write_bytes(conversation(3, session_id="new"))
    os.utime(newer, ns=(2**62, 2**62))  # unambiguously the newest
    await wait_for(lambda: rec.of("n2")[-1].turns == 6, "the newest file to speak for n2")
    reports = len(rec.of("n2"))
    # Touching the older file changes it, but it is not the one the node shows.
    append(folder / "2026-01-01_old.jsonl", b"\n")
    watcher.poll_all()
    assert len(rec.of("n2")) == reports


async def test_deleted_file_is_reported_unreadable(
    running: tuple[SessionWatcher, Recorder, Path],
) -> None:
    _watcher, rec, sessions = running
    (sessions / "n1.jsonl").unlink()
    await wait_for(lambda: rec.of("n1")[-1].unreadable == "deleted", "the deletion")
    assert rec.of("n1")[-1].turns == 2  # what was read before, not an empty session


async def test_sweep_catches_what_inotify_did_not_report(tmp_path: Path) -> None:
    rec = Recorder()
    watcher = SessionWatcher(tmp_path, rec)
    (tmp_path / "n3.jsonl").write_bytes(conversation(1))
    assert watcher.poll_all() == 1
    assert watcher.poll_all() == 0  # unchanged: no report
    append(tmp_path / "n3.jsonl", line(user("x", "f0", "hi", 1)))
    assert watcher.poll_all() == 1
    assert [p.entries for p in rec.of("n3")] == [5, 5]  # the same progress object, updated
    watcher.close()


async def test_stop_returns_promptly(tmp_path: Path) -> None:
    watcher = SessionWatcher(tmp_path / "sessions", Recorder())
    task = asyncio.create_task(watcher.run())
    await asyncio.wait_for(watcher.started.wait(), DEADLINE)
    loop = asyncio.get_running_loop()
    started = loop.time()
    watcher.stop()
    await asyncio.wait_for(task, DEADLINE)
    assert loop.time() - started < 1.0


async def test_without_inotify_the_sweep_still_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from legion_tui.session import watcher as watcher_module

    def broken_awatch(*args: object, **kwargs: object) -> object:
        raise RuntimeError("inotify watch limit reached")

    monkeypatch.setattr(watcher_module, "awatch", broken_awatch)
    rec = Recorder()
    watcher = SessionWatcher(tmp_path, rec, sweep_seconds=0.02)
    task = asyncio.create_task(watcher.run())
    await asyncio.wait_for(watcher.started.wait(), DEADLINE)
    (tmp_path / "n4.jsonl").write_bytes(conversation(1))
    await wait_for(lambda: len(rec.of("n4")) == 1, "the sweep to find the new file")
    watcher.stop()
    await asyncio.wait_for(task, DEADLINE)


async def test_big_file_catches_up_in_bounded_steps(
    running: tuple[SessionWatcher, Recorder, Path],
) -> None:
    watcher, rec, sessions = running
    big = conversation(1500, session_id="big")
    (sessions / "n5.jsonl").write_bytes(big)
    await wait_for(lambda: bool(rec.of("n5")) and rec.of("n5")[-1].turns == 3000, "catch-up")
    reader = watcher.readers[str(sessions / "n5.jsonl")]
    # More than one poll was needed: no single poll read the whole file.
    assert reader.reads > len(big) // reader.max_bytes_per_poll
    assert not watcher.pending
