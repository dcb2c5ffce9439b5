"""`legion budget` (issue 32 item 2): the run's budget shown, set and removed from a
shell; the user's settings file keeps every other byte; a running host applies a change
at once (a raised limit admits spawns again, a lowered one past the spend trips); a file
that does not parse, a bad amount and an agent's own shell are refused with why."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from supervisor_helpers import LEGION, STUCK, cli_env, hosted, run_cli, settled, spawn_one, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.wire.names import ROOT_ID, OpError

pytestmark = pytest.mark.host

USER_FILE = """\
# my settings: keep this comment
theme = "nord"   # the theme I like

[budget]   # money
usd = 5.0  # five dollars

[notify]
bell = false
"""


def _settings(project: Path) -> Path:
    path = project / ".legion" / "settings.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


async def test_set_changes_one_key_and_keeps_every_other_byte(tmp_path: Path) -> None:
    project = tmp_path / "project"
    path = _settings(project)
    path.write_text(USER_FILE)
    code, out, err = await run_cli("budget", "set", "0.50", cwd=project)
    assert code == 0, err
    assert out.startswith("Run budget set to $0.500 ([budget] usd in .legion/settings.toml)")
    assert path.read_text() == USER_FILE.replace("usd = 5.0  #", "usd = 0.5  #")
    code, out, _err = await run_cli("budget", cwd=project)
    assert code == 0 and out.startswith("Run budget: $0.500 ([budget] usd in"), out
    code, out, err = await run_cli("budget", "off", cwd=project)
    assert code == 0 and out.startswith("Run budget removed"), err
    assert "usd" not in path.read_text() and "# my settings: keep this comment" in path.read_text()
    code, out, _err = await run_cli("budget", cwd=project)
    assert out.startswith("No run budget"), out
    # No file yet: one is made with the table alone.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    code, _out, err = await run_cli("budget", "set", "2", cwd=fresh)
    assert code == 0, err
    assert _settings(fresh).read_text() == "[budget]\nusd = 2.0\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("set", "abc"), "'abc' is not an amount of dollars"),
        (("set", "-1"), "the budget must be more than $0, got -1"),
        (("set", "nan"), "the budget must be more than $0, got nan"),
        (("set",), "legion budget set: give an amount of dollars"),
        (("off", "3"), "legion budget off: takes no amount"),
    ],
)
async def test_a_bad_amount_is_refused_and_the_file_untouched(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    path = _settings(tmp_path)
    path.write_text(USER_FILE)
    code, out, err = await run_cli("budget", *args, cwd=tmp_path)
    assert code != 0 and said in err and out == "", (code, out, err)
    assert path.read_text() == USER_FILE


async def test_a_file_that_does_not_parse_is_left_alone(tmp_path: Path) -> None:
    path = _settings(tmp_path)
    broken = "[budget\nusd = 5\n"
    path.write_text(broken)
    code, _out, err = await run_cli("budget", "set", "1", cwd=tmp_path)
    assert code == 1 and "not valid TOML" in err and "left as it is" in err, err
    assert path.read_text() == broken


async def test_an_agents_shell_may_not_change_the_budget(tmp_path: Path) -> None:
    path = _settings(tmp_path)
    path.write_text(USER_FILE)
    env = {**cli_env(), "LEGION_NODE_ID": "worker-1a2b3c"}  # as every agent's shell has
    proc = await asyncio.create_subprocess_exec(
        LEGION, "budget", "set", "100", cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1 and b"this is agent worker-1a2b3c's shell" in err, err
    assert path.read_text() == USER_FILE


async def test_a_running_host_applies_a_change_at_once(tmp_path: Path) -> None:
    """Lowered past the spend: the host trips at its next model change and stops what
    runs; raised again: a spawn is admitted. `legion status` says the budget."""
    path = _settings(tmp_path)
    path.write_text("[budget]\nusd = 100\n")
    async with hosted(tmp_path) as sup:
        worker = await spawn_one(sup, name="w", sim=STUCK)
        await until(lambda: sup.model.nodes[worker.id].progress.cost > 0, 20, "some spend")
        code, out, err = await run_cli("status", cwd=tmp_path)
        assert code == 0 and " of a $100.00 budget · " in out.splitlines()[0], (out, err)
        code, _out, err = await run_cli("budget", "set", "0.0001", cwd=tmp_path)
        assert code == 0, err

        def tripped() -> bool:
            return any(e.type is EventType.BUDGET_EXCEEDED
                       for e in sup.model.nodes[ROOT_ID].events)  # fmt: skip

        await until(tripped, 20, "the lowered budget to trip")
        assert sup.model.budget_usd == 0.0001
        assert (await settled(sup, worker.id)).status is NodeStatus.RETIRED
        with pytest.raises(OpError) as refused:
            await spawn_one(sup, name="second")
        assert refused.value.code == "BUDGET"
        code, _out, err = await run_cli("budget", "set", "100", cwd=tmp_path)
        assert code == 0, err
        second = await spawn_one(sup, name="second")
        assert sup.model.budget_usd == 100
        assert second.status is not NodeStatus.FAILED
