"""Run directories, session pointers and finding the live supervisor (SPEC §2, §6.6)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from supervisor_helpers import hosted

from legion_tui.supervisor import runs


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
    with pytest.raises(runs.SessionNameError):
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
        assert len(os.fsencode(sup.run.socket_link)) > runs.MAX_SOCKET_PATH
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
