"""Every user-visible string that upstream froze, in one place (pinned by tests)."""

from __future__ import annotations

STOP_HINT_WIDE = "/legion stop [--force] [name|all]"
STOP_HINT_NARROW = "/legion stop"

STALL_SECONDS = 300.0
ABORT_BOUND_SECONDS = 5.0


def fmt_duration(seconds: float) -> str:
    """`00:07:31` — hours:minutes:seconds, hours growing past 99 if they must."""
    s = max(0, int(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def working(tool: str, seconds: float) -> str:
    return f"working · {tool} {fmt_duration(seconds)}"


def stall_marker(name: str, tool: str, seconds: float) -> str:
    minutes = int(seconds // 60)
    return (
        f"stuck {minutes}m in {tool} — steer cannot reach a running tool call; "
        f"abort can (legion abort {name})"
    )


def stopped(name: str) -> str:
    return f"Stopped {name}."


def already_retired(name: str, execution: str, retired_at: str) -> str:
    return (
        f"No non-retired children to stop. {name} is already retired "
        f"(execution: {execution}, retired at {retired_at})"
    )


def retired_settled(names: list[str], execution: str) -> str:
    n = len(names)
    child = "child" if n == 1 else "children"
    return f"Retired {n} already-settled {child}: {', '.join(names)} (execution: {execution})"


def aborted(name: str, dropped: int = 0) -> str:
    text = f"Aborted {name}'s current turn (context kept; partial edits may remain)"
    if dropped:
        text += f" — dropped {dropped} queued message(s)"
    return text


def nothing_to_abort(name: str) -> str:
    return f"Nothing to abort: {name} is not running a turn."


def abort_timeout(name: str, seconds: float = ABORT_BOUND_SECONDS) -> str:
    return (
        f"Abort sent to {name}, but it had not settled within {seconds:g}s — the running "
        "tool may ignore cancellation; use stop (or stop with force) if it must die."
    )


def stop_confirm(name: str, role: str, pid: int | None, force: bool = False) -> str:
    verb = "Force stop" if force else "Stop"
    pid_text = f"pid {pid}" if pid is not None else "in-process"
    return f"{verb} {name} ({role}, {pid_text})? y confirms · any other key cancels"
