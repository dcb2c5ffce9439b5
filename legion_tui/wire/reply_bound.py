"""How long a control verb waits for its reply, and what it says when none comes.

A host stopped by SIGSTOP (or Ctrl-Z in its terminal) still takes connections and
requests — the kernel queues both — and never answers: `status`, `stop`, `spawn` and
even `wait --timeout 2` hung 20–60 s, until killed (issue 30). So while a verb waits, it
looks at the host once every `LOOK_S`: a stopped host is said at once, with its pid and
how to resume it; and a reply that does not come within the op's bound is an error that
says what the host is doing. Only ops whose purpose is to wait (`wait` without a
timeout, `phase` running a verification) wait as long as it takes.
"""

from __future__ import annotations

import _socket
import struct
from typing import Any

from legion_tui.procfs import stat_of
from legion_tui.wire.names import RequestError

__all__ = ["LOOK_S", "check_host", "peer_pid", "reply_bound"]

LOOK_S = 1.0  # how often a waiting verb looks at the host
QUICK_S = 30.0  # an op that reads or records (status, collect, mail, steer, abort…)
AGENTS_S = 120.0  # an op that starts or stops agents: a real agent takes seconds to start
BOUNDS: dict[str, float | None] = {
    "spawn": AGENTS_S, "resume": AGENTS_S, "stop": AGENTS_S, "wait": None, "phase": None,
}  # fmt: skip
WAIT_MARGIN_S = 10.0  # past a `wait`'s own timeout, for the host to answer that it passed

_STATES = {
    "T": "stopped (T)",
    "t": "stopped by a debugger (t)",
    "D": "waiting on a disk or device (D)",
    "R": "running (R)",
    "S": "sleeping (S)",
    "Z": "a zombie (Z)",
}


def reply_bound(op: str, fields: dict[str, Any]) -> float | None:
    """The longest `op` waits for its reply once sent (None: as long as it takes)."""
    timeout = fields.get("timeout")
    if op == "wait" and isinstance(timeout, int | float) and not isinstance(timeout, bool):
        return max(0.0, float(timeout)) + WAIT_MARGIN_S
    if op == "resume" and (fields.get("name") == "all" or fields.get("with_parents")):
        return None  # a few at a time, however many: the host itself is still watched
    return BOUNDS.get(op, QUICK_S)


def peer_pid(sock: _socket.socket) -> int | None:
    """The pid of the process that listens on the other end (SO_PEERCRED)."""
    try:
        raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):  # not Linux, or not connected
        return None
    pid: int = struct.unpack("3i", raw)[0]
    return pid or None


def check_host(pid: int | None, op: str, waited: float, bound: float | None) -> None:
    """Raise RequestError when the host is stopped, or `bound` has passed with no reply."""
    stat = stat_of(pid) if pid is not None else None
    host = f"the host (pid {pid})" if pid is not None else "the host"
    if stat is not None and stat.state in ("T", "t"):
        raise RequestError(
            "HOST_STOPPED",
            f"{host} is {_STATES[stat.state]} and answers nothing until it is resumed: "
            f"kill -CONT {pid} (or `fg` in its terminal)",
        )
    if bound is not None and waited >= bound:
        state = _STATES.get(stat.state, stat.state) if stat is not None else "gone"
        raise RequestError(
            "NO_REPLY", f"{host} did not answer `{op}` within {bound:g} s; it is {state}"
        )
