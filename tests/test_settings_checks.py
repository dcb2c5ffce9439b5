"""`[checks]` in `.legion/settings.toml` (issue 34 item 2): none by default, a command as a
string or an argv, every problem with file:line and nothing half-applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from legion_tui.settings import ChecksSettings, load_settings

pytestmark = pytest.mark.unit


def _load(tmp_path: Path, text: str) -> tuple[ChecksSettings, list[str]]:
    (tmp_path / ".legion").mkdir(exist_ok=True)
    (tmp_path / ".legion" / "settings.toml").write_text(text)
    result = load_settings(tmp_path)
    return result.settings.checks, [f"{p.where}: {p.what}" for p in result.problems]


def test_no_checks_by_default_and_a_command_as_a_string_or_an_argv(tmp_path: Path) -> None:
    checks, problems = _load(tmp_path, 'theme = "dark"\n')
    assert problems == [] and checks == ChecksSettings() and checks.command is None
    checks, problems = _load(tmp_path, '[checks]\ncommand = "make test"\ntimeout = 90\n')
    assert problems == []
    assert (checks.command, checks.timeout_seconds, checks.retries) == ("make test", 90.0, 2)
    checks, _ = _load(tmp_path, '[checks]\ncommand = ["pytest", "-k", "not slow"]\nretries = 0\n')
    assert (checks.command, checks.retries) == ("pytest -k 'not slow'", 0)


def test_every_bad_checks_value_is_named_where_it_is_and_none_runs(tmp_path: Path) -> None:
    checks, problems = _load(
        tmp_path,
        '[checks]\ncommand = ""\ntimeout = 0\nretries = -1\nevery = 3\n',
    )
    assert problems == [
        ".legion/settings.toml:2: setting 'checks.command': expected a command (a string or "
        "a list of strings), got ''",
        ".legion/settings.toml:3: setting 'checks.timeout': expected a number of seconds > 0, "
        "got 0",
        ".legion/settings.toml:4: setting 'checks.retries': expected a whole number ≥ 0, got -1",
        ".legion/settings.toml:5: setting 'checks.every': unknown key",
    ]
    assert checks == ChecksSettings()
    checks, problems = _load(tmp_path, '[checks]\ncommand = "make"\ntimeout = inf\n')
    assert checks.command is None and "got inf" in problems[0]
    _, problems = _load(tmp_path, 'checks = "make test"\n')
    assert problems == [".legion/settings.toml:1: setting 'checks': expected a table: [checks]"]
