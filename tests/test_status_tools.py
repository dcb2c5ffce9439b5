"""What `legion status` says about a node: its in-flight tool stack (SPEC §3: nesting vs
parallel) and its stored verdict."""

from __future__ import annotations

from dataclasses import replace

import pytest

from legion_tui.model import NodeStatus
from legion_tui.model_records import InFlightTool, Node
from legion_tui.receipts import in_flight_suffix
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.supervisor.hearing.status import render_status, status_document, tool_label

pytestmark = pytest.mark.unit


def test_one_call_is_just_its_name() -> None:
    stack = [InFlightTool("a", "bash", 1.0)]
    assert in_flight_suffix(stack) == ""
    assert tool_label(stack) == "bash"


def test_a_whole_chain_of_parent_ids_is_nesting() -> None:
    stack = [
        InFlightTool("a", "codemode", 1.0),
        InFlightTool("b", "subagent", 2.0, parent_id="a"),
        InFlightTool("c", "grep", 3.0, parent_id="b"),
    ]
    assert in_flight_suffix(stack) == " (inside codemode ×2)"
    assert tool_label(stack) == "grep (inside codemode ×2)"


def test_calls_that_cannot_be_told_apart_are_counted() -> None:
    parallel = [InFlightTool("a", "read", 1.0), InFlightTool("b", "grep", 2.0)]
    assert tool_label(parallel) == "grep (+1 more)"
    # The top is nested in b, but b's own parent is unknown: not one chain.
    partial = [
        InFlightTool("a", "read", 1.0),
        InFlightTool("b", "codemode", 2.0),
        InFlightTool("c", "bash", 3.0, parent_id="b"),
    ]
    assert tool_label(partial) == "bash (+2 more)"


def test_a_stored_verdict_is_shown_parsed_and_a_damaged_one_as_none() -> None:
    good = Node(
        "n1",
        "r",
        "root",
        "w0",
        "root/w0",
        "worker",
        "sim",
        "inprocess",
        status=NodeStatus.SETTLED,
        verdict='{"ok": true, "reason": "shipped"}',
    )
    damaged = replace(good, id="n2", verdict="not json {")
    doc = status_document(
        "r", "main", [(good, SessionProgress()), (damaged, SessionProgress())], now=0.0
    )
    assert [n["verdict"] for n in doc["nodes"]] == [{"ok": True, "reason": "shipped"}, None]
    assert render_status(doc).count("settled · verdict ✓ (simulated) shipped") == 1


def test_a_tool_never_runs_longer_than_its_agent_has() -> None:
    """The demo replays a history with past timestamps: a 4-second-old agent was "in bash
    for 06:51" (and stuck) in `legion status` while the dashboard said 4 s (issue 13)."""
    born = 1000.0
    node = Node("n1", "r", "root", "w0", "root/w0", "worker", "sim", "inprocess",
                status=NodeStatus.RUNNING, created_at=born)
    replayed = SessionProgress(in_flight=[InFlightTool("a", "bash", born - 411)])
    doc = status_document("r", "main", [(node, replayed)], now=born + 4)
    assert doc["nodes"][0]["activity"] == {"tool": "bash", "seconds": 4.0, "stalled": False}
    assert "stuck" not in render_status(doc)


def test_every_tok_s_agrees_over_the_same_window_and_names_it() -> None:
    """Issue 32 item 4: one agent that decoded 600 tokens in 12 s. With the last 10 s
    inside its generation, the row's rate (the header's and the chart's now), `legion
    status`'s two rates and `legion inspect`'s are one figure; 5 s after it stopped, the
    live window holds half as many tokens while the decode average stays — two windows,
    each printed with its name."""
    from legion_tui.render.rates import node_rate
    from legion_tui.session.live_rate import live_tok_s
    from legion_tui.session.report import progress_as_dict, progress_as_text
    from legion_tui.state import NodeView

    progress = SessionProgress(generation_ms=12_000.0)
    progress.tokens.output = 600
    progress.rate_series.append(RateSegment(100.0, 112.0, 600))
    node = Node("n1", "r", "root", "w0", "root/w0", "worker", "pi", "pi-rpc",
                status=NodeStatus.RUNNING, created_at=99.0)  # fmt: skip
    view = NodeView(node, progress)

    def status_at(now: float) -> tuple[dict[str, object], str]:
        rates = {node.id: live_tok_s(progress, now)}
        doc = status_document("r", "main", [(node, progress)], now=now, rates_now=rates)
        return doc["nodes"][0], render_status(doc)

    entry, text = status_at(112.0)
    assert node_rate(view, 112.0) == pytest.approx(50.0)
    assert (entry["tok_s_now"], entry["tok_s"], progress_as_dict(progress)["tok_s"]) == (
        50.0, 50.0, pytest.approx(50.0)
    )
    assert "600 tokens out · 50 tok/s now (10 s) · 50 tok/s decode avg" in text
    assert "rate    50.0 tok/s (out ÷ 12.000 s of generation)" in progress_as_text(progress, "w")

    entry, text = status_at(117.0)
    assert node_rate(view, 117.0) == pytest.approx(25.0) == entry["tok_s_now"]
    assert "25 tok/s now (10 s) · 50 tok/s decode avg" in text
    # Ended, it has no rate now; its decode average stays.
    ended = replace(node, status=NodeStatus.SETTLED)
    doc = status_document("r", "main", [(ended, progress)], now=117.0)
    assert doc["nodes"][0]["tok_s_now"] is None
    assert "now (10 s)" not in render_status(doc) and "50 tok/s decode avg" in render_status(doc)


def test_a_start_waiting_for_room_says_so_in_the_row_and_in_status() -> None:
    """A Ray launch the cluster has no room for yet (issue 35 item 4): the host's note
    leads the node's row and its `legion status` block, over "waiting for its first
    answer"; once it runs, the note is gone and the row says what it does."""
    from legion_tui.state import NodeView
    from legion_tui.widgets.tree.rows import activity

    waiting = "waiting for a place on the cluster: needs 0.25 CPU"
    node = Node("n1", "r", "root", "w0", "root/w0", "worker", "sim", "ray",
                status=NodeStatus.STARTING, created_at=1.0)  # fmt: skip
    view = NodeView(node, SessionProgress(), note=waiting)
    assert activity(view, 2.0).text == waiting and activity(view, 2.0).tone == "warning"
    doc = status_document("r", "main", [(node, view.progress)], now=2.0, notes={"n1": waiting})
    assert f"starting · {waiting}" in render_status(doc)
    view.note = None
    assert activity(view, 2.0).text != waiting


def test_the_tree_says_what_status_says_a_live_node_does() -> None:
    """`legion tree` (how a lead watches its team, and `legion run`'s last word) said
    "starting · between tool calls" of a member queued on the cluster, and of an exec
    command at work, where `legion status` said what each did (tried on a 2-CPU head)."""
    from legion_tui.supervisor.hearing.status import render_tree

    waiting = "waiting for a place on the cluster: needs 1 CPU"
    queued = Node("n1", "r", "root", "worker-b", "root/worker-b", "worker", "exec", "ray",
                  status=NodeStatus.STARTING, created_at=1.0)  # fmt: skip
    working = replace(queued, id="n2", name="worker-a", path="root/worker-a",
                      status=NodeStatus.RUNNING)  # fmt: skip
    rows = [(queued, SessionProgress(), 0), (working, SessionProgress(), 0)]
    text = render_tree(rows, 2.0, terminal={"n2": "wrote a.txt"}, notes={"n1": waiting})
    assert text.splitlines() == [
        f"◐ worker-b (worker) — starting · {waiting}",
        "● worker-a (worker) — running · terminal: wrote a.txt",
    ]
