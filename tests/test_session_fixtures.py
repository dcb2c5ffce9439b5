"""The two real pi sessions, with every expected figure worked out by hand from the files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from session_helpers import V1_FIXTURE, V3_FIXTURE

from legion_tui.session.reader import read_session

pytestmark = pytest.mark.host

LEGION = Path(sys.executable).with_name("legion")


def legion_inspect(*args: str) -> subprocess.CompletedProcess[str]:
    """`legion inspect ARGS…` as a user runs it: the installed entry point, a real process."""
    return subprocess.run(
        [str(LEGION), "inspect", *args], capture_output=True, text=True, timeout=30, check=False
    )


def test_v3_fixture_figures() -> None:
    p = read_session(V3_FIXTURE)
    assert p.unreadable is None
    assert p.skipped_lines == 0
    assert p.version == 3
    # 8 lines: the header is not an entry, the 7 others are.
    assert p.entries == 7
    assert p.model == "claude-opus-5"
    # Two assistant messages: usage {input 2, output 62, cacheRead 0, cacheWrite 13301}
    # and {input 2, output 72, cacheRead 13301, cacheWrite 159}.
    assert (p.tokens.input, p.tokens.output) == (2 + 2, 62 + 72)
    assert (p.tokens.cache_read, p.tokens.cache_write) == (0 + 13301, 13301 + 159)
    assert p.cost == pytest.approx(0.08469125000000001 + 0.009454249999999999)
    assert p.turns == 2
    # No durationMs ⇒ entry.timestamp − message.timestamp. 11:54:02.850Z is the user
    # message's 1786622042850 ms, so 11:54:08.567Z = 1786622048567 and
    # 11:54:11.126Z = 1786622051126:
    #   (1786622048567 − 1786622042861) + (1786622051126 − 1786622048577) = 5706 + 2549
    assert p.generation_ms == 5706 + 2549
    assert p.tok_s == pytest.approx((62 + 72) / 8.255)  # ≈ 16.23 tok/s
    assert [(s.tokens, round(s.end - s.start, 3)) for s in p.rate_series] == [
        (62, 5.706),
        (72, 2.549),
    ]
    # The bash call toolu_017de9… has its toolResult: nothing in flight.
    assert p.in_flight == []
    assert p.last_stop_reason == "stop"
    assert p.last_text.startswith("cmd, compose, daemon")
    assert p.verdict is None  # a plain answer, no JSON
    assert p.empty_generation is False
    assert list(p.recent_user_texts) == ["Name the top-level directories here. Two lines maximum."]
    assert p.last_entry_at == pytest.approx(1786622051.126)


def test_v1_fixture_figures() -> None:
    p = read_session(V1_FIXTURE)
    assert p.unreadable is None
    assert p.skipped_lines == 0
    assert p.version == 1  # header without "version"
    assert p.entries == 6
    # header modelId → gpt-5.1-codex (aborted reply) → model_change → claude-sonnet-4-5
    assert p.model == "claude-sonnet-4-5"
    # Assistant 1 (aborted): all zero. Assistant 2: input 3, output 191, cacheWrite 1684.
    assert (p.tokens.input, p.tokens.output, p.tokens.cache_read, p.tokens.cache_write) == (
        3,
        191,
        0,
        1684,
    )
    assert p.cost == pytest.approx(0.009189)
    assert p.turns == 2
    # 23:33:01.544Z is 1763681581544 ms (the first user message), hence
    #   assistant 1: 23:33:02.351Z − 1763681581545 = 1763681582351 − 1763681581545 = 806
    #   assistant 2: 23:33:54.572Z − 1763681630793 = 1763681634572 − 1763681630793 = 3779
    assert p.generation_ms == 806 + 3779
    assert p.tok_s == pytest.approx(191 / 4.585)  # ≈ 41.66 tok/s
    # The aborted reply has 0 output tokens: no rate segment for it.
    assert [s.tokens for s in p.rate_series] == [191]
    # Three tool calls; only toolu_017qEk… (read theme.md) has a result in the excerpt.
    assert [(t.id, t.name) for t in p.in_flight] == [
        ("toolu_01FnVNKzWWm2s2SFJmJttiWh", "read"),
        ("toolu_016aKHTkjrTJcMds3wsEou2R", "bash"),
    ]
    # started at the assistant entry's timestamp, 23:33:54.572Z
    assert all(t.started_at == pytest.approx(1763681634.572) for t in p.in_flight)
    assert p.last_stop_reason == "toolUse"
    assert p.empty_generation is False
    assert len(p.recent_user_texts) == 2 and p.recent_user_texts[0] == "/mode"


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        (V3_FIXTURE, {"version": 3, "output": 134, "turns": 2, "in_flight": 0, "gen": 8255}),
        (V1_FIXTURE, {"version": 1, "output": 191, "turns": 2, "in_flight": 2, "gen": 4585}),
    ],
)
def test_inspect_json_on_fixtures(fixture: Path, expected: dict[str, int]) -> None:
    done = legion_inspect("--json", str(fixture))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["version"] == expected["version"]
    assert data["skipped_lines"] == 0
    assert data["tokens"]["output"] == expected["output"]
    assert data["turns"] == expected["turns"]
    assert data["generation_ms"] == expected["gen"]
    assert data["tok_s"] == pytest.approx(expected["output"] / (expected["gen"] / 1000))
    assert len(data["in_flight"]) == expected["in_flight"]
    for call in data["in_flight"]:
        assert set(call) == {"id", "name", "started_at"}
    assert data["verdict"] is None
    assert data["empty_generation"] is False
    assert data["unreadable"] is None
    assert set(data["tokens"]) == {"input", "output", "cache_read", "cache_write"}
    assert {"entries", "model", "cost"} <= set(data)


def test_inspect_human_output_and_missing_file(tmp_path: Path) -> None:
    done = legion_inspect(str(V1_FIXTURE))
    assert done.returncode == 0
    assert "in flight" in done.stdout and "toolu_016aKHTkjrTJcMds3wsEou2R" in done.stdout
    missing = legion_inspect(str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 1
    assert "cannot read" in missing.stderr and "no such file" in missing.stderr
    assert missing.stdout == ""
    a_dir = legion_inspect(str(tmp_path))
    assert a_dir.returncode == 1 and "EISDIR" in a_dir.stderr


FIXTURES = Path("/work/shared/fixtures")
REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("path", "said"),
    [
        (REPO / "README.md", "not a session file: no session header in its first 64 lines"),
        (Path(sys.executable).resolve(), "not a session file: no session header"),
        (FIXTURES / "claude-code" / "claude-stdout-streamjson-probe.jsonl",
         "Claude Code's stream-json output (its stdout), not a session file"),
        (FIXTURES / "codex" / "codex-stdout-exec-json.jsonl",
         "Codex's `exec --json` output (its stdout), not a session file"),
        (FIXTURES / "codex" / "codex-stdout-appserver-probe.jsonl",
         "a JSON-RPC stream (Codex's app-server, pi's RPC), not a session file"),
    ],
    ids=["readme", "binary", "claude-stdout", "codex-exec-stdout", "codex-app-server"],
)  # fmt: skip
def test_inspect_refuses_what_is_not_a_session_by_name(path: Path, said: str) -> None:
    """Issue 33: `legion inspect README.md` said `pi v3 · 0 entries · 207 skipped lines`."""
    done = legion_inspect(str(path))
    assert done.returncode == 1
    assert done.stderr.startswith(f"legion inspect: {path}: {said}"), done.stderr


@pytest.mark.parametrize(
    "path",
    [
        FIXTURES / "claude-code" / "claude-session-tool-roundtrip.jsonl",
        FIXTURES / "codex" / "codex-rollout-exec-then-2-resumes.jsonl",
        FIXTURES / "pi-sessions" / "prpilot_real_pi_transcript_v3.jsonl",
    ],
    ids=["claude", "codex", "pi"],
)
def test_inspect_still_reads_each_agent_s_session(path: Path) -> None:
    assert legion_inspect(str(path)).returncode == 0
