"""argparse `type=` checks for the values every verb shares: a bad one is a usage error
(exit 2, one line naming the option) before anything connects, opens or spawns — never
a traceback, never a wait "after nans"."""

from __future__ import annotations

import argparse
import math

__all__ = ["child_name", "seconds", "session_name"]


def session_name(text: str) -> str:
    from legion_tui.supervisor.runs import SessionNameError, validate_session_name

    try:
        return validate_session_name(text)
    except SessionNameError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def child_name(text: str) -> str:
    """A node name as given; empty is not "pick one for me" (omit --name for that)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("a name cannot be empty (omit --name to get <role>-N)")
    return text


def seconds(text: str) -> float:
    """A duration in seconds: finite and not negative."""
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from err
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"seconds must be finite and ≥ 0, got {text!r}")
    return value
