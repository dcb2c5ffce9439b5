"""Hosting commands: `legion run` (headless), `legion demo`, `legion tui`.

Each hosts a `Supervisor` in its own asyncio loop; the dashboard (`legion tui`, `legion
demo` without `--headless`) shares that loop. SIGTERM and SIGHUP end the host the same
way a normal exit does — a pause: live nodes are retired as `session-shutdown` and can be
resumed by reopening the same session (SPEC §6.6).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import resource
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from legion_tui.commands import Command
from legion_tui.commands.arg_types import (
    add_fanout_options,
    add_task_options,
    child_name,
    fanout_kinds,
    session_name,
    task_of,
)
from legion_tui.commands.fanout import PICKS, fanout_requests, group_done, report_fanout
from legion_tui.commands.invocation import legion_command
from legion_tui.host_exit import ExitDeadline, end_lingering_threads
from legion_tui.runs.presence import FolderPresence
from legion_tui.timeouts import within

if TYPE_CHECKING:
    from legion_tui.supervisor.core import Supervisor

HOST_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
_T = TypeVar("_T")


def _install_signals(
    deadline: ExitDeadline,
    on_signal: Callable[[], None],
    at_once: Callable[[], None] | None = None,
) -> Callable[[], None]:
    """Route SIGTERM/SIGHUP/SIGINT to `on_signal`, run on the loop; returns the undo.
    From the first signal on, the host has `deadline`'s bound to pause and exit.

    Plain `signal.signal` handlers rather than `loop.add_signal_handler`: asyncio's run
    only once the loop is back in its selector, and a loop blocked elsewhere (on a
    terminal that stopped reading) never got there — SIGTERM looked ignored. Python runs
    these in the main thread even while it waits on a lock; `at_once` runs right there,
    for what must not wait for the loop (the dashboard's bound on that wait)."""
    loop = asyncio.get_running_loop()

    def handler(signum: int, _frame: FrameType | None) -> None:
        deadline.arm(f"{signal.Signals(signum).name} arrived")
        if at_once is not None:
            at_once()
        with contextlib.suppress(RuntimeError):  # the loop has closed: the host is ending
            loop.call_soon_threadsafe(on_signal)

    previous = {sig: signal.signal(sig, handler) for sig in HOST_SIGNALS}

    def undo() -> None:
        for sig, old in previous.items():
            signal.signal(sig, signal.SIG_DFL if old is None else old)

    return undo


def raise_fd_limit() -> tuple[int, int]:
    """Lift the soft RLIMIT_NOFILE to the hard one; returns the (soft, hard) in force.

    A host watches one session file and one pipe or two per agent; a 1000-node demo under
    the common soft default of 1024 would meet EMFILE. Raising the soft limit up to the
    hard one needs no privilege; failing to (a sandbox forbids it) leaves it as it was.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


async def close_host(sup: Supervisor, stop_demos: list[Callable[[], Awaitable[None]]]) -> None:
    """Stop the demos, then close the supervisor — always, even when a demo stop fails.

    A failing demo stop (EMFILE, a dead process) must not skip `sup.close()`: the session
    watcher's thread would stay alive and the process would hang instead of exiting.
    """
    try:
        for stop in stop_demos:
            try:
                await stop()
            except Exception as exc:  # reported; the supervisor still closes
                print(f"legion: stopping the demo failed ({exc})", file=sys.stderr)
    finally:
        await sup.close()


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


# ----- legion run ------------------------------------------------------------------------
def _run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("role", help="role card of the top agent (worker, scout, centurion, …)")
    add_task_options(p, "what the top agent should do")
    p.add_argument("--name", type=child_name, help="the top agent's name (default: <role>-N)")
    p.add_argument("--phases", metavar="FILE", help="declared phase machine (centurion only)")
    add_kind_option(p)
    p.add_argument(
        "--session",
        metavar="NAME",
        type=session_name,
        help="session name (default: a new `run-<time>` session)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for simulated agents")
    p.add_argument("--speed", type=float, default=1.0, help="time scale for simulated agents")
    p.add_argument("--json", action="store_true", help="print the final status as JSON")
    add_fanout_options(p)
    p.add_argument(
        "--pick", choices=PICKS,
        help="with --fanout: land the attempt whose checks pass with the smallest change "
        "(ties: the lowest cost) in this checkout; exit 1 when none passed",
    )  # fmt: skip
    add_cluster_option(p)


def add_cluster_option(p: argparse.ArgumentParser) -> None:
    """`--cluster` for the hosting verbs: every agent of the run on that Ray cluster."""
    p.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="run the agents on a Ray cluster (auto, or ray://HOST:PORT; needs "
        "legion-tui[ray]); default: [cluster] in .legion/settings.toml, else this machine",
    )
    p.add_argument("--budget-usd", type=float, metavar="USD",
                   help="stop the run's agent and its subtree once they spend more than this")


def add_kind_option(p: argparse.ArgumentParser) -> None:
    """`--kind` for the launching verbs (`legion run`, `legion spawn`)."""
    from legion_tui.model import CARD_KINDS

    p.add_argument(
        "--kind",
        choices=CARD_KINDS,
        help="run the card as this kind for this launch (sim: the simulated agent, which "
        "does no real work; auto: the agent [agent] in .legion/settings.toml names, else "
        "the first installed)",
    )


def _verdict_text(verdict: Any, simulated: bool = False) -> str:
    if not isinstance(verdict, dict):
        return "no verdict" + (" (simulated)" if simulated else "")
    mark = "✓ ok" if verdict.get("ok") else "✗ not ok"
    # A simulated verdict must never read as real work done in this repository.
    if simulated:
        mark += " (simulated)"
    return f"{mark} — {verdict.get('reason') or ''}".rstrip(" —")


def _end_text(entry: Mapping[str, Any]) -> str:
    """What `legion run` says of a node at the end: its verdict; without one, why it
    failed and a command's last terminal line — an exec command's report, where the
    reason of a failure usually is (`legion spawn: over budget: …`), which the run
    otherwise left in its terminal log."""
    if isinstance(entry["verdict"], dict) or entry["status"] not in ("settled", "failed"):
        return _verdict_text(entry["verdict"], entry["simulated"])
    failed = entry["status"] == "failed" and entry["error"]
    said = entry["error"] if failed else _verdict_text(None, entry["simulated"])
    line = entry.get("terminal")
    return f"{said} — its last line: {line}" if line else said


SIMULATED_NOTE = (
    "note: simulated — {n} agent(s) ran as the simulated agent (kind sim): their edits, "
    "cost and verdicts are pretend, and they did no work in this repository."
)


def no_agent_refusal(
    project: Path, names: Sequence[str] | None, requested: str | None, what: str | None = None
) -> str | None:
    """Why an `auto` launch of these cards (None: every card) cannot start, or None.

    Asked before hosting, so a launch refused for want of an agent leaves nothing behind
    — not even an empty run. A card that is missing or broken is left to the supervisor,
    which refuses it with the card's own problems."""
    from legion_tui.agents.cards import CardError, load_cards
    from legion_tui.agents.resolve import NoAgent, resolve_launch
    from legion_tui.settings import load_settings

    cards = load_cards(project)
    chosen = []
    for name in names if names is not None else cards.names:
        try:
            chosen.append(cards.get(name))
        except CardError:
            continue
    auto = [card for card in chosen if (requested or card.kind) == "auto"]
    if not auto:
        return None
    settings = load_settings(project)
    label = what or f"'{auto[0].name}' (kind: auto)"
    try:
        resolve_launch(
            "auto",
            (),
            requested=None,
            agent=settings.settings.agent,
            problems=settings.problems,
            what=label,
            cwd=project,
        )
    except NoAgent as err:
        return str(err)
    return None


def program_missing(project: Path, role: str, requested: str | None) -> str | None:
    """Why the card's program cannot start (not on PATH), or None — asked before the host
    exists, as the host's own admission asks it: a refused `legion run` leaves no run
    folder, no session pointer and no ledger row."""
    from legion_tui.agents.cards import load_cards
    from legion_tui.agents.resolve import NoAgent, resolve_launch
    from legion_tui.settings import load_settings
    from legion_tui.supervisor.life.admission import program_refusal

    card = load_cards(project).get(role)
    settings = load_settings(project)
    try:
        launch = resolve_launch(card.kind, card.command, requested=requested,
                                agent=settings.settings.agent, problems=settings.problems,
                                what=f"'{card.name}'", cwd=project)  # fmt: skip
    except NoAgent:
        return None  # no_agent_refusal says so
    return None if launch.kind == "sim" else program_refusal(card, launch, project)


async def _run_headless(args: argparse.Namespace, deadline: ExitDeadline) -> int:
    from legion_tui.agents.cards import CardError, load_cards
    from legion_tui.supervisor.core import Supervisor
    from legion_tui.wire.names import ROOT_ID, OpError
    from legion_tui.wire.spawn_request import ChildRequest

    # Everything that can refuse is asked before the host exists: a refused run leaves no
    # session, no run folder and no ledger behind.
    try:
        task = task_of(args)
        load_cards(Path.cwd()).get(args.role)
        attempts = fanout_kinds(args)
        if args.pick is not None and attempts is None:
            raise ValueError("--pick chooses among the attempts of a fan-out: add --fanout N "
                             "or --kinds K,K")  # fmt: skip
        if attempts is not None and args.phases:
            raise ValueError("a fan-out's attempts are single agents: --phases is for a lead")
        if attempts is not None and args.json:
            raise ValueError("--json reports one agent's run; a fan-out prints its table "
                             "(`legion status --json --session S` has every attempt)")  # fmt: skip
    except (ValueError, CardError) as err:
        print(f"legion run: {err}", file=sys.stderr)
        return 1
    from legion_tui.costs import is_usd

    if args.budget_usd is not None and not is_usd(args.budget_usd):
        print(f"legion run: --budget-usd must be an amount of dollars > 0, got "
              f"{args.budget_usd}", file=sys.stderr)  # fmt: skip
        return 1
    refusal = None
    kinds = [spec.partition(":")[0] if spec else None for spec in attempts or [args.kind]]
    for kind in dict.fromkeys(kinds):  # each kind once, in order
        refusal = refusal or no_agent_refusal(Path.cwd(), [args.role], kind) or (
            program_missing(Path.cwd(), args.role, kind))
    if refusal is not None:
        print(f"legion run: {refusal}", file=sys.stderr)
        return 1
    phases: Any = None
    if args.phases:
        from legion_tui.phases import MachineError, load_machine_file

        try:
            phases = load_machine_file(args.phases).to_dict()
        except MachineError as err:
            print(f"legion run: {err}", file=sys.stderr)
            return 1
    sup = Supervisor(
        Path.cwd(),
        session=args.session or f"run-{_stamp()}",
        task=task,
        seed=args.seed,
        speed=args.speed,
        cluster=args.cluster,
    )
    interrupted = asyncio.Event()
    await sup.start()
    undo = _install_signals(deadline, interrupted.set)
    presence = FolderPresence(sup.run.dir)
    gone = watch_run_folder(presence, deadline, interrupted.set)

    async def run() -> int:
        requests = [ChildRequest(args.role, task, name=args.name, phases=phases, kind=args.kind,
                                 budget_usd=args.budget_usd)]  # fmt: skip
        if attempts is not None:
            requests = fanout_requests(args, task, attempts)
        try:
            nodes = await sup.launcher.spawn(ROOT_ID, requests)
        except OpError as err:
            print(f"legion run: {err.message}", file=sys.stderr)
            return 1
        top = nodes[0].id
        if attempts is not None:  # the whole group: each attempt ended, its checks final
            group, checks = group_done(sup, nodes[0])
            await _first_of(checks, interrupted)
        else:
            await _first_of(sup.queries.wait_idle_tree([top]), interrupted)
        if presence.why_gone() is not None:  # no report: its ledger went with it
            return 1
        await sup.stops.idle()  # a `stop all` that ended the run has stopped everyone
        if attempts is not None and not interrupted.is_set():
            return await report_fanout(sup, args.pick, group)
        doc = sup.queries.status(ROOT_ID)
        where, work = await _where_the_work_is(sup, top)
        if args.json:
            print(json.dumps({**doc, "work": work or None}, ensure_ascii=False))
        else:
            print(sup.queries.tree_text(ROOT_ID))
            entries = doc["nodes"][1:]
            for entry in entries:
                print(f"{entry['path']}: {entry['status']} · {_end_text(entry)}")
            simulated = sum(1 for entry in entries if entry["simulated"])
            if simulated:
                print(SIMULATED_NOTE.format(n=simulated))
            for line in where:
                print(line)
        if interrupted.is_set():
            print(
                "legion run: interrupted — live agents paused (resume them with "
                f"`{legion_command()} tui --session {sup.model.session_name}`)",
                file=sys.stderr,
            )
            return 1
        verdict = next(e["verdict"] for e in doc["nodes"] if e["id"] == top)
        return 0 if isinstance(verdict, dict) and verdict.get("ok") is True else 1

    async def close() -> None:
        gone.cancel()
        undo()
        await sup.close()

    code = await hosted(deadline.verb, presence, run(), close)
    return 1 if code is None else code


async def _first_of(work: Awaitable[object], interrupted: asyncio.Event) -> None:
    """Until `work` is done or the host is interrupted (a signal, its folder gone)."""
    done = asyncio.ensure_future(work)
    stop = asyncio.create_task(interrupted.wait())
    await asyncio.wait({done, stop}, return_when=asyncio.FIRST_COMPLETED)
    for waiter in (done, stop):
        waiter.cancel()


def watch_run_folder(
    presence: FolderPresence, deadline: ExitDeadline, end: Callable[[], None]
) -> asyncio.Task[str]:
    """Once the run's folder is removed or replaced, `end` the host, which then has the
    deadline's bound to pause what it can (legion_tui.runs.presence)."""

    def ended(task: asyncio.Task[str]) -> None:
        if not task.cancelled():
            deadline.arm(task.result())
            end()

    task = asyncio.create_task(presence.gone(), name="run-folder-watch")
    task.add_done_callback(ended)
    return task


async def hosted(
    verb: str,
    presence: FolderPresence,
    body: Awaitable[_T],
    close: Callable[[], Awaitable[None]],
) -> _T | None:
    """Run a host's body, then `close` it, always; None once its run folder went (said).

    The folder is asked after the close, whatever ended the body: a removed folder fails
    a ledger write, a spawn or an output file, maybe in the second before the watch
    looks, and it is the folder that must be named, not the symptom."""
    failed: Exception | None = None
    result: _T | None = None
    try:
        result = await body
    except Exception as err:  # raised again below, unless the folder going explains it
        failed = err
    finally:
        try:
            await close()
        finally:
            presence.close()
    why = presence.why_gone()
    if why is not None:
        print(f"legion {verb}: {why}: its agents were stopped and the host ended",
              file=sys.stderr)  # fmt: skip
        return None
    if failed is not None:
        raise failed
    return result


async def _where_the_work_is(sup: Supervisor, top: str) -> tuple[list[str], dict[str, Any]]:
    """The top agent's worktree, branch, commits and uncommitted files, and the commands
    that review, commit and land it (issue 28: headless, the work must not be lost from
    view); nothing when it worked in the project itself."""
    tree = sup.teams.worktree_of(top)
    if tree is None:
        return [], {}
    from legion_tui.commands.work import handle_of, work_summary

    nodes = [view.node for view in sup.model.nodes.values()]
    return await work_summary(tree, handle_of(sup.names.node(top), nodes), sup.model.session_name)


# ----- legion demo -----------------------------------------------------------------------
def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nodes", type=int, default=20, help="how many agents (default ≈20)")
    p.add_argument("--speed", type=float, default=1.0, help="time scale of the simulation")
    p.add_argument("--seed", type=int, default=7, help="seed of the simulated legion")
    p.add_argument("--theme", default="legion-dark", help="legion-dark, legion-light, legion-ansi")
    p.add_argument("--headless", action="store_true", help="no screen: run and print a summary")
    p.add_argument(
        "--duration", type=float, default=20.0, metavar="S", help="headless: run for S seconds"
    )
    p.add_argument("--json", action="store_true", help="headless: print the summary as JSON")


def _demo_supervisor(args: argparse.Namespace) -> Supervisor:
    from legion_tui.demo import demo_budgets
    from legion_tui.supervisor.core import Supervisor

    return Supervisor(
        Path.cwd(),
        session=f"demo-{_stamp()}",
        task="the demo legion",
        budgets=demo_budgets(args.nodes),
        seed=args.seed,
        speed=args.speed,
        stop_grace=1.0,
        # Whatever is spawned into the demo's run (`legion spawn` from a shell) is part
        # of the simulation too: the demo promises never to touch the user's repository.
        default_kind="sim",
    )


async def _demo_headless(args: argparse.Namespace, deadline: ExitDeadline) -> int:
    from legion_tui.demo import Demo, start_demo, stop_demo, summary, summary_text

    sup = _demo_supervisor(args)
    stop = asyncio.Event()
    await sup.start()
    undo = _install_signals(deadline, stop.set)
    presence = FolderPresence(sup.run.dir)
    gone = watch_run_folder(presence, deadline, stop.set)
    started = time.monotonic()
    demos: list[Demo] = []

    async def run() -> dict[str, Any]:
        demos.append(await start_demo(sup, args.nodes, args.seed, args.speed))
        with contextlib.suppress(TimeoutError):  # the duration elapsing is the normal end
            await within(stop.wait(), args.duration)
        return summary(sup, demos[0], time.monotonic() - started)

    async def close() -> None:
        gone.cancel()
        undo()
        await close_host(sup, [functools.partial(stop_demo, demo) for demo in demos])

    report = await hosted(deadline.verb, presence, run(), close)
    if report is None:
        return 1
    print(json.dumps(report) if args.json else summary_text(report))
    return 0


async def _host_dashboard(
    sup: Supervisor, theme: str, demo_nodes: int | None, seed: int, deadline: ExitDeadline
) -> int:
    try:
        from legion_tui.dashboard.app import LegionApp
        from legion_tui.dashboard.running import run_dashboard_async
    except ImportError as err:
        print(f"legion: the dashboard is not available ({err}); use --headless", file=sys.stderr)
        return 2
    from legion_tui.demo import Demo, stop_demo
    from legion_tui.supervisor.root_ops import RootOperations

    await sup.start()
    demos: list[Demo] = []
    app: LegionApp | None = None
    signalled = False

    # The handlers are in place from here to the end of the pause: a signal before the
    # dashboard runs ends it before it takes the terminal, one during the pause (a
    # second SIGTERM, the terminal's SIGHUP) no longer cuts the pause short.
    def on_signal() -> None:
        nonlocal signalled
        signalled = True
        if app is not None:
            app.exit()

    def at_once() -> None:
        if app is not None:
            app.host_signalled()

    def app_ready(made: LegionApp) -> None:
        nonlocal app
        app = made
        if signalled:
            made.exit()

    async def on_start(_app: LegionApp) -> None:
        if demo_nodes is not None:
            from legion_tui.demo import start_demo

            demos.append(await start_demo(sup, demo_nodes, seed, sup.speed))

    undo = _install_signals(deadline, on_signal, at_once)
    presence = FolderPresence(sup.run.dir)
    gone = watch_run_folder(presence, deadline, on_signal)

    async def close() -> None:
        gone.cancel()
        try:
            await close_host(sup, [functools.partial(stop_demo, demo) for demo in demos])
        finally:
            undo()

    dashboard = run_dashboard_async(
        sup.model,
        RootOperations(sup),
        theme=theme,
        run_dir=sup.run.dir,
        on_start=on_start,
        app_ready=app_ready,
    )
    code = await hosted(deadline.verb, presence, dashboard, close)
    # A dashboard that died of an error (Textual printed it) is a failed run, even though
    # its agents were paused like on any exit.
    return 1 if code is None or code else 0


def _demo(args: argparse.Namespace) -> int:
    if args.nodes < 1:
        print("legion demo: --nodes must be at least 1", file=sys.stderr)
        return 2
    if args.headless:
        return _hosting("demo", lambda deadline: asyncio.run(_demo_headless(args, deadline)))
    sup = _demo_supervisor(args)
    return _hosting(
        "demo",
        lambda deadline: asyncio.run(
            _host_dashboard(sup, args.theme, args.nodes, args.seed, deadline)
        ),
    )


# ----- legion tui ------------------------------------------------------------------------
def _tui_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--session",
        metavar="NAME",
        type=session_name,
        help="session name (main; --view: the newest live run)",
    )
    p.add_argument("--theme", default=None, help="legion-dark, legion-light, legion-ansi")
    add_cluster_option(p)
    p.add_argument(
        "--view",
        action="store_true",
        help="a second dashboard on a run another process hosts: reads its ledger and "
        "session files, sends every operation to its socket",
    )
    p.add_argument(
        "--read-only",
        action="store_true",
        help="with --view: refuse every operation (what `legion serve` runs without its token)",
    )


def _tui(args: argparse.Namespace) -> int:
    from legion_tui.settings import load_settings

    theme = args.theme or load_settings(Path.cwd()).settings.theme
    if args.view or args.read_only:
        from legion_tui.dashboard.view import run_view

        # Hosts nothing: no supervisor to start, so none of `_hosting`'s refusals apply.
        raise_fd_limit()
        return asyncio.run(run_view(Path.cwd(), args.session, theme, control=not args.read_only))
    args.session = args.session or "main"
    from legion_tui.runs.catalog import find_session_run
    from legion_tui.runs.folder import SessionNameError
    from legion_tui.runs.host_lock import SessionBusy
    from legion_tui.runs.socket_link import UnsafeSocketDir
    from legion_tui.supervisor.core import Supervisor

    try:
        # A new session with no agent for the `auto` cards could only show an empty
        # legion whose every spawn is refused: say so now. A session that exists opens
        # (its nodes recorded the kinds they ran as; resume needs no resolution).
        if find_session_run(Path.cwd(), args.session) is None:
            refusal = no_agent_refusal(Path.cwd(), None, None, "the kind: auto role cards")
            if refusal is not None:
                print(f"legion tui: {refusal}", file=sys.stderr)
                return 1
        sup = Supervisor(Path.cwd(), session=args.session, cluster=args.cluster)
    except (SessionBusy, SessionNameError, UnsafeSocketDir) as err:
        print(f"legion tui: {err}", file=sys.stderr)
        return 1
    return _hosting(
        "tui", lambda deadline: asyncio.run(_host_dashboard(sup, theme, None, 0, deadline))
    )


def _hosting(verb: str, host: Callable[[ExitDeadline], int]) -> int:
    """Run a host; a refused session or ledger is a clear one-line error, exit 1. Once
    told to end, it ends within a bound, and no thread left behind holds it
    (legion_tui.host_exit)."""
    from legion_tui.ledger import LedgerError
    from legion_tui.runs.folder import SessionNameError
    from legion_tui.runs.host_lock import SessionBusy
    from legion_tui.runs.socket_link import UnsafeSocketDir
    from legion_tui.supervisor.core import StartFailed

    raise_fd_limit()
    code = 1
    try:
        code = host(ExitDeadline(verb))
    except StartFailed as err:
        print(f"legion {verb}: the host could not start: {err}", file=sys.stderr)
    except (SessionBusy, SessionNameError, UnsafeSocketDir, LedgerError) as err:
        print(f"legion {verb}: {err}", file=sys.stderr)
    finally:
        end_lingering_threads(verb, code)
    return code


def _run(args: argparse.Namespace) -> int:
    return _hosting("run", lambda deadline: asyncio.run(_run_headless(args, deadline)))


COMMANDS: dict[str, Command] = {
    "run": Command(
        "Supervise one agent (and its team) headless until it settles; exit 0 iff its "
        "verdict is ok.",
        _run_args,
        _run,
    ),
    "demo": Command("The embedded simulated legion (no API key, no network).", _demo_args, _demo),
    "tui": Command(
        "The dashboard for the legion of this directory (hosts the supervisor).",
        _tui_args,
        _tui,
    ),
}
