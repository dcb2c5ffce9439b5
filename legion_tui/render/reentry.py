"""The non-reentrancy gate of the frame renderers.

A renderer owns its frame buffers: a nested render (a render called while the same
renderer is mid-frame, e.g. from a callback) would `begin()` — zero — the buffers the outer
frame is still drawing into, and the outer frame would silently paint garbage. Upstream
kept that rule only in a comment until it bit (#369); here it raises.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def not_reentrant(fn: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Make a renderer method raise `RuntimeError("<fn> is not reentrant")` when nested.

    The gate is per instance: two renderers drawing into their own buffers may nest
    freely; the same renderer may not.
    """
    busy: set[int] = set()  # id() of the instances inside `fn` right now
    message = f"{fn.__name__} is not reentrant"

    @functools.wraps(fn)
    def gated(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        key = id(self)
        if key in busy:
            raise RuntimeError(message)
        busy.add(key)
        try:
            return fn(self, *args, **kwargs)
        finally:
            busy.discard(key)

    return gated
