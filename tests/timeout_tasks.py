"""On a test's timeout, where each of its asyncio tasks is waiting.

pytest-timeout's signal method dumps the other threads' stacks, but an async test that
hangs sits in the loop's `select` on the main thread: what it waits on is an awaited
coroutine chain, invisible there. This plugin (registered by conftest.py) arms the same
SIGALRM, and its handler prints each task's chain of awaits before pytest-timeout's own
report fails the test.

It also keeps the teardown bounded after a failure: pytest-timeout stops its timer in
`pytest_exception_interact`, which runs for every failed report (for pdb's sake), so a
teardown that then hung — an event loop's close waiting on a task a failed test left
behind — hung the whole run with no report (a soak run sat there until killed).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_timeout

__all__ = ["pytest_exception_interact", "pytest_timeout_set_timer"]


def _awaited(coro: Any) -> Any:
    """What `coro` awaits. Two links expose no attribute to what is behind them, which
    is found among the object's references: an awaited future's C iterator, and an
    async generator's `asend`/`athrow` (what an `asynccontextmanager`'s exit awaits)."""
    for name in ("cr_await", "gi_yieldfrom", "ag_await"):
        if (awaited := getattr(coro, name, None)) is not None:
            return awaited
    if type(coro).__name__ in ("async_generator_asend", "async_generator_athrow"):
        gens = [r for r in gc.get_referents(coro) if inspect.isasyncgen(r)]
        return gens[0] if gens else None
    if type(coro).__name__ == "FutureIter":  # `await future`: the future behind it
        futures = [r for r in gc.get_referents(coro) if isinstance(r, asyncio.Future)]
        return futures[0] if futures else None
    return None


def _awaits(coro: Any) -> Iterator[str]:
    """`file:line function` for each coroutine in the chain `coro` awaits; a task or
    future at its end is named."""
    while coro is not None:
        frame = next((f for name in ("cr_frame", "gi_frame", "ag_frame")
                      if (f := getattr(coro, name, None)) is not None), None)
        if frame is not None:
            yield f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}"
        elif isinstance(coro, asyncio.Future):
            yield f"awaits {coro!r}"[:400]
        coro = _awaited(coro)


def _dump_tasks(item: pytest.Item) -> None:
    loop = asyncio._get_running_loop()
    if loop is None:
        return
    terminal = item.config.get_terminal_writer()
    for task in asyncio.all_tasks(loop):
        terminal.sep("~", title=f"asyncio task {task.get_name()}")
        terminal.write("".join(f"  {line}\n" for line in _awaits(task.get_coro())))


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        return None  # pytest-timeout's own timer

    def handler(signum: int, frame: object) -> None:
        __tracebackhide__ = True
        _dump_tasks(item)
        pytest_timeout.timeout_sigalrm(item, settings)

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    item.cancel_timeout = cancel  # type: ignore[attr-defined]
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, settings.timeout)
    return True


@pytest.hookimpl(trylast=True)
def pytest_exception_interact(node: pytest.Item | pytest.Collector) -> None:
    """After pytest-timeout stopped the timer on a failure: a fresh one for what is left
    of the test (its teardown), unless a debugger is what the failure opened."""
    if not isinstance(node, pytest.Item) or node.config.getvalue("usepdb"):
        return
    settings = pytest_timeout._get_item_settings(node)
    if settings.timeout and settings.timeout > 0:
        node.config.pluginmanager.hook.pytest_timeout_set_timer(item=node, settings=settings)
