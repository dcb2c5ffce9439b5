"""The railway tree as data: rails, folds, filter, glyphs, activity text, columns."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_helpers import FANOUT, NOW, canned_model, fanout_model

from legion_tui import receipts
from legion_tui.fanout.group import (
    AttemptResult,
    GroupState,
    attempt_result,
    group_of_row,
    group_state,
    short_name,
)
from legion_tui.model import NodeStatus
from legion_tui.model_records import InFlightTool
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.supervisor.hearing.status import tree_rows_from_doc
from legion_tui.widgets.tree.railway import plan_columns
from legion_tui.widgets.tree.rows import (
    GLYPHS,
    activity,
    elapsed_seconds,
    flatten,
    in_flight_context,
)

pytestmark = pytest.mark.unit


def rails(model, folded=frozenset(), needle=""):  # type: ignore[no-untyped-def]
    return [(r.rail, model.nodes[r.node_id].node.name) for r in flatten(model, set(folded), needle)]


def test_rails_draw_a_rail_map_with_children_under_their_parent_branch() -> None:
    model = canned_model()
    assert rails(model) == [
        ("┬", "root"),
        ("├─┬", "lead-api"),
        ("│ ├──", "worker-0"),
        ("│ ├──", "worker-1"),
        ("│ ├──", "scout-0"),
        ("│ └──", "worker-2"),
        ("├─┬", "lead-ui"),
        ("│ ├──", "worker-0"),
        ("│ ├──", "worker-1"),
        ("│ ├──", "scout-0"),
        ("│ └──", "worker-2"),
        ("└──", "scout-1"),
    ]


def test_every_status_has_its_station_glyph() -> None:
    assert {s.value: g for s, g in GLYPHS.items()} == {
        "running": "●", "starting": "◐", "blocked": "◆",
        "settled": "○", "failed": "✗", "retired": "◌",
    }


def test_fold_hides_the_subtree_and_counts_it() -> None:
    model = canned_model()
    rows = flatten(model, {"n1"})
    names = [model.nodes[r.node_id].node.name for r in rows]
    assert names == ["root", "lead-api", "lead-ui", "worker-0", "worker-1", "scout-0",
                     "worker-2", "scout-1"]
    lead = rows[1]
    assert lead.rail == "├─▸" and lead.hidden == 4


def test_filter_keeps_matches_and_their_ancestors_and_ignores_folds() -> None:
    model = canned_model()
    assert rails(model, folded={"n6"}, needle="scout") == [
        ("┬", "root"),
        ("├─┬", "lead-api"),
        ("│ └──", "scout-0"),
        ("├─┬", "lead-ui"),
        ("│ └──", "scout-0"),
        ("└──", "scout-1"),
    ]
    assert rails(model, needle="nobody-has-this-name") == []


def test_activity_working_then_stall_marker_at_exactly_300_seconds() -> None:
    model = canned_model()
    view = model.nodes["n3"]
    tool = InFlightTool("t", "bash", NOW - 299)
    view.progress.in_flight = [tool]
    act = activity(view, NOW)
    assert act.text == "working · bash 00:04:59" and act.tone == "text"
    view.progress.in_flight = [replace(tool, started_at=NOW - receipts.STALL_SECONDS)]
    act = activity(view, NOW)
    assert act.tone == "warning"
    assert act.text == (
        "working · bash 00:05:00 · stuck 5m in bash — steer cannot reach a running tool "
        "call; abort can (legion abort worker-1)"
    )


def test_activity_verdicts_unreadable_blocked_interrupted() -> None:
    model = canned_model(interrupted=True)
    assert activity(model.nodes["n4"], NOW).text == "✓ routes mapped"
    assert activity(model.nodes["n4"], NOW).tone == "ok"
    assert activity(model.nodes["n5"], NOW).text == "✗ tests red"
    assert activity(model.nodes["n5"], NOW).tone == "fail"
    assert activity(model.nodes["n10"], NOW).text == "session unreadable: EACCES"
    assert activity(model.nodes["n7"], NOW).tone == "warning"
    assert activity(model.nodes["n9"], NOW).text == "interrupted · r resumes"
    failed_no_verdict = model.nodes["n5"]
    failed_no_verdict.node = replace(failed_no_verdict.node, verdict="not json {",
                                     error="exit 3")
    assert activity(failed_no_verdict, NOW).text == "✗ exit 3"


def test_in_flight_context_nested_and_parallel() -> None:
    model = canned_model()
    view = model.nodes["n2"]
    view.progress.in_flight = [
        InFlightTool("a", "codemode", NOW - 30),
        InFlightTool("b", "bash", NOW - 10, parent_id="a"),
    ]
    assert in_flight_context(view) == " (inside codemode ×1)"
    view.progress.in_flight = [InFlightTool("a", "read", NOW - 3),
                               InFlightTool("b", "grep", NOW - 2)]
    assert in_flight_context(view) == " (+1 more)"
    assert activity(view, NOW).text == "working · grep 00:00:02 (+1 more)"
    # A chain that does not reach the whole stack is not "inside" it: the tree says what
    # `legion status` says.
    view.progress.in_flight = [InFlightTool("a", "read", NOW - 5),
                               InFlightTool("b", "codemode", NOW - 4),
                               InFlightTool("c", "bash", NOW - 3, parent_id="b")]
    assert in_flight_context(view) == " (+2 more)"


def test_ended_node_is_not_given_a_working_line_even_with_a_stale_tool_stack() -> None:
    model = canned_model()
    view = model.nodes["n4"]
    view.progress.in_flight = [InFlightTool("x", "bash", NOW - 999)]
    assert activity(view, NOW).text == "✓ routes mapped"
    view.node = replace(view.node, status=NodeStatus.RUNNING)
    assert activity(view, NOW).tone == "warning"


def test_columns_drop_least_useful_first_and_never_exceed_the_width() -> None:
    wide = plan_columns(200, 20, 14)
    assert wide.phase and wide.role and wide.tokens and wide.rate and wide.elapsed
    narrow = plan_columns(60, 20, 14)
    assert narrow.phase == 0 and narrow.role == 0
    for width in range(10, 240):
        cols = plan_columns(width, 30, 14)
        assert cols.fixed + 16 <= width or cols.fixed == cols.label


def test_elapsed_is_launch_to_now_while_live_and_launch_to_settle_once_ended() -> None:
    model = canned_model()
    view = next(v for v in model.nodes.values() if v.node.live)
    node = replace(view.node, created_at=NOW - 90, updated_at=NOW - 30)
    view.node = node
    assert elapsed_seconds(view, NOW) == 90  # live: the clock runs
    view.node = replace(node, status=NodeStatus.SETTLED)
    view.progress = SessionProgress()
    assert elapsed_seconds(view, NOW) == 60  # ended: launch → settle, clock-independent
    assert elapsed_seconds(view, NOW + 500) == 60


def test_an_ended_node_never_reads_less_than_its_own_session_shows() -> None:
    """The demo starts mid-flight: the ledger records launch and settle in the same
    instant, while the session file holds the agent's earlier five seconds of work."""
    model = canned_model()
    view = next(v for v in model.nodes.values() if not v.node.live)
    view.node = replace(view.node, created_at=NOW, updated_at=NOW + 0.1)
    view.progress = SessionProgress(
        rate_series=[RateSegment(NOW - 900, NOW - 897, 300)], last_entry_at=NOW - 895
    )
    assert receipts.fmt_duration(elapsed_seconds(view, NOW)) == "00:00:05"
    view.progress = SessionProgress()  # no session evidence: the ledger's word
    assert receipts.fmt_duration(elapsed_seconds(view, NOW)) == "00:00:00"


def test_a_team_settled_in_its_failed_phase_reads_as_failed_everywhere() -> None:
    model = canned_model()
    lead = model.nodes["n1"].node
    failed_team = replace(lead, status=NodeStatus.SETTLED, phase="failed")
    before = model.counts()
    model.upsert(failed_team)
    assert failed_team.outcome is NodeStatus.FAILED
    assert replace(failed_team, phase="done").outcome is NodeStatus.SETTLED
    assert lead.outcome is not NodeStatus.FAILED
    assert model.counts()["failed"] == before["failed"] + 1  # the header's ✗ count
    doc = {"nodes": [{"path": "root/lead", "name": "lead", "role": "centurion",
                      "status": "settled", "phase": "failed", "verdict": None,
                      "error": None, "activity": None}]}  # fmt: skip
    assert tree_rows_from_doc(doc).lstrip().startswith(receipts.STATUS_GLYPHS[NodeStatus.FAILED])


def test_an_ended_node_never_reads_longer_than_its_parent_has_existed() -> None:
    """A replayed history (the demo) made a scout 00:00:32 old under a lead launched five
    seconds before: the tree's clocks must nest."""
    model = canned_model()
    lead = model.nodes["n1"].node
    view = model.nodes["n4"]  # scout-0, settled under lead-api
    view.node = replace(view.node, created_at=lead.created_at + 1, updated_at=lead.created_at + 2)
    view.progress = SessionProgress(
        rate_series=[RateSegment(lead.created_at - 30, lead.created_at - 25, 300)],
        last_entry_at=lead.created_at + 2,
    )
    assert elapsed_seconds(view, NOW) == 32  # its session alone says so
    assert elapsed_seconds(view, NOW, lead.created_at) == 2  # but its lead is 2 s older


def test_a_tool_clock_never_runs_longer_than_its_agent_has() -> None:
    """An agent launched 4 s ago with a replayed `bash` call dated 6:51 back is not
    "in bash for 00:06:51", nor stuck."""
    model = canned_model()
    view = model.nodes["n3"]
    view.node = replace(view.node, created_at=NOW - 4)
    view.progress.in_flight = [InFlightTool("t", "bash", NOW - 411)]
    act = activity(view, NOW)
    assert act.text == "working · bash 00:00:04" and act.tone == "text"
    assert flatten(model, set(), ":stuck") == []


def test_status_filters_pick_agents_by_state_and_combine_with_words() -> None:
    model = canned_model()

    def picked(needle: str) -> list[str]:
        return [r.node_id for r in flatten(model, set(), needle)]

    # Matches plus their ancestors (the rail stays whole).
    assert picked(":failed") == ["n0", "n1", "n5"]
    assert picked(":waiting") == ["n0", "n6", "n7"]
    assert picked(":stuck") == ["n0", "n1", "n3"]  # worker-1: 7m31s in bash
    assert picked(":retired") == ["n0", "n6", "n9"]
    assert picked(":settled") == ["n0", "n1", "n4", "n11"]
    assert set(picked(":live")) == {v.node.id for v in model.nodes.values() if v.node.live}
    assert picked("ui :live") == ["n0", "n6", "n7", "n8", "n10"]
    assert picked(":FAILED") == picked(":failed")  # typed in any case


def test_a_row_without_activity_shows_its_task_and_the_filter_finds_it_by_its_task() -> None:
    """Issue 31 item 8: `/codec` matched 0 of 8 while one task was "Review idna/codec.py"."""
    model = canned_model()
    lead = model.nodes["n1"]  # lead-api: live, nothing in flight, no note
    model.upsert(replace(lead.node, task="\n  Review idna/codec.py\nthen report back.\n"))
    assert activity(model.nodes["n1"], NOW) == ("Review idna/codec.py", "dim")
    assert [r.node_id for r in flatten(model, set(), "codec")] == ["n0", "n1"]
    assert [r.node_id for r in flatten(model, set(), "CODEC :live")] == ["n0", "n1"]
    retired = model.nodes["n9"]  # scout-0 of lead-ui, retired
    model.upsert(replace(retired.node, task="Map the routes"))
    assert activity(model.nodes["n9"], NOW).text == "retired · Map the routes"
    model.mark_interrupted("n9")  # interrupted: that word wins
    assert activity(model.nodes["n9"], NOW).text == "interrupted · r resumes"


# ----- a fan-out's attempt group (issue 34) ---------------------------------------------
def group_rails(model, folded=frozenset(), needle=""):  # type: ignore[no-untyped-def]
    return [(r.rail, r.group.name if r.group else short_name(model.nodes[r.node_id]), r.hidden)
            for r in flatten(model, set(folded), needle)]  # fmt: skip


def test_a_fanouts_attempts_hang_under_one_group_row_where_the_first_was_launched() -> None:
    model = fanout_model()
    assert group_rails(model)[-5:] == [
        ("├──", "scout-1", 0),
        ("└─┬", FANOUT, 0),
        ("  ├──", "pi-1", 0),
        ("  ├──", "claude-2", 0),
        ("  └──", "codex-3", 0),
    ]
    (row,) = [r for r in flatten(model, set()) if r.group is not None]
    assert row.node_id == f"group:n0/{FANOUT}" and row.group is not None
    assert row.group.attempt_ids == ("a1", "a2", "a3")
    assert group_of_row(model, row.node_id) == row.group
    assert group_of_row(model, "n0") is None


def test_a_folded_group_counts_its_attempts_and_a_filter_keeps_it_whole() -> None:
    model = fanout_model()
    row_id = f"group:n0/{FANOUT}"
    assert group_rails(model, {row_id})[-1] == ("└─▸", FANOUT, 3)
    # A filter on one attempt keeps its group's row above it; on the group, all three.
    assert group_rails(model, needle="claude")[-2:] == [
        ("└─┬", FANOUT, 0), ("  └──", "claude-2", 0)]
    assert [name for _r, name, _h in group_rails(model, needle=FANOUT)] == [
        "root", FANOUT, "pi-1", "claude-2", "codex-3"]


def test_a_groups_own_status_follows_its_attempts() -> None:
    model = fanout_model()
    views = [model.nodes[a] for a in ("a1", "a2", "a3")]
    assert group_state(views) == GroupState(True, "3 attempts · 1 working · 2 done", "text")
    assert [attempt_result(v) for v in views[1:]] == [
        AttemptResult(True, True, True), AttemptResult(True, False, False)]
    model.upsert(replace(views[0].node, status=NodeStatus.SETTLED))
    assert group_state(views) == GroupState(
        False, "3 attempts · ✓ 1 of 3 pass the checks · Enter compares", "ok")
    # Checks owed for a settle that has none yet (the host knows they will run): not done.
    assert attempt_result(model.nodes["a1"], checks_expected=True).done is False
    assert attempt_result(model.nodes["a1"]).done is True
