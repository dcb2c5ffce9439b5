"""The exec backend: placeholders, the inbox, SIGINT as abort, the sweep as stop."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from process_helpers import holds_a_line, launch_spec, marked, process_on_pid, until

from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.common import normalize_bound, resolve_argv
from legion_tui.supervisor.backends.exec_handle import ExecHandle
from legion_tui.supervisor.backends.registry import make_handle

pytestmark = pytest.mark.host

# Echo the placeholders and the inbox path, then wait (SIGINT ends it: KeyboardInterrupt).
ECHO = (
    "import os, sys, time\n"
    "print(sys.argv[1:], os.environ['LEGION_INBOX'], os.environ['LEGION_SESSION_FILE'], "
    "flush=True)\n"
    "while True: time.sleep(0.05)\n"
)
DEAF = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)


def _spec(tmp_path: Path, code: str, *args: str) -> LaunchSpec:
    spec = launch_spec(
        tmp_path, kind="exec", name="tool-0", command=[sys.executable, "-c", code, *args]
    )
    assert isinstance(spec, LaunchSpec)
    return spec


def test_placeholders_are_filled_and_other_braces_survive(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "")
    argv = resolve_argv(["run", "{task}", "--log={session_file}", "{cwd}/{name}", '{"a": 1}'], spec)
    assert argv == [
        "run",
        "Fix the retry path.",
        f"--log={spec.session_file}",
        f"{spec.cwd}/tool-0",
        '{"a": 1}',
    ]


def test_a_junk_abort_bound_falls_back_to_five_seconds() -> None:
    for junk in (0.0, -1.0, float("nan"), float("inf")):
        assert normalize_bound(junk) == 5.0
    assert normalize_bound(1e12) == 3600.0
    assert normalize_bound(2.5) == 2.5


async def test_exec_logs_reads_its_inbox_and_aborts_with_sigint(tmp_path: Path) -> None:
    spec = _spec(tmp_path, ECHO, "{task}", "{name}")
    handle = make_handle(spec)
    assert isinstance(handle, ExecHandle) and handle.backend == "process"
    await handle.start()
    log = spec.run_dir / "terminal" / "n1.log"
    try:
        assert await until(lambda: holds_a_line(log))
        inbox = spec.run_dir / "inbox" / "n1.md"
        expected = f"['Fix the retry path.', 'tool-0'] {inbox} {spec.session_file}\n"
        assert log.read_text() == expected
        assert handle.turn_running()

        assert await handle.steer("stop polishing") == "queued"
        await handle.deliver("[legion mail #4] hi")
        assert inbox.read_text() == "stop polishing\n[legion mail #4] hi\n"

        result = await handle.abort()
        assert (result.outcome, result.dropped) == ("interrupted", 0)
        assert handle.exited is not None and handle.exited != 0
        assert (await handle.abort()).outcome == "no-turn"
        await handle.idle()
    finally:
        report = await handle.stop(force=False, grace=1.0)
    assert report.survivors == []


async def test_a_stop_after_the_command_ended_never_signals_whoever_has_its_pid_now(
    tmp_path: Path,
) -> None:
    """Once reaped, an agent's pid is the kernel's to hand out again: a stop of an agent
    that ended minutes before must not signal the process on its pid now, a session
    leader like every agent here (the likeliest story of a CI run's failure: a Claude
    Code, which exits 0 on SIGTERM, read settled with its process gone)."""
    handle = make_handle(_spec(tmp_path, ""))
    assert isinstance(handle, ExecHandle)
    await handle.start()
    await handle.idle()
    child = handle.child
    assert child is not None and await until(lambda: child.reaped)
    stranger = process_on_pid(child.pid, ["sleep", "60"])
    try:
        report = await handle.stop(force=False, grace=1.0)
        assert stranger.poll() is None, f"the stop ended pid {child.pid}'s new process"
        assert stranger.pid not in report.signalled, report
    finally:
        stranger.kill()
        stranger.wait()


@pytest.fixture
def host_ignores_interrupts() -> Iterator[None]:
    """The host started as a background job of a shell without job control (`legion …
    &` in a script): SIGINT and SIGQUIT ignored, which exec passes on to every child."""
    saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}
    try:
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)


@pytest.mark.usefixtures("host_ignores_interrupts")
async def test_abort_interrupts_a_command_whose_host_ignores_sigint(tmp_path: Path) -> None:
    # Found by `make soak`, whose suite ran as such a job: every exec abort was a
    # `timeout`, and ^C typed into an exec command's terminal did not end it.
    spec = _spec(tmp_path, ECHO, "{task}", "{name}")
    handle = make_handle(spec)
    await handle.start()
    log = spec.run_dir / "terminal" / "n1.log"
    try:
        assert await until(lambda: log.exists() and log.read_text() != "")
        assert (await handle.abort()).outcome == "interrupted"
    finally:
        report = await handle.stop(force=True)
    assert report.survivors == []
    # The host keeps its own choice: ^C still does not end it.
    assert signal.getsignal(signal.SIGINT) not in (signal.SIG_DFL, signal.default_int_handler)


async def test_exec_that_ignores_sigint_is_a_timeout_and_keeps_running(tmp_path: Path) -> None:
    spec = _spec(tmp_path, DEAF)
    handle = make_handle(spec)
    await handle.start()
    log = spec.run_dir / "terminal" / "n1.log"
    try:
        assert await until(lambda: log.exists() and "ready" in log.read_text())
        result = await handle.abort(bound=0.3)
        assert result.outcome == "timeout"
        assert handle.exited is None and handle.turn_running()
    finally:
        report = await handle.stop(force=True)
    assert report.survivors == []
    assert marked(spec.run_id) == []


async def test_a_missing_exec_command_is_refused_at_start(tmp_path: Path) -> None:
    spec = launch_spec(tmp_path, kind="exec", command=["/nonexistent/agent", "{task}"])
    assert isinstance(spec, LaunchSpec)
    handle = make_handle(spec)
    with pytest.raises(FileNotFoundError, match="/nonexistent/agent"):
        await handle.start()
    assert handle.pid is None


async def test_a_relative_command_is_found_in_the_childs_folder(tmp_path: Path) -> None:
    # The child starts in spec.cwd, so `./bin/agent` means spec.cwd/bin/agent there, not
    # a file next to wherever the supervisor runs (pytest runs in the repository).
    work = tmp_path / "work"
    (work / "bin").mkdir(parents=True)
    agent = work / "bin" / "agent"
    agent.write_text(f"#!{sys.executable}\nprint('agent ran', flush=True)\n")
    agent.chmod(0o755)
    spec = launch_spec(tmp_path, kind="exec", command=["./bin/agent"], cwd=work)
    assert isinstance(spec, LaunchSpec)
    handle = make_handle(spec)
    await handle.start()
    try:
        assert await until(lambda: handle.exited is not None)
        assert handle.exited == 0
    finally:
        await handle.stop(force=True)
    elsewhere = launch_spec(tmp_path, kind="exec", command=["./bin/agent"], cwd=tmp_path)
    assert isinstance(elsewhere, LaunchSpec)
    with pytest.raises(FileNotFoundError, match=r"command not found: \./bin/agent"):
        await make_handle(elsewhere).start()


# An interactive command: it asks only when it has a terminal, then waits for an answer.
ASKS = (
    '[ -t 0 ] && [ -t 1 ] && echo "on a terminal"\n'
    '{ : </dev/tty; } 2>/dev/null && echo "with a controlling terminal"\n'
    'printf "\\033[1;32mname?\\033[0m "\n'
    "read -r name\n"
    'echo "hello $name"\n'
)


async def test_exec_runs_on_a_terminal_its_question_is_answered_by_a_steer(
    tmp_path: Path,
) -> None:
    """aider, a shell or an installer asking "continue?" behave only on a terminal: the
    command sees one (and it is its controlling terminal), its current line — colours
    played through pyte, not escape soup — reaches the row, and a steer answers it."""
    spec = launch_spec(tmp_path, kind="exec", name="asker", command=["bash", "-c", ASKS])
    assert isinstance(spec, LaunchSpec)
    lines: list[str] = []
    handle = make_handle(spec, on_line=lines.append)
    assert isinstance(handle, ExecHandle)
    await handle.start()
    log = spec.run_dir / "terminal" / "n1.log"
    try:
        assert await until(lambda: bool(lines) and lines[-1] == "name?")
        text = log.read_text()
        assert "on a terminal" in text and "with a controlling terminal" in text, text
        assert "\x1b[1;32m" in text  # the log keeps the bytes; the line is the screen's
        assert await handle.steer("legion") == "queued"
        assert await until(lambda: handle.exited is not None)
        await handle.idle()  # the exited command's last output drained into the log
        assert handle.exited == 0
        assert log.read_text().splitlines()[-1] == "hello legion"
        assert lines[-1] == "hello legion"
        inbox = spec.run_dir / "inbox" / "n1.md"
        assert inbox.read_text() == "legion\n"  # a card's own inbox reader still gets it
    finally:
        report = await handle.stop(force=True)
    assert report.survivors == []
    assert marked(spec.run_id) == []


async def test_mail_to_an_exec_command_is_never_typed_into_its_terminal(tmp_path: Path) -> None:
    """A letter typed into a shell would run as commands: mail goes to the inbox only."""
    spec = launch_spec(
        tmp_path, kind="exec", command=["bash", "-c", 'read -r line; echo "got: $line"']
    )
    assert isinstance(spec, LaunchSpec)
    handle = make_handle(spec)
    await handle.start()
    try:
        await handle.deliver("[legion mail #1] rm -rf nothing")
        assert await handle.steer("typed") == "queued"
        assert await until(lambda: handle.exited is not None)
        await handle.idle()
        log = (spec.run_dir / "terminal" / "n1.log").read_text()
        assert "got: typed" in log and "legion mail" not in log
    finally:
        await handle.stop(force=True)
