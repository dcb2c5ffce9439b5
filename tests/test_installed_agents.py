"""The agents installed beside legion (`agents.installed`): found by `kind: auto` when PATH
has none, the newest line of a program first, and run with their own folder first on PATH.
The real pi run from `.venv/agents` is tests/test_real_installed_agents.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from legion_tui.agents.installed import agent_environment, agents_dir, find_installed
from legion_tui.agents.resolve import NoAgent, resolve_launch
from legion_tui.settings import AgentSettings, KindSettings

pytestmark = pytest.mark.unit


def _install(root: Path, line: str, program: str, *, executable: bool = True) -> Path:
    exe = root / line / "node_modules" / ".bin" / program
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text("#!/usr/bin/env node\n")
    exe.chmod(0o755 if executable else 0o644)
    return exe


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "agents"
    root.mkdir()
    monkeypatch.setenv("LEGION_AGENTS_DIR", str(root))
    return root


def test_the_newest_line_of_a_program_is_taken(installed: Path) -> None:
    _install(installed, "pi-0.73", "pi")
    newest = _install(installed, "pi-1.6", "pi")
    _install(installed, "pi-1.10", "pi", executable=False)  # not runnable: passed over
    assert find_installed("pi") == newest
    assert find_installed("codex") is None
    assert find_installed("/usr/bin/pi") is None  # a path is the settings' own


def test_an_empty_setting_looks_nowhere_and_the_default_is_legions_own_environment(
    tmp_path: Path,
) -> None:
    assert agents_dir({"LEGION_AGENTS_DIR": ""}) is None
    assert agents_dir({"LEGION_AGENTS_DIR": str(tmp_path)}) == tmp_path
    # Unset: `agents/` of the environment legion runs from, when it is there.
    import sys

    own = Path(sys.prefix) / "agents"
    assert agents_dir({}) == (own if own.is_dir() else None)


def test_an_npm_program_runs_with_its_own_folder_first_on_path(installed: Path) -> None:
    pi = _install(installed, "pi-1.6", "pi")
    env = agent_environment({"PATH": "/usr/bin:/bin", "HOME": "/h"}, str(pi))
    assert env == {"PATH": f"{pi.parent}:/usr/bin:/bin", "HOME": "/h"}
    # Anything else runs on the PATH it was given.
    assert agent_environment({"PATH": "/usr/bin"}, "pi") == {"PATH": "/usr/bin"}
    assert agent_environment({"PATH": "/usr/bin"}, "/opt/tools/pi") == {"PATH": "/usr/bin"}
    assert agent_environment({"PATH": "/usr/bin"}, "node_modules/.bin/pi") == {"PATH": "/usr/bin"}


def _auto(agent: AgentSettings, path: str) -> tuple[str, tuple[str, ...], str]:
    launch = resolve_launch("auto", (), requested=None, agent=agent, cwd=Path("/"), path=path)
    return launch.kind, launch.command, launch.via


def test_auto_takes_an_installed_agent_only_when_path_has_none(
    installed: Path, tmp_path: Path
) -> None:
    codex = _install(installed, "codex", "codex")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _auto(AgentSettings(), str(empty)) == ("codex", (str(codex),), "installed")
    # pi comes before Codex among the installed too, with its settings' flags kept.
    pi = _install(installed, "pi-1.6", "pi")
    agent = AgentSettings(kinds={"pi": KindSettings(provider="p", model="m")})
    assert _auto(agent, str(empty)) == (
        "pi", (str(pi), "--provider", "p", "--model", "m"), "installed"
    )
    # A claude on PATH wins over the installed pi: PATH is looked at first.
    on_path = tmp_path / "bin"
    _install(on_path, "x", "claude")
    path = str(on_path / "x" / "node_modules" / ".bin")
    assert _auto(AgentSettings(), path) == ("claude", (), "PATH")


def test_a_program_the_settings_name_is_never_swapped_for_an_installed_one(
    installed: Path, tmp_path: Path
) -> None:
    _install(installed, "pi-1.6", "pi")
    _install(installed, "codex", "codex")
    empty = str(tmp_path)
    mine = AgentSettings(kinds={"pi": KindSettings(command=("/opt/my-pi",))})
    assert _auto(mine, empty)[0] == "codex"  # its pi is not there; the installed pi is not it
    with pytest.raises(NoAgent) as refused:
        _auto(AgentSettings(default="pi", command=("/opt/my-pi",)), empty)
    assert "'/opt/my-pi' is not installed" in str(refused.value)
    # [agent] default = "pi" with no command of its own: the installed one runs.
    kind, command, via = _auto(AgentSettings(default="pi"), empty)
    assert (kind, via) == ("pi", "settings") and command[0].startswith(str(installed))


def test_a_refusal_says_where_it_looked(installed: Path, tmp_path: Path) -> None:
    with pytest.raises(NoAgent) as refused:
        _auto(AgentSettings(), str(tmp_path))
    assert f"(looked on PATH and in {installed} for: pi, claude, codex)" in str(refused.value)
    os.environ["LEGION_AGENTS_DIR"] = ""  # the fixture's monkeypatch restores it
    with pytest.raises(NoAgent) as nowhere:
        _auto(AgentSettings(), str(tmp_path))
    assert "(looked on PATH for: pi, claude, codex)" in str(nowhere.value)
