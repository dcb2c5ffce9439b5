"""Numbers read from a session file are numbers: finite, non-negative and bounded, or
the line is skipped and counted with its reason.

A session line is whatever its writer (or anyone who can write the file) put there, and
Python's json accepts `NaN`, `Infinity` and integers of any length. Before (issue 32):
one `"cost": {"total": NaN}` beat the budget and then failed every later spawn with
`NOT NULL constraint failed: usage.cost` — the run was poisoned; a negative cost let a $5
agent run on under a $1 budget; `"input": 10**400` crashed `legion inspect` with
OverflowError. The JSON decoding refuses the non-finite and the huge (`loads`), and each
translator reads a count or a cost through `count` and `cost`, which raise `BadFigure`
for what no model call reports.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["MAX_COST_USD", "MAX_TOKENS", "BadFigure", "cost", "count", "loads"]

MAX_TOKENS = 10**9  # tokens of one kind in one model call
MAX_COST_USD = 10_000.0  # dollars of one model call (or one result's running total)
_MAX_DIGITS = 20  # an integer literal longer than this is no figure of a session (ms, ns)


class BadFigure(ValueError):
    """A line whose figures no model call reports: skipped, with this reason."""


def _no_constant(name: str) -> Any:
    raise BadFigure(f"a non-finite number ({name})")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_DIGITS:
        raise BadFigure(f"an integer of {len(text.lstrip('-'))} digits")
    return int(text)


# ASCII digits → "0": an integer literal past `_MAX_DIGITS` digits is then a run of zeros
# in the translated text (JSON numbers are ASCII digits only). On bytes: a str's
# translate costs ten times as much.
_ZEROS = bytes.maketrans(b"123456789", b"0" * 9)
_LONG_RUN = b"0" * (_MAX_DIGITS + 1)


def loads(data: bytes | str) -> Any:
    """`json.loads` without NaN, ±Infinity or integers past 20 digits (BadFigure); bytes
    are decoded as strict UTF-8 (UnicodeDecodeError)."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if b"NaN" in raw or b"Infinity" in raw or _LONG_RUN in raw.translate(_ZEROS):
        # Maybe a constant or a long integer (or only a string holding one): the hooks
        # decide.
        return json.loads(text, parse_constant=_no_constant, parse_int=_bounded_int)
    # Neither hook could fire: the plain decoder, which calls no Python per integer,
    # gives the same value (the hooks were a third of a session line's parse, and a
    # thousand agents write a line a second each).
    return json.loads(text)


def count(mapping: dict[str, Any], key: str) -> int:
    """A token count: 0 when absent or not a number; BadFigure when negative, non-finite
    or past MAX_TOKENS."""
    value = mapping.get(key)
    if type(value) is int and 0 <= value <= MAX_TOKENS:
        return value  # the common case, first (four counts a line; a bool is not an int)
    # bool is an int subclass; `true` is not a number of tokens.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or not 0 <= value <= MAX_TOKENS:
        raise BadFigure(f"{key} {value!r} is not a count of tokens (0 … {MAX_TOKENS})")
    return int(value)


def cost(value: object, what: str = "cost") -> float:
    """A dollar figure: 0.0 when absent or not a number; BadFigure when negative,
    non-finite or past MAX_COST_USD."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    if not math.isfinite(value) or not 0 <= value <= MAX_COST_USD:
        raise BadFigure(f"{what} {value!r} is not an amount of dollars (0 … {MAX_COST_USD:g})")
    return float(value)
