"""`legion doctor`: check everything a legion needs before it starts, and say how to fix it.

Checks, in order: role cards (every problem, with file:line), `.legion/settings.toml`,
which agent the `kind: auto` cards resolve to (none: a problem; the simulated agent: a
warning, so a pretend setup never passes as "no problems"), each card's command on PATH, a
dry start of each distinct pi, Claude Code and Codex command (its version, and that it
answers its protocol's handshake with a model it can call — else the agent's own words;
no session is written and no model is called: `backends.dry_starts`), every run's
`run.json` and ledger, and every run's
supervisor socket (a socket file nobody listens on is a warning: a crashed host leaves
one behind, and the next `legion tui` replaces it). Exit 1 when any problem was found,
0 otherwise — warnings alone do not fail.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from legion_tui.commands import Command

if TYPE_CHECKING:  # cards pull in yaml; keep `legion --help` light
    from legion_tui.agents.cards import CardSet
    from legion_tui.supervisor.backends.dry_starts import StartProbe
    from legion_tui.supervisor.backends.pi.cli import PiVersion

Severity = Literal["problem", "warning"]

# The agents a dry start can check, and what doctor calls them.
AGENT_NAMES = {"pi": "pi", "claude": "Claude Code", "codex": "Codex"}
DRY_STARTED = frozenset(AGENT_NAMES)
FIXES = {
    "pi": "fix the card's command: (or [agent] in .legion/settings.toml) so pi starts; "
    "try it by hand with --mode rpc",
    "claude": "fix the card's command: (or [agent] in .legion/settings.toml) so Claude Code "
    "starts: an API key (ANTHROPIC_API_KEY) or `claude` /login",
    "codex": "fix the card's command: (or [agent] in .legion/settings.toml) or "
    "$CODEX_HOME/config.toml so Codex starts with a provider it has a key for",
}


@dataclass(frozen=True, slots=True)
class Finding:
    check: str  # cards | settings | path | runs | socket
    severity: Severity
    where: str  # file[:line], or the card / run it concerns
    message: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class FileProblem(Protocol):
    """`CardProblem` and `SettingsProblem`: a problem in a file the user edits."""

    @property
    def where(self) -> str: ...  # file[:line]

    @property
    def what(self) -> str: ...  # the field or key, and what is wrong with it

    @property
    def hint(self) -> str: ...  # how to fix it; "" when the check has no better advice


@dataclass(slots=True)
class Report:
    project: Path
    findings: list[Finding] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)  # one line per clean check
    # (pi | claude | codex, argv template) → the cards that run it: each dry-started once.
    agent_commands: dict[tuple[str, tuple[str, ...]], list[str]] = field(default_factory=dict)

    def probe(self, kind: str, command: tuple[str, ...], names: Iterable[str]) -> None:
        if kind in DRY_STARTED:
            self.agent_commands.setdefault((kind, command or (kind,)), []).extend(names)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "problem"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def add_problems(self, check: str, problems: Iterable[FileProblem], default_fix: str) -> None:
        """A card's or the settings file's problems, each one finding at its file:line."""
        for p in problems:
            self.findings.append(Finding(check, "problem", p.where, p.what, p.hint or default_fix))


# ----- the checks ----------------------------------------------------------------------


def check_cards(report: Report) -> None:
    from legion_tui.agents.cards import load_cards

    cards = load_cards(report.project)
    report.add_problems(
        "cards",
        cards.problems,
        "fix the card, or delete it to use the bundled card of that name",
    )
    own = [c.name for c in cards if not c.bundled]
    summary = f"role cards: {len(cards.names)} loaded ({', '.join(cards.names)})"
    if own:
        summary += f"; from .legion/agents: {', '.join(own)}"
    report.passed.append(summary)
    check_commands(report, cards)


def check_auto(report: Report, cards: CardSet) -> None:
    """What the `kind: auto` cards would run, resolved exactly as a launch resolves it."""
    from legion_tui.agents.resolve import NoAgent, agent_problems, find_program, resolve_launch
    from legion_tui.settings import SETTINGS_FILE, load_settings

    names = [c.name for c in cards if c.kind == "auto"]
    if not names:
        return
    settings = load_settings(report.project)
    if agent_problems(settings.problems):
        return  # check_settings lists them; every auto launch is refused until fixed
    what = f"the kind: auto cards ({', '.join(names)})"
    try:
        launch = resolve_launch(
            "auto",
            (),
            requested=None,
            agent=settings.settings.agent,
            what=what,
            cwd=report.project,
        )
    except NoAgent as err:
        # The launch refusal, as one finding: its first line is the problem, its hint
        # lines the fix (nothing is being spawned here, so that clause goes).
        head, *hints = str(err).splitlines()
        fix = "; ".join(" ".join(hint.split()) for hint in hints)
        report.findings.append(
            Finding("path", "problem", "", head.removesuffix(" — nothing spawned."), fix)
        )
        return
    older = settings.settings.agent
    said = [f"{key} = {value!r}" for key, value in
            (("model", older.model), ("provider", older.provider)) if value]  # fmt: skip
    if said and launch.kind != "sim":
        report.findings.append(
            Finding(
                "settings",
                "warning",
                str(SETTINGS_FILE),
                f"[agent] {', '.join(said)} apply to the default kind ({launch.kind}) only: "
                "an agent of another kind (--kind) never gets them",
                f"move them to [agent.{launch.kind}] (each kind has its own table)",
            )
        )
    if launch.kind == "sim":
        report.findings.append(
            Finding(
                "path",
                "warning",
                str(SETTINGS_FILE),
                f'{what} run the simulated agent ([agent] default = "sim"): their work, '
                "cost and verdicts are pretend",
                'set [agent] default = "pi" (or remove it) to run a real agent',
            )
        )
        return
    program = launch.command[0] if launch.command else launch.kind
    found = find_program(program, cwd=report.project, path=None) or program
    via = {"settings": "[agent] in .legion/settings.toml",
           "installed": "not on PATH: the one installed beside legion"}.get(
        launch.via, "found on PATH")  # fmt: skip
    report.passed.append(f"{what} → {launch.kind} ({found}), {via}")
    report.probe(launch.kind, launch.command, names)


def check_commands(report: Report, cards: CardSet) -> None:
    from legion_tui.agents.resolve import find_program

    check_auto(report, cards)
    for card in cards:
        if card.kind in ("sim", "auto"):
            continue
        program = card.command[0] if card.command else card.kind
        found = find_program(program, cwd=report.project, path=None)
        if found is None:
            where = card.source or card.name
            report.findings.append(
                Finding(
                    "path",
                    "problem",
                    where,
                    f"card '{card.name}' (kind {card.kind}) runs {program!r}, which is not on PATH",
                    f"install {program!r} or set command: in .legion/agents/{card.name}.md "
                    "to a program that exists",
                )
            )
        else:
            report.passed.append(f"card '{card.name}': {program} → {found}")
            report.probe(card.kind, card.command, [card.name])
    check_agent_starts(report)


def check_agent_starts(report: Report) -> None:
    """Each distinct pi, Claude Code and Codex command the cards run: its version and a
    dry start — the launch's own first step, so an unknown provider, a missing key or a
    broken install fails here, in the agent's words, not at the first spawn."""
    import asyncio

    from legion_tui.agents.installed import agent_environment
    from legion_tui.agents.placeholders import fill
    from legion_tui.agents.resolve import find_program
    from legion_tui.supervisor.backends.dry_starts import (
        claude_dry_start,
        codex_dry_start,
        pi_dry_start,
    )
    from legion_tui.supervisor.backends.pi.cli import pi_version

    starts = {"pi": pi_dry_start, "claude": claude_dry_start, "codex": codex_dry_start}

    async def probe(
        kind: str, command: tuple[str, ...]
    ) -> tuple[str, PiVersion | None, StartProbe]:
        values = {"task": "legion doctor", "task_file": os.devnull, "session_file": os.devnull,
                  "cwd": str(report.project), "name": "doctor"}  # fmt: skip
        argv = fill(command, values)
        program = find_program(argv[0], cwd=report.project, path=None) or argv[0]
        env = agent_environment(os.environ, program)
        start = starts[kind]
        version, started = await asyncio.gather(
            pi_version(program, env), start([program, *argv[1:]], env, str(report.project))
        )
        return program, version, started

    async def probe_all() -> list[tuple[str, PiVersion | None, StartProbe]]:
        return list(await asyncio.gather(*(probe(k, c) for k, c in report.agent_commands)))

    if not report.agent_commands:
        return
    for ((kind, command), names), (program, version, started) in zip(
        report.agent_commands.items(), asyncio.run(probe_all()), strict=True
    ):
        agent = AGENT_NAMES[kind]
        where = f"{kind} for {', '.join(names)}"
        shown = " ".join(command)
        text = f"{agent} {version.text if version is not None else 'version unknown'}"
        error, model = started.error, started.model
        for warning in started.warnings:
            report.findings.append(Finding("agents", "warning", where, f"{kind} said: {warning}"))
        if error is not None:
            report.findings.append(
                Finding(
                    "agents",
                    "problem",
                    where,
                    f"`{shown}` ({text}) cannot start: {error}",
                    FIXES[kind],
                )
            )
        elif model is None or model.startswith("unknown/"):
            report.findings.append(
                Finding(
                    "agents",
                    "problem",
                    where,
                    f"`{shown}` ({text}) starts but has no model to use: no provider is "
                    "configured and pi found no API key",
                    "log in with pi (/login), set an API key, or name --provider/--model "
                    "([agent] provider/model in .legion/settings.toml)",
                )
            )
        else:
            report.passed.append(f"{where}: {program} ({text}) starts; model {model}")


def check_settings(report: Report) -> None:
    from legion_tui.settings import load_settings

    result = load_settings(report.project)
    report.add_problems(
        "settings",
        result.problems,
        "fix the value or remove the line (every setting has a default)",
    )
    if result.path is None:
        report.passed.append("settings: no .legion/settings.toml (defaults)")
    elif not result.problems:
        s = result.settings
        report.passed.append(
            f"settings: maxDepth {s.max_depth}, maxChildrenPerNode {s.max_children_per_node}, "
            f"maxActiveNodes {s.max_active_nodes}, theme {s.theme}"
        )


def check_runs(report: Report) -> None:
    runs_dir = report.project / ".legion" / "runs"
    if not runs_dir.is_dir():
        return
    for run in sorted(d for d in runs_dir.iterdir() if d.is_dir()):
        where = str(run.relative_to(report.project))
        _check_run_json(report, run, where)
        _check_ledger(report, run, where)
        _check_socket(report, run, where)


def _check_run_json(report: Report, run: Path, where: str) -> None:
    path = run / "run.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        report.findings.append(
            Finding("runs", "warning", where, "no run.json: this run cannot be reopened by name")
        )
        return
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        report.findings.append(
            Finding(
                "runs",
                "problem",
                f"{where}/run.json",
                f"unreadable: {err}",
                "restore the file, or move the run folder away to start afresh",
            )
        )
        return
    if not isinstance(data, dict) or "runId" not in data:
        report.findings.append(
            Finding(
                "runs",
                "problem",
                f"{where}/run.json",
                "not a run record (no runId)",
                "restore the file, or move the run folder away to start afresh",
            )
        )


def _check_ledger(report: Report, run: Path, where: str) -> None:
    path = run / "legion.db"
    if not path.exists():
        return
    from legion_tui.ledger import LedgerError, read_snapshot

    try:
        nodes, _usage = read_snapshot(path)
    except LedgerError as err:
        report.findings.append(
            Finding(
                "runs",
                "problem",
                f"{where}/legion.db",
                str(err),
                "it is left untouched; move it away (or the whole run folder) to start afresh",
            )
        )
        return
    report.passed.append(f"{where}/legion.db: ledger opens ({len(nodes)} nodes)")


def _check_socket(report: Report, run: Path, where: str) -> None:
    from legion_tui.runs.socket_link import socket_refusal, socket_target

    target = socket_target(run / "supervisor.sock")
    if target is None:
        return
    reason = socket_refusal(target)
    if reason is not None:
        report.findings.append(
            Finding(
                "socket",
                "warning",
                f"{where}/supervisor.sock",
                f"stale socket: no supervisor is listening ({reason})",
                "harmless; the next `legion tui` for this session replaces it",
            )
        )
        return
    report.passed.append(f"{where}/supervisor.sock: a supervisor is listening")


def diagnose(project: Path) -> Report:
    report = Report(project)
    check_cards(report)
    check_settings(report)
    check_runs(report)
    return report


# ----- output --------------------------------------------------------------------------


def render_text(report: Report) -> str:
    lines = [f"legion doctor — {report.project}"]
    lines += [f"  ok    {line}" for line in report.passed]
    for finding in report.findings:
        tag = "error" if finding.severity == "problem" else "warn "
        lines.append(f"  {tag} {finding}")
        if finding.fix:
            lines.append(f"        fix: {finding.fix}")
    n, w = len(report.problems), len(report.warnings)
    verdict = "no problems" if n == 0 else f"{n} problem{'s' if n != 1 else ''}"
    lines.append(f"{verdict}, {w} warning{'s' if w != 1 else ''}")
    return "\n".join(lines)


def render_json(report: Report) -> str:
    return json.dumps(
        {
            "project": str(report.project),
            "ok": not report.problems,
            "problems": [asdict(f) for f in report.problems],
            "warnings": [asdict(f) for f in report.warnings],
            "passed": report.passed,
        },
        indent=2,
        ensure_ascii=False,
    )


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument(
        "--project",
        type=Path,
        default=None,
        help="the project folder (default: the nearest folder with .legion/, else the current one)",
    )


def _run(args: argparse.Namespace) -> int:
    from legion_tui.runs.catalog import find_project_dir

    # Like the other verbs: from a subfolder, the nearest folder holding `.legion/`.
    project = args.project.resolve() if args.project else find_project_dir(Path.cwd())
    report = diagnose(project)
    print(render_json(report) if args.json else render_text(report))
    return 1 if report.problems else 0


COMMANDS: dict[str, Command] = {
    "doctor": Command(
        help="check role cards, settings, agent commands on PATH, ledgers and sockets",
        add_arguments=_add_arguments,
        run=_run,
    ),
}
