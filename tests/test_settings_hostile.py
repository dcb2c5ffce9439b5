"""SPEC §10 'settings.toml nested 100 000 deep or 60 MB': one-line error, bounded time
and memory (issue 30, item 9). Before: a RecursionError traceback from `doctor` and `run`,
and a 60 MB file read whole and parsed (7.7–12.5 s, 150–292 MB)."""

from __future__ import annotations

from pathlib import Path

import pytest

from legion_tui.regular_files import FileTooLarge, read_regular_text
from legion_tui.settings import MAX_SETTINGS_BYTES, SETTINGS_FILE, load_settings

pytestmark = pytest.mark.unit


def _project(tmp_path: Path, text: str) -> Path:
    (tmp_path / SETTINGS_FILE).parent.mkdir(parents=True)
    (tmp_path / SETTINGS_FILE).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "text",
    ["x = " + "[" * 100_000 + "]" * 100_000 + "\n", "x = " + "{a = " * 50_000 + "1" + "}" * 50_000],
    ids=["array", "inline-table"],
)
def test_a_settings_file_nested_100_000_deep_is_one_problem(tmp_path: Path, text: str) -> None:
    loaded = load_settings(_project(tmp_path, text))
    assert [(p.message, p.line) for p in loaded.problems] == [("nested too deeply", None)]
    assert loaded.settings.theme == "legion-dark"  # the defaults hold


def test_a_huge_settings_file_is_refused_without_being_read_whole(tmp_path: Path) -> None:
    project = _project(tmp_path, "# " + "x" * (8 * MAX_SETTINGS_BYTES) + "\n")
    loaded = load_settings(project)
    assert [p.message for p in loaded.problems] == [
        f"cannot read: larger than {MAX_SETTINGS_BYTES} bytes"
    ]


def test_a_bounded_read_reads_at_most_one_byte_past_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"12345")
    assert read_regular_text(path, max_bytes=5) == "12345"
    with pytest.raises(FileTooLarge, match="larger than 4 bytes"):
        read_regular_text(path, max_bytes=4)
