"""`.legion/settings.toml`: defaults, explicit values, and every problem with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from legion_tui.phases import DEFAULT_MACHINE, resolve_timeout_ms
from legion_tui.settings import DEFAULT_SETTINGS, load_settings

pytestmark = pytest.mark.unit


def write_settings(project: Path, text: str) -> None:
    (project / ".legion").mkdir(exist_ok=True)
    (project / ".legion" / "settings.toml").write_text(text)


def test_no_file_means_defaults(tmp_path: Path) -> None:
    result = load_settings(tmp_path)
    assert result.path is None and result.problems == ()
    s = result.settings
    assert (s.max_depth, s.max_children_per_node, s.max_active_nodes) == (3, 8, 32)
    assert s.stop_grace_seconds == 5.0 and s.theme == "legion-dark"
    assert dict(s.phase_timeouts) == {}


def test_explicit_values(tmp_path: Path) -> None:
    write_settings(
        tmp_path,
        'theme = "light"\nstopGraceSeconds = 2.5\n\n[budgets]\nmaxActiveNodes = 200\n\n'
        "[phaseTimeouts]\nimplementing = 0\nbuild = 120000\n",
    )
    result = load_settings(tmp_path)
    assert result.problems == ()
    s = result.settings
    assert s.theme == "legion-light" and s.stop_grace_seconds == 2.5
    assert (s.max_depth, s.max_active_nodes) == (3, 200)
    # only what the operator wrote: the resolver must see "explicit", not a filled default
    assert dict(s.phase_timeouts) == {"implementing": 0, "build": 120000}
    assert resolve_timeout_ms("implementing", operator=s.phase_timeouts) is None
    assert resolve_timeout_ms("planning", machine=DEFAULT_MACHINE, operator=s.phase_timeouts) == (
        15 * 60_000
    )


def test_every_problem_has_file_line_and_key(tmp_path: Path) -> None:
    write_settings(
        tmp_path,
        'theme = "neon"\n'  # 1
        "colour = 1\n"  # 2
        "\n"  # 3
        "[budgets]\n"  # 4
        "maxDepth = 0\n"  # 5
        'maxChildrenPerNode = "8"\n'  # 6
        "maxWorkers = 3\n"  # 7
        "\n"  # 8
        "[phaseTimeouts]\n"  # 9
        'planning = "15m"\n'  # 10
        "[stop]\n"  # 11
        "grace = 1\n",  # 12
    )
    result = load_settings(tmp_path)
    assert [str(p) for p in result.problems] == [
        ".legion/settings.toml:1: setting 'theme': expected one of legion-dark, legion-light, "
        "legion-ansi, got 'neon'",
        ".legion/settings.toml:2: setting 'colour': unknown setting",
        ".legion/settings.toml:5: setting 'budgets.maxDepth': expected an integer ≥ 1, got 0",
        ".legion/settings.toml:6: setting 'budgets.maxChildrenPerNode': expected an integer ≥ 1, "
        "got '8'",
        ".legion/settings.toml:7: setting 'budgets.maxWorkers': unknown budget",
        ".legion/settings.toml:10: setting 'phaseTimeouts.planning': expected milliseconds "
        "(integer ≥ 0), got '15m'",
        ".legion/settings.toml:11: setting 'stop': unknown setting",
    ]
    # a setting with a problem keeps its default
    assert result.settings.max_depth == DEFAULT_SETTINGS.max_depth
    assert result.settings.theme == DEFAULT_SETTINGS.theme


def test_toml_syntax_error_has_its_line(tmp_path: Path) -> None:
    write_settings(tmp_path, "[budgets]\nmaxDepth = = 3\n")
    (problem,) = load_settings(tmp_path).problems
    assert problem.line == 2 and "not valid TOML" in problem.message
    assert load_settings(tmp_path).settings == DEFAULT_SETTINGS


def test_unreadable_settings(tmp_path: Path) -> None:
    (tmp_path / ".legion" / "settings.toml").mkdir(parents=True)
    (problem,) = load_settings(tmp_path).problems
    assert problem.message == "cannot read: Is a directory"
