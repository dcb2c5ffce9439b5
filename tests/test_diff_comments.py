"""Review comments from the Diff tab (issue 28 item 9) and the paths an agent adds that the
user's checkout ignores (item 2): where a line of a diff is (`path:line`, the old file's
for a removed line), the comment the message box opens with, the cursor, `m` sending the
comment through the message box to the agent holding the worktree (a follow-up when it
is idle, a steer to a member's lead while it works), and the tab reading the worktree
again when that agent moves on. The agents here are FakeOps' canned ones (kind: sim)
over a real git worktree; tests/test_real_pi_review_comment.py sends one to a real pi.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from app_helpers import FakeOps, canned_model, fixed_clock
from land_helpers import agent_work, make_repo, open_diff_tab
from supervisor_helpers import git, until, use_git_identity
from textual.pilot import Pilot
from textual.widgets import TabbedContent

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.git.review import FileChange, Review, review
from legion_tui.git.worktree import create_worktree
from legion_tui.model import NodeStatus
from legion_tui.ops import Workspace
from legion_tui.widgets.overlay.diff_view import (
    DiffSpot,
    DiffView,
    comment_text,
    diff_lines,
    diff_spot,
    review_lines,
)
from legion_tui.widgets.overlay.message_box import MessageBox, MessageText

pytestmark = pytest.mark.host

SIZE = (120, 40)
SETTLED = "n4"  # scout-0: settled (idle) — a comment to it is a follow-up
MEMBER, LEAD = "n3", "n1"  # worker-1 works in its lead's (lead-api, running) worktree


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


# ----- where a line of the diff is (pure) ----------------------------------------------
DIFF = diff_lines(
    "diff --git a/app.py b/app.py\n"  # 0
    "index 1111111..2222222 100644\n"
    "--- a/app.py\n"
    "+++ b/app.py\n"
    "@@ -1,4 +1,4 @@\n"  # 4
    "-PAGE_SIZE = 10\n"  # 5: old line 1
    "+PAGE_SIZE = 50\n"  # 6: new line 1
    " \n"  # 7: new line 2
    " def items():\n"  # 8: new line 3
    "-    return []\n"  # 9: old line 4
    "+    return [1]\n"  # 10: new line 4
    "@@ -20,3 +20,4 @@ def page():\n"  # 11
    " a = 1\n"  # 12: new 20
    "--- not a header, a removed line\n"  # 13: old 21
    "+b = 2\n"  # 14: new 21
    "+c = 3\n"  # 15: new 22
    " d = 4\n"  # 16: new 23
    "\\ No newline at end of file\n"  # 17: the line before's
    "diff --git a/notes.txt b/notes.txt\n"  # 18
    "new file mode 100644\n"
    "index 0000000..3333333\n"
    "--- /dev/null\n"
    "+++ b/notes.txt\n"
    "@@ -0,0 +1,2 @@\n"  # 23
    "+todo: paginate\n"  # 24: new 1
    "+todo: cap\n"  # 25: new 2
    "diff --git a/old.py b/old.py\n"  # 26
    "deleted file mode 100644\n"
    "--- a/old.py\n"
    "+++ /dev/null\n"
    "@@ -1,2 +0,0 @@\n"  # 30
    "-x = 1\n"  # 31
    "-y = 2\n"  # 32
    "diff --git a/logo.png b/logo.png\n"  # 33
    "new file mode 100644\n"
    "Binary files /dev/null and b/logo.png differ\n"  # 35
)


@pytest.mark.parametrize(
    ("index", "spot"),
    [
        (0, "app.py"),  # a file's header lines: the file
        (3, "app.py"),
        (4, "app.py:1"),  # the hunk header: where it starts
        (5, "app.py:1 (removed)"),
        (6, "app.py:1"),
        (7, "app.py:2"),  # context: the new file's number
        (8, "app.py:3"),
        (9, "app.py:4 (removed)"),
        (10, "app.py:4"),
        (11, "app.py:20"),  # the second hunk counts from its own header
        (12, "app.py:20"),
        (13, "app.py:21 (removed)"),  # `---` inside a hunk is content
        (14, "app.py:21"),
        (15, "app.py:22"),
        (16, "app.py:23"),
        (17, "app.py:23"),  # `\ No newline`: the line before's
        (18, "notes.txt"),
        (21, "notes.txt"),  # --- /dev/null: a new file keeps its own name
        (24, "notes.txt:1"),
        (25, "notes.txt:2"),
        (28, "old.py"),
        (31, "old.py:1 (removed)"),  # a deleted file: only old numbers
        (32, "old.py:2 (removed)"),
        (35, "logo.png"),  # a binary file: its name from the `diff --git` line
    ],
)
def test_a_line_of_the_diff_is_named_path_colon_line(index: int, spot: str) -> None:
    assert str(diff_spot(DIFF, index)) == spot


def test_nothing_is_named_outside_a_file() -> None:
    assert diff_spot(DIFF, len(DIFF)) is None
    assert diff_spot(["… 3 more new files, listed above"], 0) is None
    assert comment_text(["… 3 more new files, listed above"], 0) is None


def test_a_quoted_path_is_unquoted() -> None:
    diff = diff_lines(
        'diff --git "a/caf\\303\\251.txt" "b/caf\\303\\251.txt"\n'
        "--- /dev/null\n"
        '+++ "b/caf\\303\\251.txt"\n'
        "@@ -0,0 +1 @@\n"
        "+hi\n"
    )
    assert diff_spot(diff, 4) == DiffSpot("café.txt", 1)


def test_the_comment_is_path_line_then_the_hunk_then_an_empty_line() -> None:
    assert comment_text(DIFF, 14) == (
        "app.py:21\n"
        "@@ -20,3 +20,4 @@ def page():\n"
        " a = 1\n"
        "--- not a header, a removed line\n"
        "+b = 2\n"
        "+c = 3\n"
        " d = 4\n"
        "\\ No newline at end of file\n"
    )
    assert comment_text(DIFF, 5) == (
        "app.py:1 (removed)\n"
        "@@ -1,4 +1,4 @@\n-PAGE_SIZE = 10\n+PAGE_SIZE = 50\n \n def items():\n"
        "-    return []\n+    return [1]\n"
    )
    assert comment_text(DIFF, 24) == "notes.txt:1\n@@ -0,0 +1,2 @@\n+todo: paginate\n+todo: cap\n"
    assert comment_text(DIFF, 2) == "app.py\n"  # a header line: the file alone


def test_a_long_hunk_is_quoted_around_the_line_with_the_cuts_said() -> None:
    body = "".join(f"+line {n}\n" for n in range(1, 101))
    diff = diff_lines(f"diff --git a/big.txt b/big.txt\n--- /dev/null\n+++ b/big.txt\n"
                      f"@@ -0,0 +1,100 @@\n{body}")
    at = diff.index("+line 60")
    text = comment_text(diff, at)
    assert text is not None
    lines = text.split("\n")
    assert lines[0] == "big.txt:60"
    assert lines[1] == "@@ -0,0 +1,100 @@"
    assert lines[-1] == ""  # the comment's line
    quoted = lines[1:-1]
    assert len(quoted) == 40
    assert "+line 60" in quoted
    assert quoted[1].startswith("… ") and quoted[1].endswith(" lines of the hunk not quoted")
    assert quoted[-1].startswith("… ") and quoted[-1].endswith(" lines of the hunk not quoted")
    # every line is either quoted or counted in a cut
    cut = sum(int(q.split()[1]) for q in (quoted[1], quoted[-1]))
    assert cut + len(quoted) - 3 == 100


# ----- ignored paths in the tab's lines (pure) -----------------------------------------
def _review(*files: FileChange, uncommitted: bool = False) -> Review:
    return Review(
        branch="legion/worker-1-abc123",
        head_sha="a" * 40,
        base_sha="b" * 40,
        commits=(("aaaaaaa", "add the config"),),
        files=files,
        diff="",
        truncated=False,
        uncommitted=uncommitted,
    )


def test_paths_the_checkout_ignores_are_flagged_in_the_files_list_and_on_top() -> None:
    lines = list(
        review_lines(
            _review(
                FileChange("M", "app.py", 1, 1),
                FileChange("A", ".env", 1, 0, ignored=True),
                FileChange("A", "build/out.bin", None, None, ignored=True),
                uncommitted=True,
            )
        )
    )
    assert lines[1] == ("1 commit · 3 files · uncommitted changes (c commits them)", "text")
    assert lines[2] == (
        "⚠ adds 2 paths your checkout ignores (.env, build/out.bin): "
        "landing would be refused while you have them",
        "warning",
    )
    assert ("  M app.py  +1 -1", "text") in lines
    assert ("  A .env  +1 -0  ⚠ ignored in your checkout", "warning") in lines
    assert ("  A build/out.bin  binary  ⚠ ignored in your checkout", "warning") in lines


def test_no_warning_without_ignored_paths_and_a_long_list_is_counted() -> None:
    clean = [text for text, _ in review_lines(_review(FileChange("M", "app.py", 1, 1)))]
    assert not any("⚠" in text for text in clean)
    assert clean[1] == "1 commit · 1 file"
    many = [FileChange("A", f"build/{n}.o", None, None, ignored=True) for n in range(5)]
    (warning,) = [text for text, tone in review_lines(_review(*many)) if tone == "warning"][:1]
    assert warning.startswith("⚠ adds 5 paths your checkout ignores (build/0.o, build/1.o, ")
    assert "build/2.o, …)" in warning


async def test_a_real_worktree_that_commits_ignored_paths_is_flagged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    (repo / ".gitignore").write_text(".legion/\n.env\nbuild/\n")
    git(repo, "commit", "-qam", "ignore secrets and build output")
    tree = await create_worktree(repo, "worker-1", nonce="ign001")
    (tree.path / ".env").write_text("TOKEN=x\n")
    (tree.path / "build").mkdir()
    (tree.path / "build" / "out.bin").write_bytes(b"\x00\x01")
    git(tree.path, "add", "-f", ".env", "build/out.bin")
    git(tree.path, "commit", "-qm", "add the config and the build")
    lines = [text for text, _ in review_lines(await review(tree))]
    assert lines[2] == (
        "⚠ adds 2 paths your checkout ignores (.env, build/out.bin): "
        "landing would be refused while you have them"
    )
    assert "  A .env  +1 -0  ⚠ ignored in your checkout" in lines
    assert "  A build/out.bin  binary  ⚠ ignored in your checkout" in lines


# ----- the dashboard: the cursor, m, and the message to the holder ---------------------
async def _app(tmp_path: Path, workspaces: dict[str, str]) -> tuple[LegionApp, FakeOps, Path]:
    """The canned legion (sim agents) with `workspaces` (node → its holder) on one real
    worktree: one commit, an uncommitted edit, a new file (land_helpers.agent_work)."""
    tree = await agent_work(make_repo(tmp_path / "project"))
    model = canned_model()
    ops = FakeOps(model)
    ops.workspaces = {node: Workspace(holder, tree) for node, holder in workspaces.items()}
    return make_app(model, ops, clock=fixed_clock, timers=False), ops, tree.path


def _box(app: LegionApp) -> MessageBox:
    return app.screen.query_one("#detail-steer", MessageBox)


def _head(app: LegionApp) -> str:
    return str(_box(app).query_one(".message-head").render())


async def _cursor_to(pilot: Pilot[None], view: DiffView, text: str) -> None:
    """Walk the cursor down to the row showing `text` with j, as a user would."""
    target = [line for line, _ in view.lines].index(text)
    await pilot.press("home", *["j"] * target)
    assert view.cursor == target


async def test_m_on_an_added_line_sends_path_line_and_hunk_to_the_idle_holder(
    tmp_path: Path,
) -> None:
    app, ops, _tree = await _app(tmp_path, {SETTLED: SETTLED})
    async with app.run_test(size=SIZE) as pilot:
        view = await open_diff_tab(pilot, app, SETTLED)
        assert view.has_focus and view.cursor == 0
        await _cursor_to(pilot, view, "+    return [1]")
        # The cursor row is on screen: the tab scrolled to keep it visible.
        top = int(view.scroll_offset.y)
        assert top <= view.cursor < top + view.scrollable_content_region.height
        await pilot.press("m")
        area = app.screen.focused
        assert isinstance(area, MessageText)
        prefill = (
            "app.py:4\n"
            "@@ -1,4 +1,4 @@\n"
            "-PAGE_SIZE = 10\n"
            "+PAGE_SIZE = 50\n"
            " \n"
            " def items():\n"
            "-    return []\n"
            "+    return [1]\n"
        )
        assert area.text == prefill
        assert area.cursor_location == (prefill.count("\n"), 0)  # on the empty last line
        assert _head(app).startswith("follow-up scout-0 (starts a turn)")
        await pilot.press(*"keep it an empty list")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert ops.calls == [("steer", SETTLED, {"text": prefill + "keep it an empty list"})]
        receipt = str(_box(app).query_one(".message-receipt").render())
        assert receipt.startswith("→ scout-0 · \u201capp.py:4 @@ -1,4 +1,4 @@")
        assert view.has_focus  # the keys went back to the tab


async def test_m_on_a_members_tab_goes_to_its_lead_as_a_steer(tmp_path: Path) -> None:
    app, ops, _tree = await _app(tmp_path, {MEMBER: LEAD})
    async with app.run_test(size=SIZE) as pilot:
        view = await open_diff_tab(pilot, app, MEMBER)
        assert "its team's worktree: land it from the lead · m comments on a line" in [
            line for line, _ in view.lines
        ]
        await _cursor_to(pilot, view, "-PAGE_SIZE = 10")
        await pilot.press("m")
        area = app.screen.query_one(MessageText)
        assert area.text.startswith("app.py:1 (removed)\n@@ -1,4 +1,4 @@\n-PAGE_SIZE = 10\n")
        assert _head(app).startswith("steer lead-api (next turn boundary)")
        await pilot.press(*"why 50", "enter")
        await app.workers.wait_for_complete()
        (call,) = ops.calls
        assert call[:2] == ("steer", LEAD) and str(call[2]["text"]).endswith("\nwhy 50")


async def test_m_on_a_file_row_names_the_file_alone_and_a_click_moves_the_cursor(
    tmp_path: Path,
) -> None:
    app, ops, _tree = await _app(tmp_path, {SETTLED: SETTLED})
    async with app.run_test(size=SIZE) as pilot:
        view = await open_diff_tab(pilot, app, SETTLED)
        row = [line for line, _ in view.lines].index("  ? notes.txt  new, not committed")
        await pilot.click(view, offset=(4, row - int(view.scroll_offset.y)))
        assert view.cursor == row
        await pilot.press("m")
        area = app.screen.query_one(MessageText)
        assert area.text == "notes.txt\n" and area.cursor_location == (1, 0)
        await pilot.press(*"move this into the docs", "enter")
        await app.workers.wait_for_complete()
        assert ops.calls == [("steer", SETTLED, {"text": "notes.txt\nmove this into the docs"})]
        # End, PgUp, Home: the cursor moves and stays on screen.
        await pilot.press("end")
        assert view.cursor == len(view.lines) - 1
        assert int(view.scroll_offset.y) + view.scrollable_content_region.height > view.cursor
        await pilot.press("pageup")
        assert view.cursor == len(view.lines) - view.scrollable_content_region.height
        await pilot.press("home")
        assert view.cursor == 0 and int(view.scroll_offset.y) == 0


async def test_the_tab_reads_the_holders_next_commit_when_it_moves_on(tmp_path: Path) -> None:
    app, ops, tree = await _app(tmp_path, {SETTLED: SETTLED})
    model = ops.model
    async with app.run_test(size=SIZE) as pilot:
        view = await open_diff_tab(pilot, app, SETTLED)
        loads = view.loads
        # Another agent's change is not this worktree's: no git is run for it.
        applied = app.last_apply
        model.upsert(replace(model.nodes["n7"].node, status=NodeStatus.SETTLED))
        await until(lambda: app.last_apply != applied, what="the change applied")
        assert view.loads == loads and not view._reading
        # The holder answers the comment: a new commit, and its status moves.
        git(tree, "commit", "-qam", "keep it an empty list")
        node = model.nodes[SETTLED].node
        model.upsert(replace(node, status=NodeStatus.RUNNING))
        await until(
            lambda: any(line.endswith(" keep it an empty list") for line, _ in view.lines),
            what="the new commit in the Diff tab",
        )
        assert view.lines[1][0].startswith("2 commits · ")
        # Not shown, the tab is not read: it reads the worktree when it is shown again.
        app.screen.query_one("#detail-tabs", TabbedContent).active = "tab-transcript"
        await pilot.pause()
        loads, seen = view.loads, view._seen
        model.upsert(replace(node, status=NodeStatus.SETTLED))
        await until(lambda: view._seen != seen, what="the tab to see the change")
        assert view.loads == loads and not view._reading
