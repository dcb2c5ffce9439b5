"""Run directories, session pointers and finding the live supervisor (SPEC §2, §6.6)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from supervisor_helpers import hosted, run_cli

from legion_tui.runs import catalog as runs
from legion_tui.runs.folder import SessionNameError
from legion_tui.runs.socket_link import MAX_SOCKET_PATH, UnsafeSocketDir, socket_path_for

pytestmark = pytest.mark.host


def test_a_new_session_creates_its_run_layout(tmp_path: Path) -> None:
    info, reopened = runs.open_session(tmp_path, "alpha", task="t", now=1_800_000_000.0)
    assert not reopened
    assert sorted(p.name for p in info.dir.iterdir()) == [
        "outputs", "run.json", "sessions", "terminal",
    ]  # fmt: skip
    data = json.loads((info.dir / "run.json").read_text())
    assert data == {
        "runId": info.run_id, "sessionName": "alpha", "createdAt": 1_800_000_000.0,
        "updatedAt": 1_800_000_000.0, "cwd": str(tmp_path.resolve()), "ownerPid": os.getpid(),
        "task": "t",
    }  # fmt: skip
    # The same name finds the same run (through its pointer, without scanning runs/).
    again, reopened = runs.open_session(tmp_path, "alpha")
    assert reopened and again.run_id == info.run_id


@pytest.mark.parametrize("bad", ["", "-x", "a/b", "..", "x" * 65, "sp ace"])
def test_session_names_are_checked(tmp_path: Path, bad: str) -> None:
    with pytest.raises(SessionNameError):
        runs.open_session(tmp_path, bad)
    assert not (tmp_path / ".legion").exists()


def test_a_pointer_to_another_sessions_run_is_ignored(tmp_path: Path) -> None:
    a, _ = runs.open_session(tmp_path, "a")
    (tmp_path / ".legion" / "sessions" / "b.run").write_text(a.run_id + "\n")
    b, reopened = runs.open_session(tmp_path, "b")
    assert not reopened and b.run_id != a.run_id


async def test_a_long_run_path_gets_a_short_socket_and_a_link(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    async with hosted(deep) as sup:
        assert len(os.fsencode(sup.run.socket_link)) > MAX_SOCKET_PATH
        assert sup.socket_path != sup.run.socket_link
        assert sup.run.socket_link.is_symlink()
        assert runs.resolve_socket(sup.run) == sup.socket_path
        live = runs.find_live_run(deep)
        assert live is not None and live.run_id == sup.run.run_id
        client = runs.client_for(deep)
        async with client:
            assert (await client.request("status"))["run_id"] == sup.run.run_id
    assert not sup.socket_path.exists() and not sup.run.socket_link.is_symlink()
    assert runs.find_live_run(deep) is None


async def test_the_newest_live_run_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    async with hosted(tmp_path, "one") as first, hosted(tmp_path, "two") as second:
        assert runs.find_project_dir(sub) == runs.find_project_dir(tmp_path)
        assert (runs.find_project_dir(tmp_path) / ".legion").is_dir()
        newest = runs.find_live_run(tmp_path)
        assert newest is not None and newest.run_id == second.run.run_id
        chosen = runs.find_live_run(tmp_path, "one")
        assert chosen is not None and chosen.run_id == first.run.run_id


def _long_run(tmp_path: Path) -> runs.RunInfo:
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True, exist_ok=True)
    info, _ = runs.open_session(deep, "main")
    return info


@pytest.fixture
def shared() -> Iterator[Path]:
    """A stand-in for the shared temp dir, short enough for a socket path in it."""
    made = Path(tempfile.mkdtemp(prefix="lg-", dir="/tmp"))
    yield made
    shutil.rmtree(made)


def test_a_socket_dir_someone_else_made_or_opened_is_refused(
    tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The short socket dir lives in the shared temp dir: a user who made
    `legion-<uid>` first would answer every verb. Only a 0700 dir of our own is used."""
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    info = _long_run(tmp_path)
    squat = shared / f"legion-{os.getuid()}"
    squat.mkdir(mode=0o700)
    os.chown(squat, 12345, 12345)  # another user's, made first
    with pytest.raises(UnsafeSocketDir, match="belongs to uid 12345"):
        socket_path_for(info)
    os.chown(squat, os.getuid(), os.getgid())
    squat.chmod(0o755)
    with pytest.raises(UnsafeSocketDir, match="open to others"):
        socket_path_for(info)
    squat.rmdir()
    (shared / "elsewhere").mkdir(mode=0o700)
    squat.symlink_to(shared / "elsewhere")
    with pytest.raises(UnsafeSocketDir, match="not a directory"):
        socket_path_for(info)
    squat.unlink()
    made = socket_path_for(info)  # absent: made 0700, ours
    assert made.parent == squat and stat.S_IMODE(squat.stat().st_mode) == 0o700


async def test_a_squatted_socket_dir_is_a_clear_refusal_of_the_host(
    tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    squat = shared / f"legion-{os.getuid()}"
    squat.mkdir(mode=0o777)
    squat.chmod(0o777)
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(shared))
    code, out, err = await run_cli(
        "run", "worker", "--kind", "sim", "--task", "t", "--session", "s", cwd=deep
    )
    assert code == 1, (out, err)
    assert "is open to others (mode 777)" in err and "Traceback" not in err, err
    assert list(squat.iterdir()) == []  # nothing bound in it


def test_a_temp_dir_too_long_for_a_socket_falls_back_to_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TMPDIR deep enough that even the short socket path would not fit AF_UNIX (a
    tool's scratch dir: Claude Code's tests set one) must not make the host fail to
    start: /tmp serves instead."""
    deep = tmp_path / ("t" * 90)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    path = socket_path_for(_long_run(tmp_path))
    assert path.parent == Path("/tmp") / f"legion-{os.getuid()}"
    assert len(os.fsencode(path)) <= MAX_SOCKET_PATH
