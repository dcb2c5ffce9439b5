"""The argv attach runs for each agent kind (legion_tui.agents.attach), from real session files
and real programs, and the refusals for what has no UI or no session."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from legion_tui.agents.attach import AttachPlan, AttachRefused, attach_argv, session_entries

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


class FakeHost:
    """The host's side of a hand-over, recorded: an agent in a turn until it is aborted."""

    read_only = False

    def __init__(self, session: Path, ui: tuple[str, ...]) -> None:
        self.session, self.ui = session, ui
        self.busy = True
        self.give_back = True
        self.calls: list[str] = []

    def attach_plan(self, node_id: str) -> AttachPlan:
        return AttachPlan("w", "ui", self.ui, self.session.parent, self.session, True,
                          turn_running=self.busy, give_back=self.give_back)  # fmt: skip

    async def act(self, verb: str, node_id: str, **_fields: object) -> str:
        self.calls.append(verb)
        self.busy = False
        return "Interrupted w."

    async def hand_over(self, node_id: str) -> None:
        self.calls.append("hand_over")

    async def take_back(self, node_id: str, *, resume: bool = True) -> str | None:
        self.calls.append("take_back" if resume else "give_back_as_it_was")
        return "legion has w again." if resume else None

    def terminal_input(self, node_id: str, data: bytes) -> bool:
        return False


class FakeTerminal:
    def batch_update(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def suspend(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def refresh(self, *, layout: bool = False) -> object:
        return None


@pytest.mark.parametrize("code", [0, 3])
async def test_a_turn_is_aborted_after_y_then_handed_over_and_taken_back(
    tmp_path: Path, code: int
) -> None:
    """The hand-over's order (issue 31 item 1): ask → abort → end the control process →
    the UI (which adds an entry) → take back; a UI that fails is taken back as well."""
    from legion_tui.widgets.confirm import ConfirmRequest
    from legion_tui.widgets.overlay.attaching import Attacher

    session = tmp_path / "s.jsonl"
    session.write_text("{}\n")
    host = FakeHost(session, ("sh", "-c", f"printf '{{}}\\n' >> {session}; exit {code}"))
    said: list[tuple[str, bool]] = []
    asked: list[ConfirmRequest] = []
    runs: list[Coroutine[Any, Any, None]] = []
    attacher = Attacher(FakeTerminal(), host, say=lambda t, e: said.append((t, e)),  # type: ignore[arg-type]
                        ask=asked.append, run=runs.append)  # fmt: skip
    attacher.start("n1")
    assert [r.prompt for r in asked] == [
        "w is in a turn: abort it and open its session in ui? y confirms · any other key cancels"
    ]
    assert runs == [] and host.calls == []
    attacher.answered(asked[0], False)
    assert said[-1] == ("Cancelled — nothing aborted, nothing opened.", False)
    attacher.answered(asked[0], True)
    await runs.pop()
    assert host.calls == ["abort", "hand_over", "take_back"]
    exited = "" if code == 0 else f" (ui exited {code})"
    assert said[-1] == (
        f"Back from ui: w's session gained +1 entries{exited}. legion has w again.", code != 0
    )


async def test_a_stopped_node_is_given_back_as_it_was_after_its_ui(tmp_path: Path) -> None:
    """A node stopped before the attach: the session is legion's again when the UI
    exits (nothing else could start on it meanwhile), and the node stays stopped."""
    from legion_tui.widgets.overlay.attaching import Attacher

    session = tmp_path / "s.jsonl"
    session.write_text("{}\n")
    host = FakeHost(session, ("sh", "-c", f"printf '{{}}\\n' >> {session}"))
    host.busy, host.give_back = False, False
    said: list[tuple[str, bool]] = []
    runs: list[Coroutine[Any, Any, None]] = []
    attacher = Attacher(FakeTerminal(), host, say=lambda t, e: said.append((t, e)),  # type: ignore[arg-type]
                        ask=lambda _r: None, run=runs.append)  # fmt: skip
    attacher.start("n1")
    await runs.pop()
    assert host.calls == ["hand_over", "give_back_as_it_was"]
    assert said == [("Back from ui: w's session gained +1 entries", False)]
