"""The incremental reader: chunked appends, truncation, rotation, bad lines, unreadable files,
and the stat gate. Real files on disk throughout."""

from __future__ import annotations

import errno
import itertools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from session_helpers import assistant, conversation, header, line, tool_result, user

from legion_tui.session import reader as reader_module
from legion_tui.session.progress import SessionProgress
from legion_tui.session.reader import SessionReader, read_session

pytestmark = pytest.mark.unit

BRANCHED = b"".join(
    line(x)
    for x in [
        header("branchy"),
        user("u0", None, "first ✓", 1_000),
        assistant(
            "a0",
            "u0",
            start_ms=1_001,
            end_ms=2_000,
            output=30,
            tools=[("c0", "bash")],
            stop="toolUse",
        ),
        tool_result("r0", "a0", "c0", 3_000),
        # A branch back from u0: c0 is not on this path, c9 is and has no result.
        assistant(
            "b0",
            "u0",
            start_ms=4_000,
            end_ms=5_000,
            output=7,
            tools=[("c9", "edit")],
            stop="toolUse",
        ),
    ]
)
SAMPLE = (
    conversation(2)
    + b"not json at all\n"
    + b"[1, 2, 3]\n"
    + b"\xff\xfe broken utf-8 \xc3\n"
    + BRANCHED.split(b"\n", 1)[1]  # the branched entries (without their header)
)


# Byte positions just inside a multi-byte UTF-8 character of SAMPLE: cuts worth trying.
_INSIDE_CHARS = [i for i, b in enumerate(SAMPLE) if 0x80 <= b < 0xC0]


class _Mtime:
    """Stamp each write with a strictly later mtime.

    The stat gate keys on mtime_ns, and ext4/tmpfs stamp with a coarse (jiffy) clock: a
    same-size rewrite inside one tick is invisible to any stat gate until the next write
    (SPEC accepts this). Tests that rewrite in place bump mtime by 1 ms explicitly so they
    test the reader, not the file system's clock.
    """

    def __init__(self) -> None:
        self.ns = 1_700_000_000_000_000_000

    def touch(self, path: Path) -> None:
        self.ns += 1_000_000
        os.utime(path, ns=(self.ns, self.ns))


def _write(path: Path, data: bytes, mode: str = "ab") -> None:
    with open(path, mode) as f:
        f.write(data)


def _whole(data: bytes) -> SessionProgress:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "whole.jsonl")
        path.write_bytes(data)
        return read_session(path)


def _drain(reader: SessionReader) -> None:
    reader.poll()
    while reader.pending:
        reader.poll()


@pytest.fixture
def tmp_session(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "n1.jsonl"


# ----- chunked appends ------------------------------------------------------------------
@settings(max_examples=60)
@given(
    data=st.sampled_from([SAMPLE, BRANCHED, conversation(1)]),
    cuts=st.lists(
        st.one_of(st.integers(min_value=0, max_value=len(SAMPLE)), st.sampled_from(_INSIDE_CHARS)),
        max_size=12,
    ),
    cap=st.sampled_from([3, 64, 4 * 1024 * 1024]),
)
def test_any_split_into_appends_equals_whole_parse(data: bytes, cuts: list[int], cap: int) -> None:
    points = sorted({c for c in cuts if 0 < c < len(data)})
    bounds = [0, *points, len(data)]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "s.jsonl")
        path.write_bytes(b"")
        with SessionReader(path, max_bytes_per_poll=cap) as reader:
            for lo, hi in itertools.pairwise(bounds):
                _write(path, data[lo:hi])
                _drain(reader)
            assert reader.progress == _whole(data)


def test_split_inside_a_utf8_character(tmp_session: Path) -> None:
    data = conversation(1)
    cut = data.index("✓".encode()) + 1  # inside the 3-byte ✓
    _write(tmp_session, data[:cut])
    with SessionReader(tmp_session) as reader:
        _drain(reader)
        assert reader.progress.skipped_lines == 0
        _write(tmp_session, data[cut:])
        _drain(reader)
        assert reader.progress.skipped_lines == 0
        assert reader.progress.recent_user_texts[-1] == "task 0 — ünïcödé ✓"
        assert reader.progress == _whole(data)


# ----- truncation, rotation, rewrite --------------------------------------------------------
@settings(max_examples=40)
@given(
    first=st.integers(min_value=0, max_value=len(SAMPLE)),
    second=st.integers(min_value=0, max_value=len(conversation(3, session_id="other"))),
    rotate=st.booleans(),
)
def test_truncation_or_rotation_midway_equals_fresh_parse(
    first: int, second: int, rotate: bool
) -> None:
    new = conversation(3, session_id="other")
    clock = _Mtime()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "s.jsonl")
        path.write_bytes(SAMPLE[:first])
        clock.touch(path)
        with SessionReader(path, max_bytes_per_poll=512) as reader:
            _drain(reader)
            if rotate:
                spare = Path(d, "new.jsonl")
                spare.write_bytes(new[:second])
                os.replace(spare, path)  # a different inode now lives at the path
            else:
                path.write_bytes(new[:second])  # O_TRUNC, then the new content
            clock.touch(path)
            _drain(reader)
            _write(path, new[second:])
            clock.touch(path)
            _drain(reader)
            assert reader.progress == _whole(new)


def test_truncated_to_zero_restarts(tmp_session: Path) -> None:
    _write(tmp_session, conversation(2))
    with SessionReader(tmp_session) as reader:
        _drain(reader)
        assert reader.progress.entries > 0
        os.truncate(tmp_session, 0)
        assert reader.poll() is True
        assert reader.progress == SessionProgress()  # a fresh, empty progress
        assert reader.offset == 0


def test_same_size_rewrite_caught_by_fingerprints(tmp_session: Path) -> None:
    clock = _Mtime()
    original = conversation(2)
    _write(tmp_session, original)
    clock.touch(tmp_session)
    with SessionReader(tmp_session) as reader:
        _drain(reader)
        # Same length, head untouched, one digit changed near the end (boundary fingerprint).
        rewritten = original.replace(b'"output": 20', b'"output": 29')
        assert len(rewritten) == len(original) and rewritten[:256] == original[:256]
        tmp_session.write_bytes(rewritten)
        clock.touch(tmp_session)
        assert reader.poll() is True
        assert reader.progress == _whole(rewritten)
        assert reader.progress.tokens.output == 2 * (40 + 29)


def test_rewrite_that_grows_is_not_taken_for_an_append(tmp_session: Path) -> None:
    old = conversation(1, session_id="aaaa")
    _write(tmp_session, old)
    with SessionReader(tmp_session) as reader:
        _drain(reader)
        new = conversation(2, session_id="bbbb")  # longer, different header
        tmp_session.write_bytes(new)
        _drain(reader)
        assert reader.progress == _whole(new)


# ----- bad lines -------------------------------------------------------------------------
def test_bad_lines_skipped_counted_and_parsing_goes_on(tmp_session: Path) -> None:
    big = b'{"type": "custom", "data": "' + b"x" * (8 * 1024 * 1024 + 10) + b'"}\n'
    data = (
        line(header())
        + b"this is not json\n"
        + b'["an", "array"]\n'
        + b'"a string"\n'
        + b'{"type": "message", "bad": "\xff\xfe"}\n'  # invalid UTF-8
        + big  # valid JSON, but over 8 MiB
        + b"\n"  # blank: not an entry, not a bad line
        + conversation(1).split(b"\n", 1)[1]
    )
    _write(tmp_session, data)
    with SessionReader(tmp_session) as reader:
        _drain(reader)
        p = reader.progress
        assert p.skipped_lines == 5
        assert p.entries == 4  # the conversation's four entries still count
        assert p.tokens.output == 40 + 20
        assert p.verdict is not None and p.verdict.ok is True
        assert reader.buffered_bytes <= reader.max_line_bytes


def test_over_long_line_in_progress_is_not_buffered_whole(tmp_session: Path) -> None:
    limit = 1024
    _write(tmp_session, line(header()))
    with SessionReader(tmp_session, max_line_bytes=limit) as reader:
        _drain(reader)
        peak = 0
        for _ in range(40):  # 40 × 300 bytes of one line still being written
            _write(tmp_session, b"y" * 300)
            _drain(reader)
            peak = max(peak, reader.buffered_bytes)
        assert peak <= limit
        assert reader.progress.skipped_lines == 1  # counted once, when it passed the limit
        _write(tmp_session, b"zzz\n" + conversation(1).split(b"\n", 1)[1])
        _drain(reader)
        assert reader.progress.skipped_lines == 1
        assert reader.progress.entries == 4


# ----- unreadable ------------------------------------------------------------------------
def _open_denied(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make opening `path` fail with EACCES.

    chmod 000 when it blocks us; as root (these tests run as root here) chmod does not stop
    reads, so os.open in the reader module is patched to raise PermissionError for this
    path only — the honest stand-in for the kernel's answer.
    """
    path.chmod(0)
    try:
        os.close(os.open(path, os.O_RDONLY))
    except PermissionError:
        return
    real_open = os.open

    def denying_open(p: str, flags: int, *args: int) -> int:
        if os.fspath(p) == os.fspath(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(p))
        return real_open(p, flags, *args)

    monkeypatch.setattr(reader_module.os, "open", denying_open)


def test_eacces_is_shown_retried_and_never_cached_as_empty(
    tmp_session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_session, conversation(1))
    _open_denied(tmp_session, monkeypatch)
    with SessionReader(tmp_session) as reader:
        assert reader.poll() is True
        assert reader.progress.unreadable == "EACCES"
        assert reader.poll() is False  # still unreadable: same answer, but it tried again
        assert reader.opens == 0 and reader.stats == 2
        monkeypatch.undo()
        tmp_session.chmod(0o644)
        assert reader.poll() is True  # no write happened: only the retry can see it
        assert reader.progress.unreadable is None
        assert reader.progress == _whole(conversation(1))


def test_deleted_file_keeps_figures_then_recovers(tmp_session: Path) -> None:
    _write(tmp_session, conversation(1))
    with SessionReader(tmp_session) as reader:
        _drain(reader)
        before = reader.progress.tokens.output
        tmp_session.unlink()
        assert reader.poll() is True
        assert reader.progress.unreadable == "deleted"
        assert reader.progress.tokens.output == before  # what was read, not an empty session
        _write(tmp_session, conversation(2, session_id="again"))
        assert reader.poll() is True
        assert reader.progress.unreadable is None
        assert reader.progress == _whole(conversation(2, session_id="again"))


def test_path_that_is_a_directory_is_unreadable(tmp_path: Path) -> None:
    folder = tmp_path / "x.jsonl"
    folder.mkdir()
    with SessionReader(folder) as reader:
        reader.poll()
        assert reader.progress.unreadable == "EISDIR"


# ----- the stat gate ----------------------------------------------------------------------
def test_unchanged_file_costs_one_stat_and_no_open(
    tmp_session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_session, conversation(2))
    calls = {"stat": 0, "open": 0, "pread": 0}
    real_stat, real_open, real_pread = os.stat, os.open, os.pread

    def counting(name: str, real):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls[name] += 1
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(reader_module.os, "stat", counting("stat", real_stat))
    monkeypatch.setattr(reader_module.os, "open", counting("open", real_open))
    monkeypatch.setattr(reader_module.os, "pread", counting("pread", real_pread))
    with SessionReader(tmp_session) as reader:
        _drain(reader)
        assert calls["open"] == 1
        for key in calls:
            calls[key] = 0
        for _ in range(100):
            assert reader.poll() is False
        assert calls == {"stat": 100, "open": 0, "pread": 0}
        # An append is seen through the fd kept open: still no open.
        _write(tmp_session, line(user("late", "f1", "more", 99_000)))
        assert reader.poll() is True
        assert calls["open"] == 0 and reader.opens == 1


def test_large_file_is_read_in_bounded_polls(tmp_session: Path) -> None:
    _write(tmp_session, conversation(400))
    size = tmp_session.stat().st_size
    with SessionReader(tmp_session, max_bytes_per_poll=size // 4) as reader:
        reader.poll()
        assert reader.pending is True
        assert reader.offset <= size // 4
        polls = 1
        while reader.pending:
            reader.poll()
            polls += 1
        assert polls in (4, 5)
        assert reader.progress.turns == 800
        assert reader.progress == _whole(conversation(400))


def test_partial_or_blank_appends_do_not_count_as_changes(tmp_session: Path) -> None:
    _write(tmp_session, conversation(1))
    with SessionReader(tmp_session) as reader:
        _drain(reader)
        next_line = line(user("z", "f0", "next", 99_000))
        _write(tmp_session, next_line[:20])
        assert reader.poll() is False  # half a line: nothing to show yet
        _write(tmp_session, next_line[20:])
        assert reader.poll() is True
        _write(tmp_session, b"\n  \n")
        assert reader.poll() is False
        _write(tmp_session, b"{broken\n")
        assert reader.poll() is True  # a bad line moves skipped_lines
        assert reader.progress.skipped_lines == 1
