"""The Diff tab (issue 12): what an agent's worktree changed against the commit it was
cut from — its branch and head, the commits, the files, then the diff, coloured.

The review (legion_tui.git.review) runs in a worker: git is a subprocess, bounded, and the
loop never waits on it. The view is a Line API scroller over the lines it produced, so a
2 MiB diff scrolls as fast as a short one. `review_lines` is pure: tests and goldens
read what the tab shows without git.

A cursor row (↑/↓ j/k, PgUp/PgDn, Home/End, a click) picks a line; `m` on it asks the
overlay to open the message box with a review comment for the agent that made the change
(issue 28 item 9): `path:line` and the hunk for a diff line (`comment_text`), the path for
a row of the Files list. The line number is the new file's, read from the hunk header
and the lines since it; a removed line gets the old file's and says `(removed)`.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from rich.segment import Segment
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import Worker

from legion_tui.git.process import GitRefused
from legion_tui.git.review import MAX_DIFF_BYTES, Review
from legion_tui.git.worktree import WorktreeError
from legion_tui.inert import inert
from legion_tui.receipts import plural
from legion_tui.widgets.paint import FollowsTheme, paint_for

Tone = Literal["text", "dim", "warning", "ok", "fail", "accent"]
Line = tuple[str, Tone]
# What a row comments on: a changed file's path (the Files list), the index of a line of
# the diff (`diff_lines(review.diff)`), or nothing (the summary, the commits, blanks).
Anchor = str | int | None
HUNK_LINES = 40  # of a hunk quoted in a comment; a longer one is cut around the line
IGNORED_NAMED = 3  # paths named in the ignored-paths warning; more are counted


def branch_note(review: Review) -> str:
    """`legion/worker-1-ab12cd @ 1a2b3c4` — what the overlay's header adds."""
    return f"{review.branch} @ {review.head_sha[:7]}"


def _diff_tone(line: str) -> Tone:
    if line.startswith(("+++", "---", "diff --git", "index ", "new file", "deleted file")):
        return "dim"
    if line.startswith("+"):
        return "ok"
    if line.startswith("-"):
        return "fail"
    if line.startswith("@@"):
        return "accent"
    return "text"


def diff_lines(diff: str) -> list[str]:
    """The diff's lines, split on `\\n` only: a file's own `\\r` or form feed stays inside
    its line (shown as `?`), so line numbers count what git counts."""
    return diff.removesuffix("\n").split("\n") if diff else []


def review_lines(review: Review, *, owner: bool = True) -> Iterator[Line]:
    """The tab's lines: a summary, the commits, the files, the diff."""
    for text, tone, _anchor in review_rows(review, owner=owner):
        yield text, tone


def _ignored_warning(paths: Sequence[str]) -> str:
    named = ", ".join(paths[:IGNORED_NAMED]) + (", …" if len(paths) > IGNORED_NAMED else "")
    return (
        f"⚠ adds {plural(len(paths), 'path')} your checkout ignores ({named}): "
        "landing would be refused while you have them"
    )


def review_rows(review: Review, *, owner: bool = True) -> Iterator[tuple[str, Tone, Anchor]]:
    """`review_lines` with what each row comments on (`m`)."""
    yield f"{branch_note(review)} · cut from {review.base_sha[:7]}", "accent", None
    tally = [plural(len(review.commits), "commit"), plural(len(review.files), "file")]
    if review.uncommitted:
        tally.append("uncommitted changes (c commits them)")
    yield " · ".join(tally), "text", None
    if review.ignored:
        yield _ignored_warning(review.ignored), "warning", None
    if owner:
        hint = "L lands the branch into the checkout it came from (y confirms)"
    else:
        hint = "its team's worktree: land it from the lead"
    yield f"{hint} · m comments on a line", "dim", None
    yield "", "text", None
    yield "Commits", "accent", None
    if not review.commits:
        yield "  none yet", "dim", None
    for sha, subject in review.commits:
        yield f"  {sha} {subject}", "text", None
    yield "", "text", None
    yield "Files", "accent", None
    if not review.files:
        yield "  no changes", "dim", None
    for change in review.files:
        row = f"  {change.status} {change.path}  {change.counts}"
        if change.ignored:
            yield f"{row}  ⚠ ignored in your checkout", "warning", change.path
        else:
            yield row, "text", change.path
    yield "", "text", None
    for index, line in enumerate(diff_lines(review.diff)):
        yield line, _diff_tone(line), index
    if review.truncated:
        yield f"… the diff is cut at {MAX_DIFF_BYTES // (1024 * 1024)} MiB", "warning", None


# ----- where a line of the diff is --------------------------------------------------------
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _hunk_sizes(head: re.Match[str]) -> tuple[int, int]:
    """(old lines, new lines) a hunk's `@@` header announces (an absent count is 1)."""
    return (1 if head[2] is None else int(head[2])), (1 if head[4] is None else int(head[4]))


@dataclass(frozen=True, slots=True)
class DiffSpot:
    """Where a line of a diff is: its file and line (None: the file's header lines)."""

    path: str
    line: int | None = None
    removed: bool = False  # `line` is the old file's: the line is gone from the new one

    def __str__(self) -> str:
        """`app.py:12`, `app.py:3 (removed)`, `app.py`."""
        if self.line is None:
            return self.path
        return f"{self.path}:{self.line}" + (" (removed)" if self.removed else "")


def _unquote(name: str) -> str:
    """git's C-style quoting of an unusual path (`"caf\\303\\251.txt"`) undone."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    try:
        raw, _ = codecs.escape_decode(name[1:-1].encode("ascii", "backslashreplace"))
        return bytes(raw).decode("utf-8", "replace")
    except (ValueError, UnicodeError):
        return name[1:-1]


def _header_path(line: str) -> str | None:
    """The path of a `--- a/x` / `+++ b/x` line; None for `/dev/null`."""
    name = _unquote(line[4:].rstrip("\t"))
    if name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def _file_path(diff: Sequence[str], at: int) -> str:
    """The path of the file whose `diff --git` line is `diff[at]`: its `+++` (or, for a
    deleted file, `---`) line, else the header's own `a/x b/x` (a binary or mode change)."""
    old: str | None = None
    for line in diff[at + 1 :]:
        if line.startswith(("diff --git ", "@@")):
            break
        if line.startswith("+++ ") and (new := _header_path(line)) is not None:
            return new
        if line.startswith("--- "):
            old = _header_path(line)
    if old is not None:
        return old
    rest = diff[at][len("diff --git ") :]
    half = (len(rest) - 1) // 2
    first, second = rest[:half], rest[half + 1 :]
    if first[2:] == second[2:]:
        return first[2:]
    return _unquote(rest.partition(" b/")[0]).removeprefix("a/")


def _locate(diff: Sequence[str], index: int) -> tuple[DiffSpot | None, int | None]:
    """Where `diff[index]` is, and the index of its hunk's `@@` line (None: not in one).

    Inside a hunk every line is content until the header's counts are used up, so a
    removed line that reads `--- x` is a line, not a file header."""
    path: str | None = None
    spot: DiffSpot | None = None
    hunk: int | None = None
    old = new = left_old = left_new = 0
    for i in range(index + 1):
        line = diff[i]
        if line.startswith("\\"):  # `\ No newline at end of file`: the line before's
            continue
        if left_old > 0 or left_new > 0:
            assert path is not None
            tag = line[:1]
            if tag == "+":
                spot = DiffSpot(path, new)
                new, left_new = new + 1, left_new - 1
            elif tag == "-":
                spot = DiffSpot(path, old, removed=True)
                old, left_old = old + 1, left_old - 1
            else:  # context (an empty line: a context line whose space was lost)
                spot = DiffSpot(path, new)
                old, new, left_old, left_new = old + 1, new + 1, left_old - 1, left_new - 1
            continue
        hunk = None
        if line.startswith("diff --git "):
            path = _file_path(diff, i)
            spot = DiffSpot(path)
        elif path is not None and (head := _HUNK.match(line)) is not None:
            old, new = int(head[1]), int(head[3])
            left_old, left_new = _hunk_sizes(head)
            hunk = i
            # A deleted file's hunk (`+0,0`) has no new line: it points at the old one.
            spot = DiffSpot(path, new) if left_new or not left_old else DiffSpot(path, old, True)
        elif path is not None:
            spot = DiffSpot(path)  # index, mode, ---/+++, `Binary files … differ`
        else:
            spot = None
    return spot, hunk


def diff_spot(diff: Sequence[str], index: int) -> DiffSpot | None:
    """Where line `index` of a unified diff is (`DiffSpot`), or None outside any file."""
    if not 0 <= index < len(diff):
        return None
    return _locate(diff, index)[0]


def _hunk_end(diff: Sequence[str], start: int) -> int:
    """The index after the hunk whose `@@` line is `diff[start]`."""
    head = _HUNK.match(diff[start])
    assert head is not None
    left_old, left_new = _hunk_sizes(head)
    at = start + 1
    while at < len(diff) and (left_old > 0 or left_new > 0 or diff[at].startswith("\\")):
        tag = diff[at][:1]
        if tag == "+":
            left_new -= 1
        elif tag == "-":
            left_old -= 1
        elif tag != "\\":
            left_old, left_new = left_old - 1, left_new - 1
        at += 1
    return at


def _quote_hunk(body: Sequence[str], at: int, cap: int) -> list[str]:
    """The hunk (its `@@` line first), at most `cap` lines: a longer one is cut around
    line `at`, each cut said."""
    if len(body) <= cap:
        return list(body)
    window = max(1, cap - 3)  # the header and a marker on either side
    start = max(1, at - window // 2)
    end = min(len(body), start + window)
    start = max(1, end - window)
    quoted = [body[0]]
    if start > 1:
        quoted.append(f"… {plural(start - 1, 'line')} of the hunk not quoted")
    quoted += body[start:end]
    if end < len(body):
        quoted.append(f"… {plural(len(body) - end, 'line')} of the hunk not quoted")
    return quoted


def comment_text(diff: Sequence[str], index: int, *, cap: int = HUNK_LINES) -> str | None:
    """The message box's text for a comment on line `index` of the diff: `path:line`,
    the hunk (cut to `cap` lines), then an empty line for the comment; the path alone on
    a file's header lines; None outside any file."""
    if not 0 <= index < len(diff):
        return None
    spot, hunk = _locate(diff, index)
    if spot is None:
        return None
    if spot.line is None or hunk is None:
        return f"{spot}\n"
    body = [inert(line) for line in diff[hunk : _hunk_end(diff, hunk)]]
    return "\n".join([str(spot), *_quote_hunk(body, index - hunk, cap), ""])


class DiffView(ScrollView, FollowsTheme, can_focus=True):
    DEFAULT_CSS = """
    DiffView { height: 1fr; overflow-x: hidden; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First line", show=False),
        Binding("end", "jump(-1)", "Last line", show=False),
        Binding("m", "comment", "Comment"),
    ]

    class Comment(Message):
        """`m` on a row: open the message box to the worktree's holder with `text`
        (None: a row that names no file — the box opens as `s` opens it)."""

        def __init__(self, view: DiffView, text: str | None) -> None:
            super().__init__()
            self.view = view
            self.text = text

    def __init__(
        self,
        load: Callable[[], Awaitable[Review]],
        *,
        owner: bool = True,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._load = load
        self.owner = owner  # the node holds this worktree (its branch is the one to land)
        self.lines: list[Line] = [("reading the worktree…", "dim")]
        self.anchors: list[Anchor] = [None]  # what each line comments on
        self._diff: list[str] = []  # the review's diff, line by line, as git wrote it
        self.review: Review | None = None
        self.cursor = 0  # the highlighted row: `m` comments on it
        self.loads = 0  # finished reloads (tests wait on it)
        self.on_review: Callable[[Review], None] | None = None  # the overlay's header
        self._reading = False
        self._again = False  # something changed while a read was under way: read again
        self._seen: object = None  # the agents' state the last `follow` saw

    def reload(self) -> None:
        """Read the worktree again (a worker; a reload under way is replaced)."""
        read: Callable[[], Coroutine[None, None, None]] = self._read
        self._reading = True
        self.reader: Worker[None] = self.run_worker(
            read, group="diff", exit_on_error=False, exclusive=True
        )

    def follow(self, seen: object, *, shown: bool) -> None:
        """The agents working in this worktree changed (`seen`: their status and how
        much their sessions hold): read it again if the tab is shown — once, after the
        read under way if there is one, so a busy agent never has git run per change."""
        if seen == self._seen:
            return
        first, self._seen = self._seen is None, seen
        if first or not shown:
            return  # the tab reads the worktree when it is shown
        if self._reading:
            self._again = True
        else:
            self.reload()

    async def _read(self) -> None:
        try:
            review = await self._load()
        except (GitRefused, WorktreeError) as err:
            self.lines = [(f"cannot read the worktree: {err}", "warning")]
            self.anchors = [None]
        else:
            self.review = review
            self._diff = diff_lines(review.diff)
            rows = list(review_rows(review, owner=self.owner))
            self.lines = [(inert(t.expandtabs(4)), tone) for t, tone, _ in rows]
            self.anchors = [anchor for _, _, anchor in rows]
            if self.on_review is not None:
                self.on_review(review)
        self.loads += 1
        self._reading = False
        self.cursor = min(self.cursor, len(self.lines) - 1)
        self._update_size()
        self.refresh()
        if self._again:
            self._again = False
            self.call_later(self.reload)

    def _update_size(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.lines))

    def on_resize(self) -> None:
        self._update_size()
        self._keep_cursor_visible()

    # ----- the cursor -------------------------------------------------------------------
    def move_cursor(self, index: int) -> None:
        """Put the cursor on row `index` (clamped) and scroll it into view."""
        index = max(0, min(len(self.lines) - 1, index))
        if index != self.cursor:
            self.cursor = index
            self.refresh()
        self._keep_cursor_visible()

    def _keep_cursor_visible(self) -> None:
        top, height = int(self.scroll_offset.y), self.scrollable_content_region.height
        if height <= 0:
            return
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor + step)

    def action_page(self, direction: int) -> None:
        page = max(1, self.scrollable_content_region.height - 1)
        self.move_cursor(self.cursor + direction * page)

    def action_jump(self, index: int) -> None:
        self.move_cursor(index if index >= 0 else len(self.lines) + index)

    def on_click(self, event: events.Click) -> None:
        index = event.y + int(self.scroll_offset.y)
        if 0 <= index < len(self.lines):
            self.move_cursor(index)

    def comment(self, index: int | None = None) -> str | None:
        """The comment the row `index` (the cursor's by default) starts: `path:line`
        and its hunk on a diff line, the path on a row of the Files list."""
        anchor = self.anchors[self.cursor if index is None else index]
        if isinstance(anchor, str):
            return f"{anchor}\n"
        if isinstance(anchor, int):
            return comment_text(self._diff, anchor)
        return None

    def action_comment(self) -> None:
        """m: a review comment on the cursor's row, to the agent that made the change."""
        self.post_message(self.Comment(self, self.comment()))

    def render_line(self, y: int) -> Strip:
        index = y + int(self.scroll_offset.y)
        width = self.size.width
        paint = paint_for(self.theme_name)
        if index >= len(self.lines):
            return Strip.blank(width, paint.blank)
        text, tone = self.lines[index]
        style, blank = paint.tone(tone), paint.blank
        if index == self.cursor:
            # Layered on top so the cursor's background wins over the page floor.
            style, blank = style + paint.selection, blank + paint.selection
        strip = Strip([Segment(" " + text, style)])
        return strip.crop(0, width).adjust_cell_length(width, blank)
