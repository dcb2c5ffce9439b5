"""Find the `{"ok": bool, "reason": ...}` verdict an agent ends its report with (SPEC §3).

Candidates, in order — the first that parses as an object with a boolean "ok" wins:
1. a fenced ```json block (the last one first: the verdict closes a report);
2. the whole text;
3. the last non-blank line (what agents are asked to write; survives trailing blanks);
4. a string/escape-aware brace-balance scan backwards from the last `}` (a verdict that
   spans lines, or sits in prose, or is followed by a short note). Upstream added 3 and 4
   after a single stray brace in a report turned the old first-`{`-to-last-`}` span into
   unparseable prose and a valid verdict was thrown away.

Never throws; a text without such an object gives None.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from legion_tui.model_records import Verdict

__all__ = ["extract_verdict", "terminal_verdict"]

# A terminal's escape sequences (CSI, OSC, the two-byte ones): not words of the output.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_TERMINAL_TAIL = 64 * 1024  # bytes of a terminal log looked at: a verdict closes it

_FENCE = re.compile(r"```json[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)

# The backward scan is bounded so a huge report with many braces stays cheap: it looks
# at the tail of the text only, and tries at most this many closing braces.
_SCAN_TAIL_CHARS = 64 * 1024
_SCAN_MAX_CANDIDATES = 64


def extract_verdict(text: str) -> Verdict | None:
    """The verdict in `text`, or None. Pure; never raises on any input."""
    if not isinstance(text, str) or "{" not in text:
        return None
    for block in reversed(_FENCE.findall(text)):
        verdict = _as_verdict(block)
        if verdict is not None:
            return verdict
    verdict = _as_verdict(text)
    if verdict is not None:
        return verdict
    last_line = _last_non_blank_line(text)
    if last_line is not None:
        verdict = _as_verdict(last_line)
        if verdict is not None:
            return verdict
    return _scan_backwards(text)


def _as_verdict(candidate: str) -> Verdict | None:
    candidate = candidate.strip()
    if not candidate.startswith("{"):
        return None
    try:
        value: Any = json.loads(candidate)
    except (ValueError, RecursionError):
        return None
    return _verdict_from(value)


def _verdict_from(value: Any) -> Verdict | None:
    # Only a JSON object whose "ok" is a real boolean counts: `"ok": 1` or `"ok": "yes"`
    # are not machine-readable verdicts.
    if not isinstance(value, dict) or not isinstance(value.get("ok"), bool):
        return None
    reason = value.get("reason")
    if reason is not None and not isinstance(reason, str):
        reason = json.dumps(reason, ensure_ascii=False)
    return Verdict(ok=value["ok"], reason=reason, raw=value)


def _last_non_blank_line(text: str) -> str | None:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line
    return None


def _scan_backwards(text: str) -> Verdict | None:
    """Try each `}` from the last one backwards; match its `{` by a balanced scan."""
    base = max(0, len(text) - _SCAN_TAIL_CHARS)
    tail = text[base:]
    end = tail.rfind("}")
    tries = 0
    while end >= 0 and tries < _SCAN_MAX_CANDIDATES:
        tries += 1
        start = _matching_open(tail, end)
        if start is not None:
            verdict = _as_verdict(tail[start : end + 1])
            if verdict is not None:
                return verdict
        end = tail.rfind("}", 0, end)
    return None


def _matching_open(text: str, close: int) -> int | None:
    """Index of the `{` that balances the `}` at `close`, ignoring braces in strings.

    Walking right-to-left, a `"` opens/closes a string unless an odd number of
    backslashes precedes it (then it is an escaped quote inside a string).
    """
    depth = 0
    in_string = False
    i = close
    while i >= 0:
        ch = text[i]
        if ch == '"':
            backslashes = 0
            j = i - 1
            while j >= 0 and text[j] == "\\":
                backslashes += 1
                j -= 1
            if backslashes % 2 == 0:
                in_string = not in_string
        elif not in_string:
            if ch == "}":
                depth += 1
            elif ch == "{":
                depth -= 1
                if depth == 0:
                    return i
        i -= 1
    return None


def terminal_verdict(path: Path) -> Verdict | None:
    """The verdict an `exec` command printed as its last line (it writes no session: its
    terminal is its report), read from the tail of its terminal log without its escape
    sequences. None when there is none, or no log."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, fh.seek(0, 2) - _TERMINAL_TAIL))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    line = _last_non_blank_line(_ESCAPES.sub("", tail).replace("\r", "\n"))
    return None if line is None else _as_verdict(line)
