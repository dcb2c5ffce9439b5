"""What a stop sweep looks up, by index (issue 35 item 3): a pause or `stop all` of N agents
runs N sweeps at once, and each one walking every process and every session made it
O(N²). The answers must be those of the walk."""

from __future__ import annotations

import pytest

from legion_tui.supervisor.processes.containment import Containment
from legion_tui.supervisor.processes.sweep import Marks, ProcessPass
from legion_tui.wire.names import ENV_NODE_ID, ENV_RUN_ID

pytestmark = pytest.mark.unit


def _env(run: str | None, node: str | None) -> frozenset[bytes]:
    items = {b"PATH=/usr/bin", b"HOME=/root"}
    if run is not None:
        items.add(f"{ENV_RUN_ID}={run}".encode())
    if node is not None:
        items.add(f"{ENV_NODE_ID}={node}".encode())
    return frozenset(items)


def _walked(marks: dict[int, Marks], run: str, nodes: set[str], sessions: set[int]) -> list[int]:
    """The answer of a walk over every process, as the sweep once took it."""
    want = {f"{ENV_NODE_ID}={n}".encode() for n in nodes}
    run_item = f"{ENV_RUN_ID}={run}".encode()
    return sorted(
        pid
        for pid, (_ppid, session, env) in marks.items()
        if (session is not None and session in sessions)
        or (env is not None and run_item in env and not want.isdisjoint(env))
    )


def test_a_pass_finds_by_marker_and_session_what_a_walk_finds() -> None:
    marks = {
        10: Marks(1, 10, _env("r1", "a")),  # a's agent
        11: Marks(10, 10, _env("r1", "a")),  # its child, in its session
        12: Marks(10, 12, _env("r1", "a")),  # a child that left the session (setsid)
        13: Marks(1, 10, _env(None, None)),  # shed its marker, still in a's session
        20: Marks(1, 20, _env("r1", "b")),  # another agent of the run
        30: Marks(1, 30, _env("r2", "a")),  # the same node id in another run
        40: Marks(1, None, None),  # a zombie: neither session nor environment
        41: Marks(1, 41, None),  # not ours to read
    }
    taken = ProcessPass(marks)
    cases = [
        ({"a"}, {10}),
        ({"a"}, set()),
        ({"b"}, set()),
        ({"a", "b"}, {10, 41}),
        ({"c"}, {20}),
        (set(), set()),
    ]
    for nodes, sessions in cases:
        assert taken.marked("r1", nodes, sessions) == _walked(marks, "r1", nodes, sessions)
    assert taken.marked("r1", {"a"}, {10}) == [10, 11, 12, 13]  # each once
    # Another run asked of the same pass: its own markers, not the first run's.
    assert taken.marked("r2", {"a"}) == [30] == _walked(marks, "r2", {"a"}, set())


def test_the_sessions_of_an_agent_follow_its_starts_and_a_reused_session_id() -> None:
    box = Containment(use_cgroups=False)
    a, b = ("r", "a"), ("r", "b")
    assert not box.needs_record()
    box.started(a, 100)
    box.started(b, 200)
    box.started(a, 101)  # a resumed agent: a second session under the same key
    assert box.sessions_of([a]) == {100, 101}
    assert box.sessions_of([a, b]) == {100, 101, 200}
    assert box.needs_record()  # no cgroups: the host's walk is what tracks them
    box.started(b, 100)  # the kernel gave 100 out again, to b's new agent
    assert box.sessions_of([a]) == {101}
    assert box.sessions_of([b]) == {100, 200}
    assert box.sessions_of([("r", "c")]) == set()
