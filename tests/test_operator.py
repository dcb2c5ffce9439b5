"""The Operator without the app: a verb asked, answered through `answered`, run through
the Operations, and what the user was told — read from a surface that records it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, get_args

import pytest
from app_helpers import FakeOps, canned_model
from textual.screen import Screen

from legion_tui import receipts
from legion_tui.dashboard.operator import ABORT, FORCE_STOP, STOP, VERBS, Operator
from legion_tui.model import NodeStatus
from legion_tui.widgets.confirm import ConfirmBar, ConfirmKind, ConfirmRequest
from legion_tui.widgets.overlay.message_box import MessageBox
from legion_tui.widgets.palette import SlashStop

pytestmark = pytest.mark.unit


class RecordingSurface:
    """The screen as the operator sees it, recording what it was asked to do."""

    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []  # (text, severity)
        self.asked: list[ConfirmRequest] = []
        self.work: list[Coroutine[Any, Any, object]] = []
        self.exited = False

    def say(
        self, text: str, *, severity: str = "information", title: str = "",
        timeout: float | None = None,
    ) -> None:
        self.said.append((text, severity))

    def prompts(self) -> tuple[ConfirmBar, MessageBox] | None:
        return None

    def ask(self, request: ConfirmRequest) -> None:
        self.asked.append(request)

    def run_op(self, work: Coroutine[Any, Any, object], group: str = "ops") -> None:
        self.work.append(work)

    def show(self, form: Screen[str | None], done: Callable[[str | None], None]) -> None:
        raise AssertionError("no form in these tests")

    def exit(self) -> None:
        self.exited = True

    @contextmanager
    def batch_update(self) -> Iterator[None]:
        yield

    @contextmanager
    def suspend(self) -> Iterator[None]:
        yield

    def refresh(self, *, layout: bool = False) -> object:
        return self

    def run_all(self) -> None:
        work, self.work = self.work, []
        for coroutine in work:
            asyncio.run(coroutine)  # type: ignore[arg-type]


def build() -> tuple[Operator, FakeOps, RecordingSurface]:
    model = canned_model()
    ops = FakeOps(model)
    surface = RecordingSurface()
    return Operator(model, ops, surface), ops, surface  # type: ignore[arg-type]


def test_each_verb_that_asks_first_is_one_record_keyed_by_its_kind() -> None:
    assert VERBS == {"stop": STOP, "force-stop": FORCE_STOP, "abort": ABORT}
    assert [v.undone for v in (STOP, FORCE_STOP, ABORT)] == ["stopped", "stopped", "aborted"]


def test_every_confirm_kind_has_an_answer() -> None:
    operator, ops, surface = build()
    for kind in get_args(ConfirmKind):
        operator.answered(ConfirmRequest(kind, "n3", "?"), confirmed=False)
    assert ops.calls == [] and not surface.exited
    said = [text for text, _ in surface.said]
    assert said.count("Cancelled — nothing stopped.") == 2  # stop, force stop
    assert "Cancelled — nothing aborted." in said


def test_stop_asks_then_y_stops_and_the_receipt_is_said() -> None:
    operator, ops, surface = build()
    operator.stop("n3")
    (request,) = surface.asked
    prompt = receipts.stop_confirm("worker-1", "worker", None)
    assert request == ConfirmRequest("stop", "n3", prompt)
    assert ops.calls == []  # nothing happens before y
    operator.answered(request, confirmed=True)
    surface.run_all()
    assert ops.calls == [("stop", "n3", {"force": False})]
    assert ("Stopped worker-1.", "information") in surface.said


def test_a_node_that_ended_while_asked_is_reported_not_stopped() -> None:
    operator, ops, surface = build()
    operator.abort("n3")
    (request,) = surface.asked
    assert request.kind == "abort"
    node = operator.model.nodes["n3"].node
    operator.model.upsert(replace(node, status=NodeStatus.SETTLED))
    operator.answered(request, confirmed=True)
    assert surface.work == [] and ops.calls == []
    assert (receipts.already_ended("worker-1", "settled"), "warning") in surface.said


def test_root_and_ended_agents_are_refused_without_asking() -> None:
    operator, _ops, surface = build()
    operator.stop("n0", force=True)
    operator.abort("n4")
    assert surface.asked == []
    assert [text for text, _ in surface.said] == [
        receipts.root_not_stoppable("root"),
        receipts.already_ended("scout-0", "settled"),
    ]


def test_quit_asks_while_agents_are_live_and_y_exits() -> None:
    operator, _ops, surface = build()
    operator.quit(ask_first=True)
    (request,) = surface.asked
    assert request == ConfirmRequest("quit", None, receipts.QUIT_CONFIRM)
    operator.answered(request, confirmed=True)
    assert surface.exited


def test_resolve_by_path_or_unique_name_else_why_not() -> None:
    operator, _ops, _surface = build()
    found = operator.resolve("root/lead-ui/worker-1")
    assert not isinstance(found, str) and found.node.id == "n8"
    unique = operator.resolve("lead-ui")
    assert not isinstance(unique, str) and unique.node.id == "n6"
    assert operator.resolve("nobody") == "No agent named nobody."
    ambiguous = operator.resolve("worker-1")
    assert isinstance(ambiguous, str) and ambiguous.startswith("worker-1 is ambiguous")


def test_slash_stop_of_an_ambiguous_name_stops_nothing() -> None:
    operator, ops, surface = build()
    operator.slash_stop(SlashStop(force=True, target="worker-1"))
    assert surface.work == [] and ops.calls == []
    assert surface.said[0][1] == "error"
