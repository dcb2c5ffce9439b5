"""Which lines of a session file are the conversation a person reads (issue 32 item 5).

Most lines of a Claude Code session are Claude's own records — attachments, api-request,
atis-latch, last-prompt, tools-used, queue-operation, cost-state — and a Codex rollout
is half events, turn contexts and usage records. The Transcript tab shows the
conversation by default and hides the rest (a key shows every line again). The rule,
for a line decoded and translated as the tab shows it (`decode_line`):

- an invalid line (not JSON, not an object, a figure no call reports, too long) is shown:
  it is information; a blank line is not;
- user messages, tool results and tool calls are shown; an assistant entry is shown when
  it has text, a tool call or is an error (Claude writes one line per content block: a
  line of thinking alone, or a Codex usage record, says nothing to read);
- Claude Code: a `system` record with text (the compaction boundary, a command's
  output) is shown; attachments (but a message the user sent mid-turn), `isMeta` notes,
  the resume notice and every record without a uuid are not;
- Codex: the response items are (but the developer prompt, `<environment_context>` and
  reasoning), a compaction and the events that report an error; the session meta, turn
  contexts, world states, usage records and every other event are not;
- pi: messages, model changes, compactions, branch summaries and custom messages; the
  session header and the settings records (thinking level, labels, session info) not.

`conversation_lines` applies that rule to a whole step of the index (4 MiB of lines)
without decoding most of them: decoding every line of a 50 MB session takes seconds;
this takes a few times the newline scan it rides on. It reads a line's leading members
from its first byte, numpy over many lines at once: up to the first bracket or
backslash every quote is a real one, so the strings there pair up and a string followed
by `:` is a real key of the top level (or, past the `{` a key opens, of that first
nested object) — text inside a string, a prompt that quotes `"type":"attachment"`,
cannot be mistaken for a field. A few questions are then answered by looking for a
quoted token in the whole line (`"isMeta"`, `"tool_use"`, `"uuid"`): inside a JSON
string every quote is escaped, so a hit is a real key or value somewhere and a miss
proves there is none. A line those cannot decide — and any line that does not end with
`}` (cut short by a crash, or no object at all) — is decoded and judged by the rule.

What it relies on, as every writer of these files does (JSON.stringify, serde, json):
keys written literally (no escapes in them) and never twice in one object; and a Claude
Code record that opens (after its chain fields) with an `attachment` object is an
attachment record, one that opens with a `message` whose role is assistant a model
call's block — their own `type` comes after that object and is not read. One thing only
a full decode tells: an internal record whose leading fields are sound but whose rest
is corrupt (a bad figure in a usage record, a cost-state) is hidden with its kind; the
raw view (`v`) shows it as invalid.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from legion_tui.session import figures
from legion_tui.session.entries import (
    AssistantEntry,
    Entry,
    OtherEntry,
    ToolResultEntry,
    UserEntry,
)
from legion_tui.session.figures import BadFigure
from legion_tui.session.formats import Format, detect, translator
from legion_tui.session.reader import MAX_LINE_BYTES

__all__ = [
    "PAD",
    "Decoded",
    "conversation",
    "conversation_lines",
    "decode_line",
    "first_format",
]

Mask = npt.NDArray[np.bool_]
Offsets = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Decoded:
    """A line read as the tab shows it: its JSON object and the entry it is shown as
    (None: the translator makes no entry of it)."""

    value: dict[str, Any]
    entry: Entry | None


def _main_entry(entries: Sequence[Entry]) -> Entry | None:
    """The entry a line is shown as: its conversation part when it has one."""
    for entry in entries:
        if not isinstance(entry, OtherEntry):
            return entry
    return entries[0] if entries else None


def decode_line(raw: bytes | bytearray, fmt: Format) -> Decoded | str:
    """One line (its newline and any CR cut) read alone, or why it is not an entry: ""
    for a blank line, else the reason it is invalid. Never raises.

    Each line is read alone (a page is random access): a translator's cross-line state —
    Claude Code's request times, Codex's usage records — is not needed to show it."""
    if len(raw) > MAX_LINE_BYTES:
        return f"line too long ({len(raw)} bytes)"
    if not raw.strip():
        return ""
    try:
        value: Any = figures.loads(raw.decode("utf-8"))
        if not isinstance(value, dict):
            return "not a JSON object"
        return Decoded(value, _main_entry(translator(fmt).entries(value)))
    except BadFigure as err:
        return f"skipped: {err}"
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "not valid JSON"


# ----- the rule ----------------------------------------------------------------------------
_PI_SHOWN = frozenset({"model_change", "compaction", "branch_summary", "custom_message"})


def _said(entry: Entry | None, others: frozenset[str]) -> bool:
    """An entry a person reads: the user's words, a tool's result, a reply with text, a
    tool call or an error; of the other entries, only the kinds named."""
    if isinstance(entry, UserEntry | ToolResultEntry):
        return True
    if isinstance(entry, AssistantEntry):
        return bool(entry.text.strip() or entry.tool_calls or entry.stop_reason == "error")
    if isinstance(entry, OtherEntry):
        return entry.type in others
    return False  # no entry, or a header


def conversation(fmt: Format, decoded: Decoded | str) -> bool:
    """Whether a line (as `decode_line` read it) is shown by default (module doc)."""
    if isinstance(decoded, str):
        return decoded != ""  # invalid: shown; blank: not
    kind = decoded.value.get("type")
    entry = decoded.entry
    if fmt == "claude":
        if isinstance(entry, OtherEntry) and entry.type == "system":
            return bool(entry.text.strip())
        return _said(entry, frozenset())
    if fmt == "codex":
        if kind == "event_msg":
            # Events repeat the response items (agent_message, user_message, an aborted
            # turn told twice) or are bookkeeping; an error is the one news among them.
            return isinstance(entry, OtherEntry) and entry.type == "error"
        if kind == "response_item":
            return _said(entry, frozenset({"backgrounded"}))
        return kind == "compacted"
    if kind == "message":
        return True  # pi: every message is a turn of the conversation (an empty one too)
    return _said(entry, _PI_SHOWN)


def first_format(raw: bytes | bytearray) -> Format:
    """A file's format from its first line (pi when that line is no JSON object)."""
    try:
        value: Any = json.loads(raw[:MAX_LINE_BYTES].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        value = None
    return detect(value) if isinstance(value, dict) else "pi"


# ----- the same rule, many lines at a time -------------------------------------------------
# Bytes of a line's start the lexer reads for its leading members, and the strings (keys
# and values) it reads there: most lines tell within the first; a line whose leads run
# past it and that is still undecided is read again, wider.
NARROW, NARROW_TOKENS = 128, 8
WIDE, WIDE_TOKENS = 320, 24
PAD = WIDE + 8  # zero bytes after a buffer's last line that the windows may read
NAME = 24  # the longest value compared (names of record kinds and roles)

# What a line's leading members decide: shown, hidden, decoded to tell; or a look at
# the whole line for a quoted token (`_look`).
HIDE, SHOW, DECODE = 0, 1, 2
LOOK_USER, LOOK_CALL, LOOK_REPLY, LOOK_END = 3, 4, 5, 6

# Keys the lexer knows by name (an index into this tuple; -1 for any other string).
_KEYS = ("type", "role", "payload", "attachment", "message")
_TYPE, _ROLE, _PAYLOAD, _ATTACHMENT, _MESSAGE = range(len(_KEYS))

_ALL = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
# The low k bytes of a little-endian word, for k = 0 … 8.
_LOW = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [0xFFFF_FFFF_FFFF_FFFF],
                dtype=np.uint64)  # fmt: skip


def _words_of(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """The 8 bytes starting at every offset of `data`, as little-endian words: a view
    (unaligned, no copy), so the bytes at any offset compare as one number."""
    return np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))


def _word(text: bytes) -> np.uint64:
    padded = text.ljust(8, b"\0")[:8]
    return np.uint64(int.from_bytes(padded, "little"))


_MIX = (np.uint64(0x9E37_79B9_7F4A_7C15), np.uint64(0xC2B2_AE3D_27D4_EB4F),
        np.uint64(0x1656_67B1_9E37_79F9))  # odd multipliers: a word each, mixed  # fmt: skip


class _Names:
    """A few names (of record kinds, roles, keys) looked up many at a time by their
    bytes: three words (24 bytes) and the length, mixed into one number to find the
    candidate, then compared whole."""

    def __init__(self, names: Sequence[str]) -> None:
        self.size = len(names)
        raw = [name.encode() for name in names]
        self.words = np.array([[_word(name[i:i + 8]) for i in (0, 8, 16)] for name in raw],
                              dtype=np.uint64).reshape(len(raw), 3)  # fmt: skip
        self.lengths = np.array([len(name) for name in raw], dtype=np.int64)
        mixed = self._mix(list(self.words.T), self.lengths)
        self.order = np.argsort(mixed)
        self.mixed = mixed[self.order]

    @staticmethod
    def _mix(words: list[npt.NDArray[np.uint64]], length: Offsets) -> npt.NDArray[np.uint64]:
        total = length.astype(np.uint64)
        for word, factor in zip(words, _MIX, strict=True):
            total = total + word * factor  # wraps modulo 2**64, as a hash should
        return total

    def codes(self, words: npt.NDArray[np.uint64], at: Offsets, length: Offsets) -> Offsets:
        """Which name the `length` bytes at `at` (offsets into `words`' bytes) spell: its
        index, self.size for another string, -1 where `at` is -1 (not read)."""
        read = at >= 0
        safe = np.where(read, at, 0)
        got = [words[safe + 8 * i] & _LOW[np.clip(length - 8 * i, 0, 8)] for i in range(3)]
        mixed = self._mix(got, length)
        slot = np.minimum(np.searchsorted(self.mixed, mixed), self.size - 1)
        index = self.order[slot]
        same = read & (length <= NAME) & (self.mixed[slot] == mixed)
        same &= self.lengths[index] == length
        for i in range(3):
            same &= self.words[index, i] == got[i]
        return np.where(same, index, np.where(read, self.size, -1))


_OPENING = _word(b'{"type":')


def _opening_type(
    padded: npt.NDArray[np.uint8], words: npt.NDArray[np.uint64], starts: Offsets, ends: Offsets
) -> tuple[Offsets, Offsets]:
    """Lines that open with `{"type":"<kind>"` (pi's all do, and Claude Code's
    bookkeeping): the kind's first byte and length (-1: the line opens otherwise, or the
    kind holds an escape). The type is then the object's first member — a real one,
    whatever the rest of the line holds."""
    opens = (words[starts] == _OPENING) & (ends - starts > 10)
    after = padded[starts + 8]
    spaced = after == 0x20
    first = starts + 9 + spaced
    opens &= np.where(spaced, padded[starts + 9], after) == 0x22
    window = np.lib.stride_tricks.sliding_window_view(padded, NAME + 1)[first]
    quote = window == 0x22
    closed = quote.any(axis=1)
    length = np.where(closed, quote.argmax(axis=1), NAME + 1)
    escaped = ((window == 0x5C) & (np.arange(NAME + 1)[None, :] < length[:, None])).any(axis=1)
    fine = opens & closed & ~escaped & (first + length < ends)
    return np.where(fine, first, -1), length


class _Leads:
    """The leading members of some lines, read at once from each one's first WIDTH bytes
    (numpy, no Python per line).

    A line opens with its top-level object's members. Up to the first bracket or
    backslash after the opening brace (its "flat lead") every quote is a real one, so the
    quotes pair into the strings there, and a string followed by `:` is a key of the top
    level. When that first bracket is the `{` a key's value opens with, the same holds
    inside it up to the next bracket or backslash (the "nested lead"). Nothing past those
    is read: a line whose fields are not there is decided another way."""

    def __init__(
        self, padded: npt.NDArray[np.uint8], starts: Offsets, ends: Offsets, width: int,
        tokens: int,
    ) -> None:
        count = self.count = len(starts)
        self.width = width
        # The windows side by side in one buffer, zero-padded for the word view past the
        # last one; a row's bytes past its line's end are the next line's, never read
        # (`length` bounds every hit and byte looked at).
        self.flat_bytes = np.zeros(count * width + NAME + 8, dtype=np.uint8)
        win = self.flat_bytes[: count * width].reshape(count, width)
        # (Fancy indexing of the sliding view copies just these rows; np.take would first
        # make the whole view contiguous: the buffer times the width.)
        win[:] = np.lib.stride_tricks.sliding_window_view(padded, width)[starts]
        self.length = np.minimum(ends - starts, width)
        self.words = _words_of(self.flat_bytes)
        self.base = np.arange(count, dtype=np.int64) * width  # each row's first byte
        self.braced = (win[:, 0] == 0x7B) & (self.length > 0)
        # The leads' ends: the first two brackets or backslashes after the opening brace.
        # OR 0x20 folds [ \ ] onto { | }; a `|` only ends a lead early (less is read,
        # nothing misread).
        rough = (win | 0x20) - 0x7B < 3
        rough[:, 0] = False
        bounds = self._firsts(np.flatnonzero(rough), 2, width)
        self.lead_end, self.inner_end = bounds[:, 0], bounds[:, 1]
        self.nests = self._byte(self.lead_end) == 0x7B  # the flat lead ends at a `{`
        # The strings: consecutive quotes, paired from the line's first byte.
        quotes = self._firsts(np.flatnonzero(win == 0x22), 2 * tokens, -1)
        self.open, self.close = quotes[:, 0::2], quotes[:, 1::2]
        # The leads may go on past what was read: the window or the strings ran out.
        self.cut = (self.inner_end >= width) & (self.length >= width) | (
            (self.close[:, -1] >= 0) & (self.close[:, -1] < self.inner_end)
        )
        real = (self.open > 0) & (self.close > self.open)
        # A key: a string then `:` (a space allowed before and after); its value starts
        # after those.
        colon = self.close + 1 + (self._byte(self.close + 1) == 0x20)
        real &= self._byte(colon) == 0x3A
        self.value = np.where(real, colon + 1 + (self._byte(colon + 1) == 0x20), -2)
        # Which of _KEYS each key spells (-1: another): only keys inside the leads, of a
        # length one of them has, are looked up.
        size = self.close - self.open - 1
        real &= (self.close < self.inner_end[:, None]) & np.isin(size, _KEY_SIZES)
        self.key = np.full(size.shape, -1, dtype=np.int64)
        at = np.flatnonzero(real)
        if len(at):
            start = (self.base[:, None] + self.open + 1).reshape(-1)[at]
            codes = _KEY_NAMES.codes(self.words, start, size.reshape(-1)[at])
            self.key.reshape(-1)[at] = np.where(codes < len(_KEYS), codes, -1)
        self._fields: dict[tuple[int, bool], Offsets] = {}

    def _firsts(self, hits: Offsets, many: int, missing: int) -> Offsets:
        """The columns of each row's first `many` hits (flat indices) within its line,
        `missing` after."""
        first = np.searchsorted(hits, self.base)
        have = np.searchsorted(hits, self.base + self.length) - first
        if not len(hits):
            return np.full((self.count, many), missing, dtype=np.int64)
        pick = np.minimum(first[:, None] + np.arange(many), len(hits) - 1)
        cols = hits[pick] - self.base[:, None]
        return np.where(np.arange(many)[None, :] < have[:, None], cols, missing)

    def _byte(self, cols: Offsets) -> npt.NDArray[np.uint8]:
        """The bytes at `cols` (per row, one or a row of them); 0 outside the window."""
        base = self.base if cols.ndim == 1 else self.base[:, None]
        length = self.length if cols.ndim == 1 else self.length[:, None]
        inside = (cols >= 0) & (cols < length)
        got = self.flat_bytes[base + np.clip(cols, 0, self.width - 1)]
        return np.where(inside, got, 0).astype(np.uint8)

    def _spells(self, start: Offsets, end: Offsets, names: _Names) -> Offsets:
        base = self.base if start.ndim == 1 else self.base[:, None]
        read = (start > 0) & (end >= start)
        at = np.where(read, base + start, -1)
        return names.codes(self.words, at.reshape(-1), (end - start).reshape(-1)).reshape(
            start.shape
        )

    def field(self, key: int, *, nested: bool) -> Offsets:
        """Per row, the token holding the string value of the first `key` member in the
        flat lead (the nested lead when `nested`); -1 when there is none there."""
        known = self._fields.get((key, nested))
        if known is None:
            known = self._fields[key, nested] = self._field(key, nested=nested)
        return known

    def _field(self, key: int, *, nested: bool) -> Offsets:
        following_open = np.concatenate([self.open[:, 1:], np.full((self.count, 1), -1)], 1)
        following_close = np.concatenate([self.close[:, 1:], np.full((self.count, 1), -1)], 1)
        if nested:
            high = self.inner_end[:, None]
            where = (self.open > self.lead_end[:, None]) & self.nests[:, None]
        else:
            high = self.lead_end[:, None]
            where = self.open > 0
        hit = where & (self.key == key) & (self.value == following_open)
        hit &= (following_close >= 0) & (following_close < high) & self.braced[:, None]
        return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, -1)

    def opener(self) -> Offsets:
        """Which of _KEYS holds the object the nested lead is inside (its value is the `{`
        the flat lead ends at); -1 when none of them does."""
        hit = (self.value == self.lead_end[:, None]) & (self.key >= 0)
        hit &= (self.close < self.lead_end[:, None]) & (self.braced & self.nests)[:, None]
        found = hit.any(axis=1)
        return np.where(found, self.key[np.arange(self.count), hit.argmax(axis=1)], -1)

    def codes(self, token: Offsets, names: _Names) -> Offsets:
        """Which of `names` the string `token` (an index per row) spells: its index,
        names.size for another string, -1 when not read."""
        rows = np.arange(self.count)
        safe = np.maximum(token, 0)
        start = np.where(token >= 0, self.open[rows, safe] + 1, -1)
        return self._spells(start, self.close[rows, safe], names)


_KEY_NAMES = _Names(_KEYS)
_KEY_SIZES = np.unique([len(key) for key in _KEYS])


def _table(codes: Offsets, decisions: Sequence[int], other: int, unread: int) -> Offsets:
    """Decisions by name code: `decisions[i]` for the i-th name, `other` for a string
    not named, `unread` for a line whose field was not read."""
    lookup = np.array([*decisions, other], dtype=np.int64)
    return np.where(codes < 0, unread, lookup[np.maximum(codes, 0)])


_PI_KINDS = _Names(("message", *sorted(_PI_SHOWN), "session"))
# Claude Code records decided by more than their kind; any other kind is bookkeeping:
# no uuid (no entry) or an entry the rule hides (a cost-state included: its figure
# only decides whether it is invalid).
_CLAUDE_KINDS = _Names(("user", "assistant", "attachment", "system"))
_CLAUDE_BY_KIND = [LOOK_USER, DECODE, DECODE, DECODE]
_CODEX_KINDS = _Names(("event_msg", "response_item", "compacted", "session_meta",
                       "turn_context", "world_state", "token_usage_record"))  # fmt: skip
_CODEX_EVENTS = _Names(("error", "task_complete"))
_CODEX_ITEMS = _Names(("message", "function_call", "custom_tool_call",
                       "function_call_output", "custom_tool_call_output"))  # fmt: skip
_ROLES = _Names(("user", "assistant"))
_QUEUED = _Names(("queued_command",))


def _pi(kinds: Offsets, leads: _Leads | None) -> Offsets:
    # Any other record is a setting or bookkeeping (thinking level, label, session info).
    return _table(kinds, [SHOW] * (_PI_KINDS.size - 1) + [HIDE], HIDE, DECODE)


def _claude(kinds: Offsets, leads: _Leads | None) -> Offsets:
    out = _table(kinds, _CLAUDE_BY_KIND, HIDE, DECODE)
    if leads is None:
        return out
    # No type before the first nested value: an attachment (whose own type says which)
    # or a model call's content block (`message` first), looked at.
    nested = leads.opener()
    first = leads.codes(np.where(nested == _ATTACHMENT, leads.field(_TYPE, nested=True), -1),
                        _QUEUED)  # fmt: skip
    # A message the user sent mid-turn is the user's words (decoded); any other
    # attachment is context Claude adds: hidden. (Only an attachment record opens with
    # its attachment object; its own type, after that object, is not read.)
    attachment = _table(first, [DECODE], HIDE, DECODE)
    roles = leads.codes(np.where(nested == _MESSAGE, leads.field(_ROLE, nested=True), -1),
                        _ROLES)  # fmt: skip
    call = _table(roles, [DECODE, LOOK_CALL], DECODE, DECODE)
    unread = kinds < 0
    out = np.where(unread & (nested == _ATTACHMENT), attachment, out)
    return np.where(unread & (nested == _MESSAGE), call, out)


def _codex(kinds: Offsets, leads: _Leads | None) -> Offsets:
    hidden = [HIDE] * 4  # session_meta, turn_context, world_state, token_usage_record
    out = _table(kinds, [DECODE, DECODE, SHOW, *hidden], HIDE, DECODE)
    if leads is None:
        return out
    # event_msg and response_item: by their payload's type (a message by its role).
    inside = leads.opener() == _PAYLOAD
    sub = np.where(inside, leads.field(_TYPE, nested=True), -1)
    # A task_complete carries the error of a failed turn, if any: looked at.
    event = _table(leads.codes(sub, _CODEX_EVENTS), [SHOW, LOOK_END], HIDE, DECODE)
    items = leads.codes(sub, _CODEX_ITEMS)
    item = _table(items, [DECODE, SHOW, SHOW, SHOW, SHOW], HIDE, DECODE)  # reasoning: hidden
    roles = leads.codes(np.where(inside, leads.field(_ROLE, nested=True), -1), _ROLES)
    # The user's words unless Codex's own <environment_context>; a reply unless blank.
    # Developer and system messages are Codex's prompt: hidden.
    message = _table(roles, [LOOK_USER, LOOK_REPLY], HIDE, DECODE)
    item = np.where(items == 0, message, item)
    out = np.where(kinds == 0, event, out)
    return np.where(kinds == 1, item, out)


def _has(buf: bytes | bytearray, start: int, end: int, *tokens: bytes) -> bool:
    """A quoted token in the line: inside a JSON string every quote is escaped, so a hit
    is a real key or value (at some depth), and a miss proves there is none."""
    return any(buf.find(token, start, end) >= 0 for token in tokens)


def _spellings(compact: bytes) -> tuple[bytes, bytes]:
    """JSON punctuation as written compactly (JSON.stringify, serde) and with a space
    after each `:` and `,` (Python's json.dumps)."""
    return compact, compact.replace(b":", b": ").replace(b",", b", ")


_TEXT = _spellings(b'"text":"')
_ASSISTANT_RECORD = _spellings(b'"type":"assistant"')
_LISTED = _spellings(b'"content":[')


def _text_at(buf: bytes | bytearray, start: int, end: int) -> int:
    """Where the first `"text"` member's string starts (-1: none). The first text block's
    text, in the records read here: no other object there has a `text` key."""
    found = [at + len(key) for key in _TEXT if (at := buf.find(key, start, end)) >= 0]
    return min(found, default=-1)


def _readable(buf: bytes | bytearray, start: int, end: int) -> bool:
    """The first text starts with a printable character (so it is not blank)."""
    at = _text_at(buf, start, end)
    return 0 <= at < end and 0x21 <= buf[at] <= 0x7E and buf[at] not in b'"\\'


def _look(fmt: Format, how: int, buf: bytes | bytearray, start: int, end: int) -> int:
    """A line whose leading members left one question: answered by quoted tokens."""
    if how == LOOK_USER and fmt == "codex":
        # The user's words, but Codex's own context opens with <environment_context>.
        at = _text_at(buf, start, end)
        return HIDE if at >= 0 and buf.startswith(b"<environment_context>", at) else SHOW
    if how == LOOK_USER:
        # Claude: an isMeta note is Claude's own (decoded to tell); no uuid: no entry.
        if _has(buf, start, end, b'"isMeta"'):
            return DECODE
        return SHOW if _has(buf, start, end, b'"uuid"') else HIDE
    if how == LOOK_END:
        # No "error" anywhere: a turn that ended well, hidden; else decoded to tell.
        return DECODE if _has(buf, start, end, b'"error"') else HIDE
    if how == LOOK_REPLY:
        return SHOW if _readable(buf, start, end) else DECODE
    # LOOK_CALL: a model call's content block, shown with text or a tool call; thinking
    # alone is not. An API error is shown, the resume notice not: decoded to tell.
    if _has(buf, start, end, b'"isApiErrorMessage"', b"<synthetic>"):
        return DECODE
    if not _has(buf, start, end, b'"uuid"'):
        return HIDE  # no uuid anywhere: no entry
    if _has(buf, start, end, b'"tool_use"') or _readable(buf, start, end):
        return SHOW
    if _has(buf, start, end, b'"text"') or not _has(buf, start, end, *_LISTED):
        return DECODE  # text that may be blank; a content that is a plain string
    return HIDE if _has(buf, start, end, *_ASSISTANT_RECORD) else DECODE


_BY_FORMAT: dict[Format, tuple[_Names, Callable[[Offsets, _Leads | None], Offsets]]] = {
    "pi": (_PI_KINDS, _pi),
    "claude": (_CLAUDE_KINDS, _claude),
    "codex": (_CODEX_KINDS, _codex),
}


def conversation_lines(buf: bytes | bytearray, starts: Offsets, ends: Offsets, fmt: Format) -> Mask:
    """For each line buf[starts[i]:ends[i]] (its newline excluded), whether the rule shows
    it: decided from its leading members where they tell (module doc), else decoded.
    Cheaper when PAD zero bytes follow the last line in `buf`."""
    count = len(starts)
    shown = np.zeros(count, dtype=np.bool_)
    if not count:
        return shown
    data = np.frombuffer(buf, dtype=np.uint8)
    # Windows and words are read past a line's start: the buffer's end is padded (by the
    # caller, who builds the buffer anyway — else here, with a copy).
    padded = data if len(data) >= int(ends[-1]) + PAD else np.concatenate(
        [data, np.zeros(PAD, dtype=np.uint8)]
    )
    words = _words_of(padded)
    starts = starts.astype(np.int64, copy=False)
    ends = ends.astype(np.int64, copy=True)
    ends[(ends > starts) & (padded[np.maximum(ends - 1, 0)] == 0x0D)] -= 1  # CRLF: CR cut
    kinds_table, decide = _BY_FORMAT[fmt]
    first, length = _opening_type(padded, words, starts, ends)
    kinds = kinds_table.codes(words, first, length)
    # The lines that do not open with their type: read by the lexer (pi's all do).
    rest = np.flatnonzero(kinds < 0) if fmt != "pi" else np.zeros(0, dtype=np.int64)
    verdict = decide(kinds, None)
    for width, tokens in ((NARROW, NARROW_TOKENS), (WIDE, WIDE_TOKENS)):
        if not len(rest):
            break
        leads = _Leads(padded, starts[rest], ends[rest], width, tokens)
        verdict[rest] = decide(leads.codes(leads.field(_TYPE, nested=False), kinds_table), leads)
        rest = rest[(verdict[rest] == DECODE) & leads.cut]
    # An object's line ends with its closing brace: one that does not (cut short, or no
    # object) is decoded, so an invalid line is never hidden by its leading bytes.
    closed = (ends > starts) & (padded[np.maximum(ends - 1, 0)] == 0x7D)
    verdict[~closed] = DECODE
    verdict[ends - starts > MAX_LINE_BYTES] = SHOW  # invalid: too long to read
    shown[verdict == SHOW] = True
    for row in np.flatnonzero(verdict >= DECODE).tolist():
        start, end = int(starts[row]), int(ends[row])
        how = int(verdict[row])
        if how > DECODE:
            how = _look(fmt, how, buf, start, end)
        if how == DECODE:
            shown[row] = conversation(fmt, decode_line(buf[start:end], fmt))
        else:
            shown[row] = how == SHOW
    return shown
