"""Verdict extraction: the four routes in SPEC §3 order, and never a throw."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legion_tui.session.verdict import extract_verdict

pytestmark = pytest.mark.unit


def test_route_1_fenced_json_block_wins_over_the_last_line() -> None:
    text = (
        'All done.\n```json\n{"ok": true, "reason": "fenced"}\n```\n'
        '{"ok": false, "reason": "last line"}'
    )
    v = extract_verdict(text)
    assert v is not None and v.ok is True and v.reason == "fenced"


def test_route_1_the_last_fenced_block_is_the_verdict() -> None:
    text = (
        'Example shape:\n```json\n{"ok": false, "reason": "example"}\n```\n'
        'Verdict:\n```json\n{"ok": true, "reason": "real"}\n```\n'
    )
    v = extract_verdict(text)
    assert v is not None and v.reason == "real"


def test_route_2_whole_text_spanning_lines() -> None:
    v = extract_verdict('  {\n  "ok": false,\n  "reason": "tests fail",\n  "n": 3\n}\n\n')
    assert v is not None and v.ok is False and v.reason == "tests fail"
    assert v.raw["n"] == 3


def test_route_3_last_non_blank_line_despite_a_stray_brace_in_prose() -> None:
    # The old first-`{`-to-last-`}` span would have been prose plus JSON.
    text = 'The API returns { version, entries }.\n{"ok": true, "reason": "shipped"}\n\n  \n'
    v = extract_verdict(text)
    assert v is not None and v.ok is True and v.reason == "shipped"


def test_route_4_backward_scan_finds_a_multiline_verdict_before_a_note() -> None:
    text = (
        "Report: done, see {notes}.\n"
        '{"ok": true,\n "reason": "spans\\nlines"}\n'
        "Thanks, ping me if needed."
    )
    v = extract_verdict(text)
    assert v is not None and v.ok is True and v.reason == "spans\nlines"


def test_route_4_strings_containing_braces_and_quotes() -> None:
    text = 'prose before {"ok": false, "reason": "use {x} and \\"}\\" or \\"{\\" here"} after'
    v = extract_verdict(text)
    assert v is not None and v.ok is False
    assert v.reason == 'use {x} and "}" or "{" here'


def test_route_4_escaped_backslash_before_a_closing_quote() -> None:
    text = 'x {"ok": true, "reason": "path C:\\\\dir\\\\"} trailing'
    v = extract_verdict(text)
    assert v is not None and v.reason == "path C:\\dir\\"


def test_route_4_trailing_note_with_its_own_brace() -> None:
    text = 'done {"ok": true, "reason": "r"} — note: see {appendix}'
    v = extract_verdict(text)
    assert v is not None and v.ok is True and v.reason == "r"


def test_only_objects_with_a_boolean_ok_count() -> None:
    assert extract_verdict('{"ok": 1, "reason": "x"}') is None
    assert extract_verdict('{"ok": "true"}') is None
    assert extract_verdict('{"status": "fine"}') is None


def test_array_wrapped_verdict_found_by_the_scan() -> None:
    # Route 2 parses a list (not a verdict); the scan from the last `}` reaches the object.
    v = extract_verdict('[{"ok": true}]')
    assert v is not None and v.ok is True


def test_no_json_gives_none() -> None:
    assert extract_verdict("") is None
    assert extract_verdict("all good, nothing to report") is None
    assert extract_verdict("{ unbalanced and } not json {") is None
    assert extract_verdict("}}}}{{{{") is None


def test_reason_of_another_type_is_kept_as_json() -> None:
    v = extract_verdict('{"ok": false, "reason": {"failed": ["a"]}}')
    assert v is not None and v.reason == '{"failed": ["a"]}'


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(list('{}[]":,\\ok truefalsn\n`json')), max_size=200))
def test_garbage_made_of_json_punctuation_never_throws(text: str) -> None:
    v = extract_verdict(text)
    assert v is None or isinstance(v.ok, bool)


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_any_text_never_throws(text: str) -> None:
    v = extract_verdict(text)
    assert v is None or isinstance(v.ok, bool)


_PROSE = st.text(
    alphabet=st.characters(blacklist_characters='{}"\\`', blacklist_categories=("Cs",)),
    max_size=80,
)


@settings(max_examples=200)
@given(
    before=_PROSE,
    after=_PROSE,
    ok=st.booleans(),
    reason=st.text(max_size=40),
)
def test_a_verdict_inside_brace_free_prose_is_always_found(
    before: str, after: str, ok: bool, reason: str
) -> None:
    obj = {"ok": ok, "reason": reason}
    v = extract_verdict(before + json.dumps(obj) + after)
    assert v is not None
    assert (v.ok, v.reason) == (ok, reason)
