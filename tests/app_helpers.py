"""A canned legion for the dashboard tests, goldens and the frame benchmark.

Everything is fixed: the clock, the ids, the timestamps, the token counts. The shapes
cover every row kind the railway tree draws: each status glyph, declared phases, a
working node, a stalled node (7m31s in bash), verdicts ✓/✗, a process child with a pid,
an unreadable session, an interrupted node.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyte
from rich.color import ColorSystem
from textual.app import App
from textual.drivers.headless_driver import HeadlessDriver

from legion_tui import receipts
from legion_tui.agents.cards import CardSet, load_cards
from legion_tui.fanout.compare import Attempt
from legion_tui.git.review import FileChange, Review
from legion_tui.model import EventType, MailKind, MailState, NodeStatus, Role, Urgency
from legion_tui.model_records import (
    Event,
    InFlightTool,
    MailboxStats,
    Message,
    Node,
    Usage,
    Verdict,
)
from legion_tui.ops import ControlVerb, Workspace
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.state import LegionModel
from legion_tui.wire.names import OpError
from legion_tui.wire.spawn_request import ChildRequest

if TYPE_CHECKING:
    from textual.pilot import Pilot

    from legion_tui.dashboard.app import LegionApp
    from legion_tui.widgets.overlay.detail import DetailScreen

NOW = 1_790_000_000.0  # a fixed "now" (2026-09-21); every timestamp is relative to it
RUN_ID = "r-7f3a"


def fixed_clock() -> float:
    return NOW


async def open_detail(pilot: Pilot[None], app: LegionApp, node_id: str) -> DetailScreen:
    """Select `node_id` in the tree, press o, and return the overlay it opened."""
    from legion_tui.widgets.overlay.detail import DetailScreen

    app.railway.select(node_id)
    await pilot.press("o")
    await pilot.pause()
    assert isinstance(app.screen, DetailScreen)
    return app.screen


async def show_tab(pilot: Pilot[None], detail: DetailScreen, tab_id: str) -> None:
    """Show a tab of the detail overlay and wait (bounded) until its content is mounted:
    a tab other than the Transcript is built the first time it is shown."""
    from textual.widgets import TabbedContent, TabPane

    # As the overlay's own tab keys do: the focus leaves first, or a focused widget in
    # the pane being hidden (the Mail tab's list) would bring its tab straight back.
    detail.set_focus(None)
    detail.query_one("#detail-tabs", TabbedContent).active = tab_id
    deadline = time.monotonic() + 10.0
    while not detail.query_one(f"#{tab_id}", TabPane).children:
        assert time.monotonic() < deadline, f"the {tab_id} tab was never built"
        await pilot.pause()
    await pilot.pause()


def _progress(
    out: int,
    gen_s: float,
    *,
    tools: list[tuple[str, float]] | None = None,
    verdict: Verdict | None = None,
    unreadable: str | None = None,
) -> SessionProgress:
    segs = [RateSegment(NOW - 50 + i * 10, NOW - 45 + i * 10, out // 5) for i in range(5)]
    return SessionProgress(
        entries=12,
        tokens=Usage(input=out * 4, output=out, cost=out * 0.00001),
        turns=3,
        generation_ms=gen_s * 1000.0,
        rate_series=segs,
        in_flight=[
            InFlightTool(id=f"t{i}", name=name, started_at=NOW - ago)
            for i, (name, ago) in enumerate(tools or [])
        ],
        verdict=verdict,
        unreadable=unreadable,
        last_text="Reading the handlers before changing them.",
    )


def _node(
    nid: str,
    parent: str | None,
    name: str,
    path: str,
    role: Role,
    status: NodeStatus,
    *,
    age: float,
    ended_ago: float = 0.0,
    phase: str | None = None,
    backend: str = "inprocess",
    pid: int | None = None,
    verdict: dict[str, object] | None = None,
    kind: str = "sim",
) -> Node:
    return Node(
        id=nid,
        run_id=RUN_ID,
        parent_id=parent,
        name=name,
        path=path,
        role=role,
        kind=kind,  # type: ignore[arg-type]
        backend=backend,  # type: ignore[arg-type]
        status=status,
        phase=phase,
        pid=pid,
        verdict=json.dumps(verdict) if verdict is not None else None,
        created_at=NOW - age,
        updated_at=NOW - ended_ago if ended_ago else NOW - age,
    )


SESSION_LINES: list[dict[str, object]] = [
    {
        "type": "session",
        "version": 3,
        "id": "s-n2",
        "timestamp": "2026-09-21T12:00:00.000Z",
        "cwd": "/work/project",
    },
    {
        "type": "model_change",
        "id": "a1",
        "parentId": None,
        "timestamp": "2026-09-21T12:00:00.100Z",
        "provider": "sim",
        "modelId": "sim-1",
    },
    {
        "type": "message",
        "id": "a2",
        "parentId": "a1",
        "timestamp": "2026-09-21T12:00:00.200Z",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": "Add pagination to GET /items."}],
        },
    },
    {
        "type": "message",
        "id": "a3",
        "parentId": "a2",
        "timestamp": "2026-09-21T12:00:04.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the handlers before changing them."},
                {
                    "type": "toolCall",
                    "id": "c1",
                    "name": "read",
                    "arguments": {"path": "api/items.py"},
                },
            ],
            "usage": {"input": 900, "output": 120},
            "stopReason": "toolUse",
        },
    },
    {
        "type": "message",
        "id": "a4",
        "parentId": "a3",
        "timestamp": "2026-09-21T12:00:04.300Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "read",
            "content": [{"type": "text", "text": "def list_items(db): ..."}],
            "isError": False,
        },
    },
]
# What a process child printed: SGR colours, a \r progress bar redrawn in place.
TERMINAL_LOG = (
    b"\x1b[1;32m==>\x1b[0m building \x1b[36mapi\x1b[0m\n"
    b"progress  10%\rprogress  55%\rprogress 100%\n"
    b"\x1b[31merror:\x1b[0m 1 test failed (test_items_page)\n"
    b"\x1b[33mwarning:\x1b[0m retrying once\n"
)


def write_run_files(run_dir: Path) -> Path:
    """worker-0's (n2) session file and terminal log under a run dir; returns run_dir."""
    (run_dir / "sessions").mkdir(parents=True, exist_ok=True)
    (run_dir / "terminal").mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(entry) for entry in SESSION_LINES]
    (run_dir / "sessions" / "n2.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (run_dir / "terminal" / "n2.log").write_bytes(TERMINAL_LOG)
    return run_dir


def canned_model(*, interrupted: bool = False) -> LegionModel:
    """Twelve nodes, every row kind the tree draws. worker-0 (n2) is a process child
    whose session file is `sessions/n2.jsonl` relative to the run dir (see
    `write_run_files`). All are simulated but scout-1, a pi agent."""
    model = LegionModel(RUN_ID, "main", started_at=NOW - 900, clock=fixed_clock)
    S = NodeStatus
    rows: list[tuple[Node, SessionProgress]] = [
        (
            _node("n0", None, "root", "root", "root", S.RUNNING, age=900),
            _progress(4200, 60, tools=[("wait", 95)]),
        ),
        (
            _node(
                "n1",
                "n0",
                "lead-api",
                "root/lead-api",
                "centurion",
                S.RUNNING,
                age=840,
                phase="implementing",
            ),
            _progress(9100, 110),
        ),
        (
            replace(
                _node(
                    "n2",
                    "n1",
                    "worker-0",
                    "root/lead-api/worker-0",
                    "worker",
                    S.RUNNING,
                    age=600,
                    backend="process",
                    pid=4711,
                ),
                session_file="sessions/n2.jsonl",
            ),
            _progress(12800, 140, tools=[("read", 12)]),
        ),
        (
            _node("n3", "n1", "worker-1", "root/lead-api/worker-1", "worker", S.RUNNING, age=590),
            _progress(8800, 120, tools=[("bash", 451)]),
        ),
        (
            _node(
                "n4",
                "n1",
                "scout-0",
                "root/lead-api/scout-0",
                "scout",
                S.SETTLED,
                age=700,
                ended_ago=400,
                verdict={"ok": True, "reason": "routes mapped"},
            ),
            _progress(3100, 40),
        ),
        (
            _node(
                "n5",
                "n1",
                "worker-2",
                "root/lead-api/worker-2",
                "worker",
                S.FAILED,
                age=650,
                ended_ago=200,
                verdict={"ok": False, "reason": "tests red"},
            ),
            _progress(5300, 70),
        ),
        (
            _node(
                "n6",
                "n0",
                "lead-ui",
                "root/lead-ui",
                "centurion",
                S.RUNNING,
                age=820,
                phase="reviewing",
            ),
            _progress(7000, 95),
        ),
        (
            _node("n7", "n6", "worker-0", "root/lead-ui/worker-0", "worker", S.BLOCKED, age=500),
            _progress(2300, 35),
        ),
        (
            _node("n8", "n6", "worker-1", "root/lead-ui/worker-1", "worker", S.STARTING, age=3),
            _progress(0, 0),
        ),
        (
            _node(
                "n9",
                "n6",
                "scout-0",
                "root/lead-ui/scout-0",
                "scout",
                S.RETIRED,
                age=480,
                ended_ago=300,
            ),
            _progress(1200, 20),
        ),
        (
            _node("n10", "n6", "worker-2", "root/lead-ui/worker-2", "worker", S.RUNNING, age=300),
            _progress(900, 15, unreadable="EACCES"),
        ),
        (
            _node(
                "n11",
                "n0",
                "scout-1",
                "root/scout-1",
                "scout",
                S.SETTLED,
                age=880,
                ended_ago=700,
                verdict={"ok": True, "reason": "repo surveyed"},
                # The one real agent: its row carries no `sim` marker, the others do.
                kind="pi",
                backend="pi-rpc",
            ),
            _progress(2600, 30),
        ),
    ]
    for node, progress in rows:
        model.upsert(node)
        model.set_progress(node.id, progress)
    model.add_event(Event(1, "n2", EventType.NODE_LAUNCHED, {"pid": 4711}, NOW - 600))
    model.set_mail(
        "n2",
        MailboxStats(pending=1, accepted=0, delivered=2, bounced=0, obsolete=0),
        [
            Message(
                7,
                "n1",
                "n2",
                MailKind.HANDOFF,
                Urgency.NORMAL,
                "contract",
                "see contract.md",
                MailState.DELIVERED,
                NOW - 500,
                NOW - 520,
            )
        ],
    )
    if interrupted:
        model.mark_interrupted("n9")
    return model


FANOUT = "fix-login"  # the fan-out `fanout_model` adds under the root


def fanout_model() -> LegionModel:
    """The canned legion, and under its root one fan-out of three kinds at one task:
    pi still working, Claude Code settled with its checks passing, Codex settled with
    them failing after its retries."""
    model = canned_model()
    task = "Fix the login redirect; keep the tests green."
    attempts = [
        ("a1", "pi", "pi-rpc", S_RUN, None, None),
        ("a2", "claude", "claude-stream", NodeStatus.SETTLED, {"ok": True, "reason": "fixed"},
         {"state": "pass"}),
        ("a3", "codex", "codex-app-server", NodeStatus.SETTLED,
         {"ok": True, "reason": "done"},
         {"state": "fail", "summary": "`make test` exit 2", "exhausted": True, "retries": 2}),
    ]  # fmt: skip
    for i, (nid, kind, backend, status, verdict, checks) in enumerate(attempts, start=1):
        name = f"{FANOUT}.{kind}-{i}"
        node = replace(
            _node(nid, "n0", name, f"root/{name}", "worker", status, age=400 - i * 10,
                  ended_ago=0 if status is S_RUN else 100 - i * 10, verdict=verdict,
                  kind=kind, backend=backend),
            task=task, attempt_group=FANOUT,
        )  # fmt: skip
        model.upsert(node)
        model.set_progress(nid, _progress(1000 * i, 20 + i, tools=[("bash", 30)]
                                          if status is S_RUN else None))  # fmt: skip
        if checks is not None:
            model.add_event(Event(100 + i, nid, EventType.NODE_SETTLED, {}, NOW - 120 + i))
            model.add_event(Event(110 + i, nid, EventType.CHECKS, checks, NOW - 60 + i))
    return model


def _review(branch: str, files: list[tuple[str, int, int]], diff: str,
            commits: int = 0) -> Review:  # fmt: skip
    return Review(
        branch=branch, head_sha="abc1234def", base_sha="0000000aaa",
        commits=tuple((f"c{i}abcd", "Fix the login redirect") for i in range(commits)),
        files=tuple(FileChange("M", path, added, removed) for path, added, removed in files),
        diff=diff, truncated=False, uncommitted=commits == 0,
    )  # fmt: skip


_REDIRECT = """diff --git a/app/login.py b/app/login.py
index 1111111..2222222 100644
--- a/app/login.py
+++ b/app/login.py
@@ -10,4 +10,{n} @@ def login(request):
     user = authenticate(request)
-    return redirect("/")
+    target = request.args.get("next") or "/"
{extra}+    return redirect(target)
"""
_TEST = """diff --git a/tests/test_login.py b/tests/test_login.py
index 3333333..4444444 100644
--- a/tests/test_login.py
+++ b/tests/test_login.py
@@ -1,2 +1,5 @@
 def test_login():
     assert login_ok()
+
+def test_next():
+    assert redirects_to("/next")
"""


def canned_attempts() -> list[Attempt]:
    """What `fanout.compare` reads of `fanout_model`'s three attempts, without git: pi's
    change still uncommitted, Claude's small and passing, Codex's larger and failing."""
    safe = '+    if not target.startswith("/"):\n+        target = "/"\n'
    return [
        Attempt("a1", "pi-1", f"root/{FANOUT}.pi-1", "pi", "gpt-5", "running", "no verdict",
                "no checks", False, False,
                _review(f"legion/{FANOUT}.pi-1-aa11bb", [("app/login.py", 2, 1)],
                        _REDIRECT.format(n=5, extra="")),
                None, 4200, 0.021, "$0.021", 390.0),
        Attempt("a2", "claude-2", f"root/{FANOUT}.claude-2", "claude", "claude-sonnet-4-5",
                "settled", "✓ fixed", "✓ checks", True, True,
                _review(f"legion/{FANOUT}.claude-2-cc22dd", [("app/login.py", 4, 1)],
                        _REDIRECT.format(n=7, extra=safe), commits=1),
                None, 6800, 0.054, "$0.054", 300.0),
        Attempt("a3", "codex-3", f"root/{FANOUT}.codex-3", "codex", "gpt-5-codex", "settled",
                "✓ done", "✗ checks after 2 retries", False, True,
                _review(f"legion/{FANOUT}.codex-3-ee33ff",
                        [("app/login.py", 2, 1), ("tests/test_login.py", 3, 0)],
                        _REDIRECT.format(n=5, extra="") + _TEST),
                None, 9100, 0.048, "~$0.048", 280.0),
    ]  # fmt: skip


def big_model(total: int, live: int = 50) -> LegionModel:
    """`total` nodes: a root, a few centurions, workers spread under them. The first
    `live` nodes (root and centurions included) run with a tool in flight and a rate
    series; the rest have settled with a ✓ verdict."""
    model = LegionModel(RUN_ID, "bench", started_at=NOW - 900, clock=fixed_clock)
    leads = max(1, min(8, total // 25))
    made = 0

    def add(nid: str, parent: str | None, name: str, path: str, role: Role) -> None:
        nonlocal made
        running = made < live
        model.upsert(_node(
            nid, parent, name, path, role, S_RUN if running else NodeStatus.SETTLED,
            age=800 - made % 300, ended_ago=0 if running else 60 + made % 200,
            phase="implementing" if role == "centurion" else None,
            verdict=None if running else {"ok": True, "reason": "done"},
        ))
        model.set_progress(nid, _progress(
            2000 + (made * 7919) % 9000, 30 + made % 40,
            tools=[("bash", 5 + made % 50)] if running else None,
        ))
        made += 1

    add("b0", None, "root", "root", "root")
    lead_ids = [f"b{i + 1}" for i in range(min(leads, total - 1))]
    for i, nid in enumerate(lead_ids):
        add(nid, "b0", f"lead-{i}", f"root/lead-{i}", "centurion")
    i = 0
    while made < total:
        parent = lead_ids[i % len(lead_ids)]
        name = f"worker-{i // len(lead_ids)}"
        add(f"b{made}", parent, name, f"{parent}/{name}", "worker")
        i += 1
    return model


S_RUN = NodeStatus.RUNNING


# What the socket's handlers take for a field a caller leaves out (server_ops).
_OP_DEFAULTS: dict[str, dict[str, bool | str]] = {
    "stop": {"force": False}, "abort": {"keep_queue": False}, "steer": {}, "resume": {}
}


@dataclass
class FakeOps:
    """A faithful stand-in for the supervisor's Operations: it changes the model the way
    the supervisor would (stop retires the subtree, children first) and returns the same
    receipts; it records every call so tests can assert what was (not) done."""

    model: LegionModel
    calls: list[tuple[str, str, dict[str, object]]] = field(default_factory=list)
    fail_with: OpError | None = None
    workspaces: dict[str, Workspace] = field(default_factory=dict)  # node id → its worktree
    read_only: bool = False

    def _live_subtree(self, node_id: str) -> list[str]:
        ids = [v.node.id for v, _ in self.model.walk(node_id)]
        return [i for i in reversed(ids) if self.model.nodes[i].node.live]

    async def act(self, verb: ControlVerb, node_id: str, **fields: bool | str) -> str:
        """The socket op `verb`, recorded with its fields' defaults filled in (as the
        supervisor's handler reads them)."""
        self.calls.append((verb, node_id, _OP_DEFAULTS[verb] | fields))
        if verb == "stop":
            return await self._stop(node_id)
        if verb == "abort":
            return self._abort(node_id)
        if verb == "steer":
            return receipts.steered(self.model.nodes[node_id].node.name, "queued")
        return self._resume(node_id)

    async def _stop(self, node_id: str) -> str:
        if self.fail_with is not None:
            raise self.fail_with
        view = self.model.nodes.get(node_id)
        if view is None:
            raise OpError("UNKNOWN_NODE", f"no node {node_id}")
        for child in [*self._live_subtree(node_id), node_id]:
            cv = self.model.nodes[child]
            if cv.node.live:
                self.model.upsert(
                    replace(cv.node, status=NodeStatus.RETIRED, updated_at=self.model.clock())
                )
        return receipts.stopped(view.node.name)

    def _abort(self, node_id: str) -> str:
        view = self.model.nodes[node_id]
        if not view.progress.in_flight:
            return receipts.nothing_to_abort(view.node.name)
        return receipts.aborted(view.node.name)

    def _resume(self, node_id: str) -> str:
        view = self.model.nodes[node_id]
        self.model.upsert(replace(view.node, status=NodeStatus.RUNNING))
        return receipts.resumed(view.node.name, view.node.session_file)

    async def spawn(self, parent_id: str, requests: Sequence[ChildRequest]) -> str:
        for request in requests:
            self.calls.append(("spawn", parent_id, {"request": request}))
        if self.fail_with is not None:
            raise self.fail_with
        return "\n".join(f"Spawned {r.name or r.role}" for r in requests)

    async def role_cards(self) -> CardSet:
        return load_cards(Path("/nonexistent"))  # the bundled cards only

    def workspace(self, node_id: str) -> Workspace | None:
        return self.workspaces.get(node_id)


# ----- the real ANSI a terminal would receive -------------------------------------------


class CaptureDriver(HeadlessDriver):
    """The headless driver, except that Textual believes it is a terminal: `_display`
    then renders every frame to ANSI and `write`s it here, byte for byte."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.chunks: list[str] = []

    @property
    def is_headless(self) -> bool:
        return False

    def write(self, data: str) -> None:
        self.chunks.append(data)


def capture(app: App[Any]) -> None:
    """Make `app` write its real ANSI output into a CaptureDriver (before run_test)."""
    app.driver_class = CaptureDriver
    # A real terminal says COLORTERM=truecolor; the test environment may say nothing, and
    # Rich would then quantise the theme to 16 colours. Pin what the terminal supports.
    app.console._color_system = ColorSystem.TRUECOLOR


def ansi_output(app: App[Any]) -> str:
    driver = app._driver
    assert isinstance(driver, CaptureDriver), "call capture(app) before run_test"
    return "".join(driver.chunks)


def terminal_screen(app: App[Any]) -> pyte.Screen:
    """Feed everything the app wrote into a pyte terminal of the app's size."""
    width, height = app.size
    screen = pyte.Screen(width, height)
    pyte.Stream(screen).feed(ansi_output(app))
    return screen


def screen_lines(screen: pyte.Screen) -> list[str]:
    return [line.rstrip() for line in screen.display]


def run_canned_in_terminal(theme: str, floor: bool = True) -> None:
    """The canned dashboard on the real terminal driver (used by the pty test)."""
    model = canned_model()
    from legion_tui.dashboard.app import make_app

    make_app(model, FakeOps(model), clock=fixed_clock, timers=False, theme=theme,
             floor=floor).run()


if __name__ == "__main__":
    import sys

    run_canned_in_terminal(sys.argv[1], floor="--no-floor" not in sys.argv)


def canned_app(model: LegionModel | None = None, **options: Any) -> LegionApp:
    """The dashboard over `model` (default: the canned legion) with a fixed clock and no
    timers — what most dashboard tests start from."""
    from legion_tui.dashboard.app import make_app

    model = model or canned_model()
    return make_app(model, FakeOps(model), clock=fixed_clock, timers=False, **options)
