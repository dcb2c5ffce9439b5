"""`exec` children: any command line, on a pseudo-terminal, no notion of a turn.

The command runs on a pty (`pty_terminal`): it sees a terminal, its output goes to the
terminal log and its current line is the node's activity. Honest limits (SPEC §6.1,
§6.3): while the process lives it counts as "in a turn"; abort sends SIGINT to its group
and reports `interrupted` only if it then exited within the bound; a steer is typed into
its terminal (an answer to its prompt) and appended to `$LEGION_INBOX`, mail only
appended there (a letter typed into a shell would run as commands) — both only `queued`.

Needs you: while the command sleeps reading its terminal (`tty_wait`: seen on two
samples in a row, `ASK_EVERY` apart) the node is asked its terminal's current line —
the prompt — and BLOCKED; the steer typed in answers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from legion_tui.model import Backend
from legion_tui.supervisor.backend import (
    ABORT_BOUND,
    AbortResult,
    LaunchSpec,
    SteerOutcome,
)
from legion_tui.supervisor.backends.asking import InputSink, Questions
from legion_tui.supervisor.backends.common import (
    ProcessChildHandle,
    child_env,
    inbox_path,
    log_path,
    normalize_bound,
    require_executable,
    resolve_argv,
)
from legion_tui.supervisor.processes.child_process import ChildProcess
from legion_tui.supervisor.processes.process import spawn_child
from legion_tui.supervisor.processes.pty_terminal import LineSink, PtyTerminal
from legion_tui.supervisor.processes.tty_wait import look

__all__ = ["ExecHandle"]

OUTPUT_BOUND = 1.0  # how long an exited command's last output may take to drain
ASK_EVERY = 0.25  # how often a live command is looked at for a read of its terminal
# ... while its terminal is quiet: a look is a walk of its process tree in /proc from a
# worker thread, and a thousand quiet agents looked at four times a second cost a sixth
# of the host's CPU (issue 35). A program that asks prints its prompt first: that
# output, a key typed, or a read seen brings the quick looks back.
QUIET_ASK_EVERY = 1.0
QUIET_AFTER = 2.0  # seconds without output or typed input before a terminal is quiet
# The longer it has been quiet, the less often (an eighth of its quiet time, at most
# this): at one look a second, a thousand agents quiet for minutes still took a quarter
# of the host's CPU time, on its worker threads. A silent read after a long quiet is
# then seen within a few seconds.
QUIET_ASK_MOST = 4.0


def look_again_in(reading: bool, quiet_for: float) -> float:
    """When to look again at a command's terminal for a read: soon while it reads (a
    second sighting asks, and an answer must be seen taken) or was busy lately; less
    often the longer it has been quiet."""
    if reading or quiet_for < QUIET_AFTER:
        return ASK_EVERY
    return min(QUIET_ASK_MOST, max(QUIET_ASK_EVERY, quiet_for / 8))


class ExecHandle(ProcessChildHandle):
    backend: Backend = "process"

    def __init__(
        self,
        spec: LaunchSpec,
        *,
        on_line: LineSink | None = None,
        on_input: InputSink | None = None,
    ) -> None:
        if not spec.command:
            raise ValueError(f"{spec.name}: an exec card needs a `command`")
        self.spec = spec
        self.node_id = spec.node_id
        self.pid: int | None = None
        self.session_file = spec.session_file
        self.inbox = inbox_path(spec)
        self.child: ChildProcess | None = None
        self._on_line = on_line
        self.terminal: PtyTerminal | None = None
        self.questions = Questions(on_input)
        self._watching: asyncio.Task[None] | None = None

    async def start(self) -> None:
        spec = self.spec
        assert spec.command is not None
        self.inbox.parent.mkdir(parents=True, exist_ok=True)
        self.inbox.touch()
        argv = resolve_argv(spec.command, spec)
        env = child_env(spec, inbox=self.inbox)
        require_executable(argv, env, spec.cwd)
        env.setdefault("TERM", "xterm-256color")  # what the pty's screen (pyte) understands
        terminal = self.terminal = PtyTerminal(log_path(spec), on_line=self._on_line)
        try:
            self.child = await spawn_child(
                argv, env=env, cwd=spec.cwd, log_path=log_path(spec), terminal=terminal.slave_fd
            )
        except BaseException:
            terminal.close()
            raise
        terminal.child_started()
        self.pid = self.child.pid
        if self.questions.has_sink:
            self._watching = asyncio.get_running_loop().create_task(self._watch_reads())

    async def _watch_reads(self) -> None:
        """Ask while the command reads its terminal; the answer is the typed steer."""
        child, terminal = self.child, self.terminal
        assert child is not None and terminal is not None
        seen = False  # reading at the last sample too
        while child.returncode is None:
            group = terminal.foreground()
            reading = group is not None and await look(child.pid, group, terminal.device)
            if reading and seen and self.questions.current is None:
                self.questions.ask("terminal", terminal.line or "input", lambda _text: None)
            elif not reading:
                self.questions.drop("terminal")
            seen = reading
            await asyncio.sleep(look_again_in(reading, terminal.quiet_for()))
        self.questions.clear()

    def turn_running(self) -> bool:
        return self.child is not None and self.child.returncode is None

    async def idle(self) -> None:
        if self.child is not None:
            await asyncio.shield(self.child.exited_future())
            if self.terminal is not None:
                # Its last words are still in the pty: into the log before it is judged.
                await self.terminal.hung_up(OUTPUT_BOUND)

    async def abort(self, *, keep_queue: bool = False, bound: float = ABORT_BOUND) -> AbortResult:
        # Nothing is queued on our side (the inbox is the command's to read): dropped 0.
        child = self.child
        if child is None or not self.turn_running():
            return AbortResult("no-turn", 0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pgid, signal.SIGINT)
        code = await child.wait(normalize_bound(bound))
        if code is None:
            return AbortResult("timeout", 0)  # it caught the SIGINT (an interactive CLI)
        return AbortResult("interrupted", 0, exited=code)

    def _append(self, text: str) -> None:
        data = text if text.endswith("\n") else text + "\n"
        # One O_APPEND write per message: a reader never sees half of one.
        fd = os.open(self.inbox, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, data.encode())
        finally:
            os.close(fd)

    async def steer(self, text: str) -> SteerOutcome:
        self.questions.answer(text)  # typed below: the answer to the prompt, if one waits
        self._append(text)
        if self.terminal is not None and self.turn_running():
            self.terminal.type(text)
        return "queued"

    async def deliver(self, envelope: str) -> None:
        self._append(envelope)

    async def _close_channels(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            with contextlib.suppress(BaseException):
                await self._watching
        if self.terminal is not None:
            self.terminal.close()
