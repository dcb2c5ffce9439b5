"""The argv attach runs for each agent kind (legion_tui.agents.attach), from real session files
and real programs, and the refusals for what has no UI or no session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from legion_tui.agents.attach import AttachRefused, attach_argv, session_entries

pytestmark = pytest.mark.host

THREAD = "01a232e4-54dd-7550-bdb1-2ddb6a7fb059"


def program(tmp_path: Path, name: str) -> str:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return str(path)


def linked(tmp_path: Path, real_name: str) -> Path:
    """The node's `sessions/<id>.jsonl` link to the file the agent really writes."""
    real = tmp_path / "agent" / real_name
    real.parent.mkdir(parents=True, exist_ok=True)
    real.write_text('{"type":"session"}\n{"type":"message"}\n\n')
    link = tmp_path / "run" / "sessions" / "n1.jsonl"
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(real, link)
    return link


def test_pi_opens_its_own_file_with_the_cards_model_flags_and_not_its_rpc_ones(
    tmp_path: Path,
) -> None:
    pi = program(tmp_path, "pi")
    link = linked(tmp_path, "2026-12-02T05-00-00-000Z_abc.jsonl")
    command = [pi, "--mode", "rpc", "--provider", "p", "--model=m", "--continue",
               "--session-dir", "/x", "--append-system-prompt", "be brief"]
    argv, session = attach_argv("pi", "w", link, command, tmp_path, path=None)
    assert argv == (pi, "--provider", "p", "--model=m", "--append-system-prompt", "be brief",
                    "--session", str(session))
    assert session == Path(os.path.realpath(link)) and session_entries(session) == 2


def test_claude_resumes_its_session_id_and_codex_its_thread(tmp_path: Path) -> None:
    claude = program(tmp_path, "claude")
    sid = "573afc5e-0000-4000-8000-000000000001"
    argv, _ = attach_argv(
        "claude", "w", linked(tmp_path, f"{sid}.jsonl"),
        [claude, "-p", "--model", "opus", "--input-format", "stream-json"], tmp_path, path=None
    )
    assert argv == (claude, "--model", "opus", "--resume", sid)
    codex = program(tmp_path, "codex")
    (tmp_path / "run" / "sessions" / "n1.jsonl").unlink()
    link = linked(tmp_path, f"rollout-2026-12-02T05-00-00-{THREAD}.jsonl")
    argv, _ = attach_argv("codex", "w", link, [codex, "-c", 'model="x"', "app-server"],
                          tmp_path, path=None)
    assert argv == (codex, "-c", 'model="x"', "resume", THREAD)


def test_what_cannot_be_attached_says_why(tmp_path: Path) -> None:
    link = tmp_path / "run" / "sessions" / "n1.jsonl"
    with pytest.raises(AttachRefused, match="simulated agent"):
        attach_argv("sim", "w", link, [], tmp_path, path=None)
    with pytest.raises(AttachRefused, match="Terminal tab takes keys"):
        attach_argv("exec", "w", link, ["bash"], tmp_path, path=None)
    with pytest.raises(AttachRefused, match="w has no session yet"):
        attach_argv("pi", "w", link, [], tmp_path, path=None)
    linked(tmp_path, "s.jsonl")
    with pytest.raises(AttachRefused, match=r"'pi' is not installed .* npm install -g"):
        attach_argv("pi", "w", link, [], tmp_path, path="")
    with pytest.raises(AttachRefused, match="names no Codex thread"):
        attach_argv("codex", "w", link, [], tmp_path, path=None)


async def test_a_on_a_simulated_agent_says_it_has_no_ui_and_suspends_nothing(
    tmp_path: Path,
) -> None:
    from supervisor_helpers import hosted, settled, spawn_one, until

    from legion_tui.dashboard.app import make_app
    from legion_tui.supervisor.root_ops import RootOperations

    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, name="w", sim={"quick": True})
        await settled(sup, node.id)
        # The root hears of w's ending (its notice) a step after the settle: before the
        # dashboard opens, or that toast would be said beside the refusal.
        await until(lambda: sup.model.announced == 1, what="the root told of w's ending")
        app = make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir)
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            app.railway.select(node.id)
            await pilot.press("A")
            await pilot.pause()
            said = [n.message for n in app.notifications]
            assert said == ["w is a simulated agent: it has no UI of its own to open"]
            assert app.operator.attacher.attached is None
            assert sup.names.node(node.id).status.value == "settled"
