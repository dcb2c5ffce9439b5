"""Attach is a hand-over (issues 12 and 31) through a real terminal: the dashboard runs
in a pty over a real host with a real pi worker (scripted model server); `A` on the
settled worker ends its control process and suspends the dashboard, the REAL `pi
--session FILE` takes the terminal on the worker's own session (its earlier answer on
screen), a message typed there is answered and written to that session, and when pi
exits the dashboard comes back, says what the session gained, and has the worker again:
settled, and a follow-up from the message box is answered on the same session. A UI
that fails keeps its words on screen until Enter, and the worker is taken back as it
was."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import sys
import termios
from pathlib import Path

import pyte
import pytest
from agent_bins import PI_LINES
from model_server import ModelServer, Text
from pi_env import MODEL, PROVIDER
from real_pi_helpers import make_world, verdict_line, write_card
from test_app_page_floor_pty import read_until

pytestmark = pytest.mark.real

W, H = 120, 40
HOST = Path(__file__).with_name("attach_host.py")


def shown(screen: pyte.Screen) -> str:
    return "\n".join(screen.display)


def toasts(screen: pyte.Screen) -> str:
    """The toasts' words, their wrapped lines joined."""
    return " ".join(line.split("▌ ", 1)[1].strip() for line in screen.display if "▌ " in line)


def editor_ready(screen: pyte.Screen) -> bool:
    """pi's footer is on screen: `↑<input> ↓<output> …` and the model, under its editor."""
    return any(row.lstrip().startswith("↑") and MODEL in row for row in screen.display)


def start_host(world_project: Path, task: str) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(TERM="xterm-256color", PYTHONPATH=str(HOST.parent))
    pid, fd = pty.fork()
    if pid == 0:  # the child: size its terminal, then become the host
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", H, W, 0, 0))
        os.chdir(world_project)
        args = [sys.executable, str(HOST), str(world_project), task]
        os.execve(sys.executable, args, env)
    return pid, fd


def quit_host(pid: int, fd: int, stream: pyte.ByteStream, screen: pyte.Screen) -> None:
    """`q` (nothing live but root: no question), and the host exits 0."""
    os.write(fd, b"q")
    ended: list[int] = []

    def exited() -> bool:  # read on meanwhile: a full pty would stall its writer
        if not ended:
            done, status = os.waitpid(pid, os.WNOHANG)
            ended.extend([status] if done else [])
        return bool(ended)

    assert read_until(fd, stream, exited, 30), shown(screen)
    assert os.WIFEXITED(ended[0]) and os.WEXITSTATUS(ended[0]) == 0, ended


def end_host(pid: int, fd: int) -> None:
    """A host the test did not see quit (pid 0: it did) is killed; the pty closed."""
    if pid:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    os.close(fd)


@pytest.mark.parametrize("line", PI_LINES)
def test_attach_hands_the_real_pi_over_and_takes_it_back(
    line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ModelServer() as server:
        world = make_world(line, server, tmp_path, monkeypatch)
        server.script(
            Text(f"FIRST-ANSWER about pagination.\n{verdict_line('done')}", tokens=8),
            Text("SECOND-ANSWER: the v2 api it is.", tokens=8),
            Text(f"THIRD-ANSWER after the hand-back.\n{verdict_line('back')}", tokens=8),
        )
        pid, fd = start_host(world.project, "Say FIRST-ANSWER.")
        screen = pyte.Screen(W, H)
        stream = pyte.ByteStream(screen)
        try:
            assert read_until(fd, stream, lambda: "LEGION" in screen.display[0], 90), shown(screen)
            assert read_until(fd, stream, lambda: "○ worker" in shown(screen), 30), shown(screen)
            os.write(fd, b"A")  # settled: nothing to abort, no question
            # pi's own UI, on the worker's session: its earlier answer is there.
            assert read_until(fd, stream, lambda: "FIRST-ANSWER" in shown(screen)
                              and "LEGION" not in screen.display[0], 60), shown(screen)
            # pi's editor takes keys once its footer is drawn (its usage and the model).
            assert read_until(fd, stream, lambda: editor_ready(screen), 30), shown(screen)
            os.write(fd, b"use the v2 api")
            os.write(fd, b"\r")
            assert read_until(fd, stream, lambda: "SECOND-ANSWER" in shown(screen), 60), (
                shown(screen))
            os.write(fd, b"\x04")  # Ctrl+D on pi's empty editor: pi exits
            back = "Back from pi: worker's session gained +"
            assert read_until(fd, stream, lambda: back in shown(screen), 30), shown(screen)
            gained = shown(screen).split(back, 1)[1].split(" ", 1)[0]
            assert int(gained) >= 2  # the message and pi's answer, at least
            again = "legion has worker again: idle on its session"
            assert read_until(fd, stream, lambda: again in toasts(screen), 60), shown(screen)
            assert server.pending() == 1  # the UI's answer was asked for; no turn since
            # Taken back: settled (its row), and steerable — a follow-up is answered.
            assert read_until(fd, stream, lambda: "○ worker" in shown(screen), 30), (
                shown(screen))
            os.write(fd, b"s")
            read_until(fd, stream, lambda: "follow-up" in shown(screen), 10)
            os.write(fd, b"one more thing\r")
            assert read_until(fd, stream, lambda: server.pending() == 0, 60), shown(screen)
            assert read_until(fd, stream, lambda: "✓ back" in shown(screen), 60), shown(screen)
            assert read_until(fd, stream, lambda: "●1 ○1" in screen.display[0], 30), (
                shown(screen))  # the header counts the worker settled again
            quit_host(pid, fd, stream, screen)
            pid = 0
        finally:
            end_host(pid, fd)


def test_a_ui_that_fails_keeps_its_words_until_enter_and_the_agent_is_taken_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ModelServer() as server:
        world = make_world(PI_LINES[0], server, tmp_path, monkeypatch)
        # pi as the control process; as a UI (no --mode), a stand-in that cannot start.
        wrapper = tmp_path / "pi-ui-fails"
        wrapper.write_text(
            '#!/bin/sh\ncase " $* " in *" --mode "*) exec pi "$@";; esac\n'
            'echo "UI-STAND-IN: no terminal UI can start here" >&2\nexit 3\n'
        )
        wrapper.chmod(0o755)
        write_card(world.project, command=(str(wrapper), "--provider", PROVIDER, "--model", MODEL),
                   marker=world.marker)  # fmt: skip
        server.script(Text(f"FIRST-ANSWER.\n{verdict_line('done')}", tokens=8))
        pid, fd = start_host(world.project, "Say FIRST-ANSWER.")
        screen = pyte.Screen(W, H)
        stream = pyte.ByteStream(screen)
        try:
            assert read_until(fd, stream, lambda: "○ worker" in shown(screen), 90), shown(screen)
            os.write(fd, b"A")
            kept = "[legion] pi-ui-fails exited 3: press Enter to return to the dashboard"
            assert read_until(fd, stream, lambda: kept in shown(screen), 60), shown(screen)
            assert "UI-STAND-IN: no terminal UI can start here" in shown(screen)
            read_until(fd, stream, lambda: False, 1.0)  # still there: nothing returned
            assert "UI-STAND-IN" in shown(screen) and "LEGION" not in screen.display[0]
            os.write(fd, b"\r")
            said = "(pi-ui-fails exited 3). legion has worker again"
            assert read_until(fd, stream, lambda: said in toasts(screen), 60), shown(screen)
            assert read_until(fd, stream, lambda: "○ worker" in shown(screen), 30), (
                shown(screen))
            quit_host(pid, fd, stream, screen)
            pid = 0
        finally:
            end_host(pid, fd)
