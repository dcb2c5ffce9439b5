"""The detail overlay's own keys (issue 13): a footer names them, 1–6 pick a tab and
[ / ] step through the tabs; the Events tab reads as sentences, not raw JSON."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_helpers import NOW, FakeOps, canned_model, fixed_clock, write_run_files
from textual.widgets import Static, TabbedContent

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.model import EventType
from legion_tui.model_records import Event
from legion_tui.widgets.overlay.detail import DetailScreen
from legion_tui.widgets.overlay.detail_text import event_sentence, footer_text

pytestmark = pytest.mark.unit


def build(run_dir: Path) -> LegionApp:
    model = canned_model()
    return make_app(model, FakeOps(model), clock=fixed_clock, timers=False, run_dir=run_dir)


async def test_the_footer_names_the_keys_and_digits_and_brackets_switch_tabs(
    tmp_path: Path,
) -> None:
    app = build(write_run_files(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        app.railway.select("n2")  # worker-0: a process child, so it has a Terminal tab
        await pilot.press("o")
        await pilot.pause()
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        footer = str(detail.query_one("#detail-footer", Static).render())
        assert footer.startswith(" 1-5 [ ] tabs · w wrap · x stop · a abort · s steer")
        assert footer.rstrip().endswith("esc close")
        tabs = detail.query_one("#detail-tabs", TabbedContent)
        assert tabs.active == "tab-transcript"
        for key, tab in (("2", "tab-activity"), ("right_square_bracket", "tab-mail"),
                         ("5", "tab-terminal"), ("right_square_bracket", "tab-transcript"),
                         ("left_square_bracket", "tab-terminal"), ("4", "tab-events")):
            await pilot.press(key)
            await pilot.pause()
            assert tabs.active == tab, key
        await pilot.press("9")  # no ninth tab: nothing happens
        assert tabs.active == "tab-events"
        events = str(detail.query_one("#events", Static).render())
        assert "launched (pid 4711)" in events and "{" not in events


def test_events_read_as_sentences() -> None:
    said = [
        event_sentence(EventType.NODE_RETIRED,
                       {"reason": "parent-stop", "execution": "stopped", "force": True,
                        "survivors": []}),
        event_sentence(EventType.NODE_RETIRED,
                       {"reason": "session-shutdown", "execution": "interrupted"}),
        event_sentence(EventType.NODE_SETTLED, {"verdict": {"ok": True, "reason": "done"}}),
        event_sentence(EventType.NODE_FAILED, {"reason": "provider-empty-generation"}),
        event_sentence(EventType.NODE_ABORTED, {"outcome": "interrupted", "dropped": 2}),
        event_sentence(EventType.PHASE_CHANGE, {"from": "implementing", "to": "reviewing"}),
        event_sentence(EventType.MAIL_SENT, {"message_id": 7, "to": "lead-api"}),
        event_sentence(EventType.NODE_LAUNCHED, {"kind": "pi", "backend": "pi-rpc",
                                                 "pid": 42, "card": "worker"}),
    ]
    assert said == [
        "stopped with its parent (forced)",
        "paused by the host's exit (resumable)",
        "settled — verdict ✓ done",
        "failed: provider-empty-generation",
        "turn aborted (interrupted; dropped 2 queued message(s))",
        "phase implementing → reviewing",
        "mail #7 sent to lead-api",
        "launched as pi (pi-rpc, pid 42, card worker)",
    ]
    # An odd payload still reads as something, never a crash.
    assert event_sentence(EventType.NODE_RETIRED, {"survivors": 5}).startswith("retired")
    assert Event(1, "n2", EventType.NODE_LAUNCHED, {"pid": 1}, NOW).data == {"pid": 1}


def test_the_footer_keeps_the_tabs_and_esc_when_narrow() -> None:
    assert footer_text(40, 4) == " 1-4 [ ] tabs · x stop · esc close"


def test_mail_events_name_the_letter_and_the_overlay_names_the_nodes(tmp_path: Path) -> None:
    model = canned_model()
    view = model.nodes["n1"]
    view.events.append(Event(9, "n1", EventType.MAIL_SENT, {
        "message_id": 13, "from": "n1", "to": "n2", "kind": "handoff",
        "urgency": "normal", "subject": "Handoff: worker-0"}, NOW))  # fmt: skip
    view.events.append(Event(10, "n1", EventType.MAIL_BOUNCED, {
        "message_id": 13, "from": "n1", "to": "n2", "state": "obsolete",
        "reason": "obsolete_after_phase_change"}, NOW))  # fmt: skip
    from legion_tui.widgets.overlay.detail_text import event_lines

    lines = event_lines(view, lambda nid: model.nodes[nid].node.name)
    assert [line.split(" ", 1)[1] for line in lines[-2:]] == [
        "mail #13 (handoff) sent to worker-0: Handoff: worker-0",
        "mail #13 to worker-0 obsolete (obsolete_after_phase_change)",
    ]


def test_the_overlay_header_says_failed_for_a_team_settled_in_its_failed_phase() -> None:
    from dataclasses import replace

    from legion_tui.model import NodeStatus
    from legion_tui.widgets.overlay.detail_text import header_line

    model = canned_model()
    view = model.nodes["n1"]
    view.node = replace(view.node, status=NodeStatus.SETTLED, phase="failed")
    assert header_line(view, NOW).startswith("lead-api · centurion · simulated · failed · ")


async def test_w_wraps_the_transcripts_long_entries_and_cuts_them_again(tmp_path: Path) -> None:
    import json

    from legion_tui.widgets.overlay.transcript_view import LABEL_WIDTH, TranscriptView

    run_dir = write_run_files(tmp_path)
    # ≈ 1 900 characters (under the transcript's cut): more wrapped rows than the tab
    # has, so its scrollbar shows
    words = " ".join(f"word{i:03d}" for i in range(240))
    entry = {
        "type": "message", "id": "a5", "parentId": "a4",
        "timestamp": "2026-09-21T12:00:05.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": words}],
                    "usage": {"input": 10, "output": 90}, "stopReason": "stop"},
    }  # fmt: skip
    with (run_dir / "sessions" / "n2.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")
    app = build(run_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        app.railway.select("n2")
        await pilot.press("o")
        await pilot.pause()
        view = app.screen.query_one(TranscriptView)
        for _ in range(50):  # the file is indexed by a worker: until its rows are there
            if view.virtual_size.height >= 6:
                break
            await pilot.pause()

        def shown() -> list[str]:
            return [view.render_line(y).text.rstrip() for y in range(view.size.height)]

        cut = shown()
        assert sum("word000" in row for row in cut) == 1 and not any("word239" in r for r in cut)
        await pilot.press("w")
        await pilot.pause()
        await pilot.press("end")  # the entry's last rows
        await pilot.pause()
        assert view.scrollbars_enabled[0]  # the scrollbar takes two of the tab's columns
        seen = view.scrollable_content_region.width  # the columns the scrollbar leaves
        rows = [view.render_line(y).text for y in range(view.size.height)]
        # Every row's text within those columns: nothing sits under the scrollbar.
        assert all(not row[seen:].strip() for row in rows)
        joined = "".join(row[LABEL_WIDTH:seen] for row in rows).rstrip()
        assert joined.endswith("word238 word239")  # the entry's end, over rows
        assert view.scrollable_content_region.height == view.size.height  # no sideways bar
        words_seen = joined.split()[1:]  # the first may be cut by the scroll
        assert all(len(w) == 7 for w in words_seen), "a word lost characters at a break"
        await pilot.press("w")
        await pilot.pause()
        assert shown() == cut


def test_the_head_keeps_its_figures_over_the_branch_at_80x24() -> None:
    """At 80×24 the worktree's branch note left the header 28 columns: the overlay said
    `worker-0 · … · 0` with `tok/s now` cut at the frame's edge. The figures win now; the
    branch shows where there is room for both (and always on the Diff tab)."""
    from dataclasses import replace

    from legion_tui.widgets.overlay.detail_text import header_line, overlay_head

    view = canned_model().nodes["n2"]  # worker-0: live, simulated
    branch = " · branch legion/lead-api-7f3a @ 1a2b3c4"
    narrow = overlay_head(view, NOW, 58, branch)  # 80 columns: 75 % less the border
    assert len(narrow) <= 58 and "branch" not in narrow
    assert narrow.endswith(" tok/s now (10 s)") and "simulated" in narrow
    wide = overlay_head(view, NOW, 118, branch)
    assert wide.endswith(branch) and " tok/s now" in wide and len(wide) <= 118
    long_name = replace(view.node, name="worker-" + "x" * 60)
    view.node = long_name
    cut = header_line(view, NOW, 40)
    assert len(cut) == 40 and cut.endswith("…")
