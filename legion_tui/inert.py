"""The one sanitiser for text that comes from an agent: made inert before it reaches a
screen (rows, overlay, toasts, notifications, `status`, `collect`) or another agent's
prompt (mail, completion notices, tasks).

An agent writes whatever its model says, and a model can be told to say escapes: a
letter whose subject carried OSC 0 and OSC 52 retitled the user's terminal and wrote
its clipboard (issue 30); 3 000 `ESC[2J` reached a parent's next prompt. Every control
character but newline and tab — C0, DEL and C1 (U+0080–U+009F, which a terminal may read
as ESC-sequences of their own) — is shown as a visible stand-in instead: a person still
sees that something was there, and nothing is interpreted.
"""

from __future__ import annotations

import re

__all__ = ["CONTROL", "inert", "inert_counted"]

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␛ for ESC, ␇ for BEL…
    return "␡" if code == 0x7F else "\ufffd"


def inert(text: str) -> str:
    """`text` with every control character but newline and tab made visible."""
    if CONTROL.search(text) is None:  # the common case costs one scan, no copy
        return text
    return CONTROL.sub(_visible, text)


def inert_counted(text: str) -> tuple[str, int]:
    """`inert(text)` and how many characters it made visible (to say so)."""
    return CONTROL.subn(_visible, text)
