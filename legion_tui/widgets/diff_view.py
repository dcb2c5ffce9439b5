"""The Diff tab (issue 12): what an agent's worktree changed against the commit it was
cut from — its branch and head, the commits, the files, then the diff, coloured.

The review (legion_tui.git.land) runs in a worker: git is a subprocess, bounded, and the
loop never waits on it. The view is a Line API scroller over the lines it produced, so a
2 MiB diff scrolls as fast as a short one. `review_lines` is pure: tests and goldens
read what the tab shows without git.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Literal

from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import Worker

from legion_tui.git.process import GitRefused
from legion_tui.git.review import MAX_DIFF_BYTES, Review
from legion_tui.git.worktree import WorktreeError
from legion_tui.widgets.paint import FollowsTheme, paint_for

Tone = Literal["text", "dim", "warning", "ok", "fail", "accent"]
Line = tuple[str, Tone]
# Control characters a diff may carry (a file's own escapes) would move the terminal's
# cursor: shown as `?` so the tab draws only what it means to.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


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


def review_lines(review: Review, *, owner: bool = True) -> Iterator[Line]:
    """The tab's lines: a summary, the commits, the files, the diff."""
    yield f"{branch_note(review)} · cut from {review.base_sha[:7]}", "accent"
    tally = [_plural(len(review.commits), "commit"), _plural(len(review.files), "file")]
    if review.uncommitted:
        tally.append("uncommitted changes (shown, not landed)")
    yield " · ".join(tally), "text"
    if owner:
        yield "L lands the branch into the checkout it came from (y confirms)", "dim"
    else:
        yield "its team's worktree: land it from the lead", "dim"
    yield "", "text"
    yield "Commits", "accent"
    if not review.commits:
        yield "  none yet", "dim"
    for sha, subject in review.commits:
        yield f"  {sha} {subject}", "text"
    yield "", "text"
    yield "Files", "accent"
    if not review.files:
        yield "  no changes", "dim"
    for change in review.files:
        if change.status == "?":
            counts = "new, not committed"
        elif change.added is None:
            counts = "binary"
        else:
            counts = f"+{change.added} -{change.removed}"
        yield f"  {change.status} {change.path}  {counts}", "text"
    yield "", "text"
    for line in review.diff.splitlines():
        yield line, _diff_tone(line)
    if review.truncated:
        yield f"… the diff is cut at {MAX_DIFF_BYTES // (1024 * 1024)} MiB", "warning"


class DiffView(ScrollView, FollowsTheme, can_focus=True):
    DEFAULT_CSS = """
    DiffView { height: 1fr; overflow-x: hidden; }
    """

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
        self.review: Review | None = None
        self.loads = 0  # finished reloads (tests wait on it)
        self.on_review: Callable[[Review], None] | None = None  # the overlay's header

    def reload(self) -> None:
        """Read the worktree again (a worker; a reload under way is replaced)."""
        read: Callable[[], Coroutine[None, None, None]] = self._read
        self.reader: Worker[None] = self.run_worker(
            read, group="diff", exit_on_error=False, exclusive=True
        )

    async def _read(self) -> None:
        try:
            review = await self._load()
        except (GitRefused, WorktreeError) as err:
            self.lines = [(f"cannot read the worktree: {err}", "warning")]
        else:
            self.review = review
            self.lines = [(_CONTROL.sub("?", t.expandtabs(4)), tone) for t, tone in review_lines(
                review, owner=self.owner
            )]
            if self.on_review is not None:
                self.on_review(review)
        self.loads += 1
        self._update_size()
        self.refresh()

    def _update_size(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.lines))

    def on_resize(self) -> None:
        self._update_size()

    def render_line(self, y: int) -> Strip:
        index = y + int(self.scroll_offset.y)
        width = self.size.width
        paint = paint_for(self.theme_name)
        if index >= len(self.lines):
            return Strip.blank(width, paint.blank)
        text, tone = self.lines[index]
        strip = Strip([Segment(" " + text, paint.tone(tone))])
        return strip.crop(0, width).adjust_cell_length(width, paint.blank)
