"""SPEC §10 'a session line with NaN / inf / negative / 10⁴⁰⁰ tokens or cost': skipped and
counted with its reason; every figure read is finite, non-negative and bounded (issue 32,
item 3). Before: `$nan` and a 79-digit input count from `legion inspect`; a negative cost
summed in; `10**400` an OverflowError; a NaN cost then failed every spawn on
`NOT NULL constraint failed: usage.cost`."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legion_tui.session.figures import MAX_COST_USD, MAX_TOKENS, BadFigure, loads
from legion_tui.session.reader import read_session
from legion_tui.session.transcript import render_line

pytestmark = pytest.mark.unit

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00Z",
          "cwd": "/"}  # fmt: skip


def assistant(entry_id: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message", "id": entry_id, "parentId": None,
        "timestamp": "2026-01-01T00:00:01Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}],
                    "usage": usage},
    }  # fmt: skip


def write(path: Path, *objects: dict[str, Any]) -> Path:
    # Python's json writes NaN as `NaN`, and reads it back: so may an agent's writer.
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    return path


def test_hostile_figures_are_skipped_with_their_reasons(tmp_path: Path) -> None:
    session = write(
        tmp_path / "s.jsonl",
        HEADER,
        assistant("a1", {"input": 10, "output": 5, "cost": {"total": math.nan}}),
        assistant("a2", {"input": 10**400, "output": 5}),
        assistant("a3", {"input": 10, "output": 5, "cost": {"total": -995}}),
        assistant("a4", {"input": 10, "output": -1}),
        assistant("a5", {"input": 10, "output": 7, "cost": {"total": 0.01}}),
    )
    progress = read_session(session)
    assert (progress.tokens.input, progress.tokens.output, progress.cost) == (10, 7, 0.01)
    assert progress.skipped_lines == 4
    assert progress.skip_reasons == {
        "a non-finite number (NaN)": 1,
        "an integer of 401 digits": 1,
        "cost.total -995 is not an amount of dollars (0 … 10000)": 1,
        "output -1 is not a count of tokens (0 … 1000000000)": 1,
    }
    item = render_line(3, json.dumps(assistant("a2", {"input": 10**400})).encode())
    assert (item.role, item.text) == ("invalid", "skipped: an integer of 401 digits")


NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.just(10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(
    values=st.fixed_dictionaries(
        {k: NUMBERS for k in ("input", "output", "cacheRead", "cacheWrite", "total")}
    )
)
def test_any_value_in_any_figure_is_a_bounded_figure_or_a_counted_skip(
    tmp_path_factory: pytest.TempPathFactory, values: dict[str, Any]
) -> None:
    usage = {k: v for k, v in values.items() if k != "total"} | {"cost": {"total": values["total"]}}
    session = write(tmp_path_factory.mktemp("s") / "s.jsonl", HEADER, assistant("a1", usage))
    progress = read_session(session)  # never raises
    t = progress.tokens
    for figure in (t.input, t.output, t.cache_read, t.cache_write):
        assert isinstance(figure, int) and 0 <= figure <= MAX_TOKENS
    assert math.isfinite(progress.cost) and 0 <= progress.cost <= MAX_COST_USD
    assert progress.entries + progress.skipped_lines == 1


@settings(max_examples=100, deadline=None)
@given(value=NUMBERS)
def test_claude_code_usage_too(tmp_path_factory: pytest.TempPathFactory, value: Any) -> None:
    line = {
        "type": "assistant", "uuid": "u1", "parentUuid": None, "isSidechain": False,
        "timestamp": "2026-01-01T00:00:01.000Z", "sessionId": "s",
        "message": {"id": "m1", "model": "claude-test", "role": "assistant",
                    "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                    "usage": {"input_tokens": value, "output_tokens": value}},
    }  # fmt: skip
    progress = read_session(write(tmp_path_factory.mktemp("c") / "c.jsonl", line))
    assert 0 <= progress.tokens.input <= MAX_TOKENS and 0 <= progress.tokens.output <= MAX_TOKENS
    assert progress.entries + progress.skipped_lines == 1


def checked_loads(text: str) -> Any:
    """What `figures.loads` means: json with a hook on every constant and integer."""

    def constant(name: str) -> Any:
        raise BadFigure(f"a non-finite number ({name})")

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > 20:
            raise BadFigure(f"an integer of {len(digits.lstrip('-'))} digits")
        return int(digits)

    return json.loads(text, parse_constant=constant, parse_int=integer)


JSON_VALUES = st.recursive(
    st.one_of(
        st.integers(min_value=-(10**25), max_value=10**25),
        st.integers(min_value=10**19, max_value=10**22),  # either side of 20 digits
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(alphabet="0123456789NaInfity -\"\\é", max_size=30),
        st.booleans(),
        st.none(),
    ),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES)
def test_loads_reads_every_line_as_the_hooked_decoder_does(value: Any) -> None:
    """Issue 35: a line that cannot hold a constant nor a long integer is decoded without
    the per-integer hooks. Whatever the line (constants, long integers, strings holding
    either), str or bytes, the value or the refusal is the hooked decoder's."""
    text = json.dumps(value)
    try:
        want: Any = checked_loads(text)
    except BadFigure as err:
        for data in (text, text.encode()):
            with pytest.raises(BadFigure) as got:
                loads(data)
            assert str(got.value) == str(err)
        return
    for data in (text, text.encode()):
        got = loads(data)
        assert json.dumps(got) == json.dumps(want)  # NaN != NaN: compare the texts


def test_loads_refuses_a_long_integer_and_a_constant_in_a_plain_line() -> None:
    line = assistant("a1", {"input": 10, "output": 5})
    plain = json.dumps(line)
    assert loads(plain.encode()) == line
    for bad, reason in (("5", "an integer of 21 digits"), ("NaN", "a non-finite number (NaN)"),
                        ("-Infinity", "a non-finite number (-Infinity)")):  # fmt: skip
        text = plain.replace('"output": 5', f'"output": {"1" * 21 if bad == "5" else bad}')
        with pytest.raises(BadFigure, match=reason.replace("(", r"\(").replace(")", r"\)")):
            loads(text.encode())
    with pytest.raises(UnicodeDecodeError):
        loads(b'{"text": "\xff"}')  # bytes are strict UTF-8, as the reader decoded them
