"""`.legion/settings.toml`: budgets, theme, phase timeouts, stop grace — all optional.

    theme = "legion-dark"        # legion-dark | legion-light | legion-ansi (or dark/light/ansi)
    stopGraceSeconds = 5         # SIGTERM → grace → SIGKILL

    [budgets]
    maxDepth = 3
    maxChildrenPerNode = 8
    maxActiveNodes = 32

    [phaseTimeouts]              # advisory, per phase name, in ms; 0 = never warn
    implementing = 5400000

    [worktrees]                  # in a git repository (SPEC §6.7)
    perAgent = true              # every agent started from root gets its own worktree and
                                 # branch (a lead's members share its); false: only leads

    [land]                       # `L` and `legion land` (SPEC §6.8)
    mode = "merge"               # merge | squash | rebase: the mode the land offers first

    [notify]                     # when an agent needs you, fails, a team ends, one is stuck
    toast = true                 # a toast in the dashboard
    bell = true                  # the terminal bell
    desktop = true               # a desktop notification (OSC 9 and OSC 777)

    [budget]
    usd = 5.0                    # a subtree that spends more is stopped (cost of its sessions)

    [checks]                     # run in an agent's own worktree each time it settles
    command = "make test"        # by /bin/sh (a list of strings: one argv)
    timeout = 600                # seconds; then the command's process group is killed
    retries = 2                  # a failure goes back to the agent this many times

    [agent]                      # what a `kind: auto` card (the bundled ones) runs
    default = "pi"               # auto | sim | pi | claude | codex | exec; absent/auto:
                                 # the first installed (pi, claude, codex)
    idle_release_seconds = 120   # a settled agent's process ends after this long without
                                 # a turn (0: never); a message starts it again
    permissions = "ask"          # ask | allowed-tools | never-ask (a card's own wins)

    [agent.pi]                   # each kind its own: [agent.pi] [agent.claude] [agent.codex]
    command = ["pi"]             # argv (placeholders as in cards); pi/claude/codex: its program
    model = "claude-sonnet-4-5"  # pi, claude: --model; codex: -c model=…
    provider = "anthropic"       # pi: --provider; codex: -c model_provider=…
    args = ["--thinking", "low"] # appended to the agent's argv
    env = { PI_CODING_AGENT_DIR = "/opt/pi-home" }  # added to the agent's environment

`[agent] command/model/provider` (the older form) still apply to the default kind only
(doctor says to move them). A node records the command it launched with, and every
relaunch (resume, attach) uses its own record: another kind's settings never leak in.

    [cluster]                    # where agents run (issue 15); needs legion-tui[ray]
    engine = "ray"               # local (the default) | ray: each agent in a Ray actor
    address = "auto"             # ray.init's address: auto | ray://host:port | host:port
    numCpus = 0.25               # the CPUs one agent's actor asks for (it mostly waits)
    resources = { gpu_box = 1 }  # custom Ray resources one agent's actor asks for

The file is read with `tomllib`; every problem (syntax, unknown key, wrong type) is
reported with file:line like role cards, and a setting with a problem keeps its default.
`Settings.phase_timeouts` holds ONLY what the operator wrote: the timeout resolver must
tell "the operator chose 60 min" from "nobody said anything" (upstream #358).
`[agent]` is never silently defaulted either: a problem in it makes `auto` launches refuse
(`agents.resolve`), because guessing another agent than the one the user named is worse
than saying so.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Protocol, get_args

from legion_tui.costs import is_usd
from legion_tui.regular_files import atomic_write, read_regular_text

__all__ = [
    "AGENT_KEYS",
    "AGENT_KIND_TABLES",
    "DEFAULT_SETTINGS",
    "KIND_KEYS",
    "LAND_MODES",
    "SETTINGS_FILE",
    "AgentSettings",
    "ChecksSettings",
    "ClusterSettings",
    "KindSettings",
    "LandMode",
    "Settings",
    "SettingsProblem",
    "SettingsResult",
    "load_settings",
    "parse_settings",
]

SETTINGS_FILE = Path(".legion") / "settings.toml"
THEMES: tuple[str, ...] = ("legion-dark", "legion-light", "legion-ansi")
_PHASE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")


@dataclass(frozen=True, slots=True)
class SettingsProblem:
    path: str
    line: int | None
    key: str | None
    message: str
    hint: str = ""

    @property
    def where(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"

    @property
    def what(self) -> str:
        return f"setting '{self.key}': {self.message}" if self.key else self.message

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass(frozen=True, slots=True)
class KindSettings:
    """`[agent.KIND]`: how one kind of agent is launched from an `auto` card."""

    command: tuple[str, ...] = ()  # argv template (pi/claude/codex: replaces the program)
    model: str | None = None
    provider: str | None = None
    args: tuple[str, ...] = ()  # appended to the argv
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """`[agent]`: the agent `kind: auto` resolves to. Empty: the first installed one."""

    default: str | None = None  # one of model.CARD_KINDS; None or "auto": the first installed
    # The older form, for the default kind only: its argv, --model, --provider.
    command: tuple[str, ...] = ()
    model: str | None = None
    provider: str | None = None
    line: int | None = None  # where `default` is written (refusals point at it)
    idle_release_seconds: float = 120.0  # 0: a settled agent keeps its process
    permissions: str | None = None  # model.PERMISSIONS, for cards that do not say
    kinds: Mapping[str, KindSettings] = field(  # `[agent.pi]` …, by kind
        default_factory=lambda: MappingProxyType({})
    )


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """`[cluster]`: local (every agent a child of the host) or a Ray cluster."""

    engine: str = "local"  # one of CLUSTER_ENGINES
    address: str = "auto"  # ray.init(address=…)
    # A quarter of a CPU: an agent mostly waits on its model, and a whole CPU each left a
    # 2-CPU node room for a lead and one member (the second waited, then failed).
    num_cpus: float = 0.25
    resources: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class ChecksSettings:
    """`[checks]`: the project's own checks, run on an agent's work in its worktree when
    it settles (issue 34 item 2); a failure goes back to the agent `retries` times."""

    command: str | None = None  # run by /bin/sh in the worktree; a list is shell-joined
    timeout_seconds: float = 600.0
    retries: int = 2


@dataclass(frozen=True, slots=True)
class Settings:
    max_depth: int = 3
    max_children_per_node: int = 8
    max_active_nodes: int = 32
    theme: str = "legion-dark"
    stop_grace_seconds: float = 5.0
    phase_timeouts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    agent: AgentSettings = AgentSettings()
    worktree_per_agent: bool = True  # `[worktrees] perAgent`
    land_mode: LandMode = "merge"  # `[land] mode`
    notify_toast: bool = True  # `[notify] toast`
    notify_bell: bool = True  # `[notify] bell`
    notify_desktop: bool = True  # `[notify] desktop`
    budget_usd: float | None = None  # `[budget] usd`: None, no budget
    cluster: ClusterSettings = ClusterSettings()
    checks: ChecksSettings = ChecksSettings()  # `[checks]`: the project's own checks


DEFAULT_SETTINGS = Settings()


@dataclass(frozen=True, slots=True)
class SettingsResult:
    settings: Settings
    problems: tuple[SettingsProblem, ...] = ()
    path: Path | None = None  # None: there is no settings file (all defaults)


# key → (attribute, minimum) for the integer budgets
_BUDGETS: dict[str, tuple[str, int]] = {
    "maxDepth": ("max_depth", 1),
    "maxChildrenPerNode": ("max_children_per_node", 1),
    "maxActiveNodes": ("max_active_nodes", 1),
}
_TOP_KEYS = (
    "theme", "stopGraceSeconds", "budgets", "phaseTimeouts", "agent", "worktrees",
    "cluster", "notify", "budget", "land", "checks",
)
CHECKS_KEYS = ("command", "timeout", "retries")
CLUSTER_KEYS = ("engine", "address", "numCpus", "resources")
CLUSTER_ENGINES = ("local", "ray")
WORKTREE_KEYS = ("perAgent",)
LAND_KEYS = ("mode",)
# How `L` / `legion land` lands a branch (legion_tui.git.land); defined here, where the
# setting is read, so reading settings imports no git code.
LandMode = Literal["merge", "squash", "rebase"]
LAND_MODES: tuple[LandMode, ...] = get_args(LandMode)
NOTIFY_KEYS = ("toast", "bell", "desktop")
AGENT_KEYS = (
    "default", "command", "model", "provider", "idle_release_seconds", "permissions",
)
# `[agent.KIND]`: the kinds with a table of their own, and its keys.
AGENT_KIND_TABLES = ("pi", "claude", "codex", "exec")
KIND_KEYS = ("command", "model", "provider", "args", "env")


class _Add(Protocol):
    """How the table helpers report a problem (`add` inside `parse_settings`)."""

    def __call__(self, table: str, key: str, message: str, hint: str = "") -> None: ...


def _key_lines(text: str) -> dict[tuple[str, str], int]:
    """(table, key) → line, for the simple TOML a settings file holds.

    tomllib keeps no positions, so this scans `[table]` headers and `key =` lines; a key
    it cannot place is reported without a line rather than with a wrong one.
    """
    lines: dict[tuple[str, str], int] = {}
    table = ""
    header = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\"'-]+)\s*\]\s*(#.*)?$")
    assignment = re.compile(r"^\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        match = header.match(line)
        if match:
            table = match[1].strip("\"'")
            lines.setdefault(("", table), number)
            outer, dot, inner = table.rpartition(".")
            if dot:  # `[agent.pi]` is also the key `pi` of the table `agent`
                lines.setdefault((outer, inner), number)
            continue
        match = assignment.match(line)
        if match:
            lines.setdefault((table, match[1].strip("\"'")), number)
    return lines


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# A settings file is a few lines; a 60 MB one took 12.5 s and 292 MB to refuse.
MAX_SETTINGS_BYTES = 1024 * 1024


def parse_settings(text: str, display: str) -> tuple[Settings, list[SettingsProblem]]:
    problems: list[SettingsProblem] = []
    try:
        data = tomllib.loads(text)
    except RecursionError:  # `x = [[[[…` 100 000 deep: no settings file nests like that
        hint = "a settings file is a few flat tables; every setting is optional"
        problems.append(SettingsProblem(display, None, None, "nested too deeply", hint))
        return DEFAULT_SETTINGS, problems
    except tomllib.TOMLDecodeError as err:
        found = re.search(r"line (\d+)", str(err))
        problems.append(
            SettingsProblem(
                display,
                int(found[1]) if found else None,
                None,
                f"not valid TOML: {err}",
                "fix the syntax; every setting is optional, an empty file is valid",
            )
        )
        return DEFAULT_SETTINGS, problems
    where = _key_lines(text)

    def add(table: str, key: str, message: str, hint: str = "") -> None:
        name = f"{table}.{key}" if table else key
        problems.append(SettingsProblem(display, where.get((table, key)), name, message, hint))

    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in _TOP_KEYS:
            add("", key, "unknown setting", f"settings are: {', '.join(_TOP_KEYS)}")
        elif key == "theme":
            short = isinstance(value, str) and not value.startswith("legion-")
            name = f"legion-{value}" if short else value
            if name not in THEMES:
                add("", key, f"expected one of {', '.join(THEMES)}, got {value!r}")
            else:
                values["theme"] = name
        elif key == "stopGraceSeconds":
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                add("", key, f"expected a number of seconds ≥ 0, got {value!r}")
            else:
                values["stop_grace_seconds"] = float(value)
        elif key == "budgets":
            _budgets(value, add, values)
        elif key == "phaseTimeouts":
            _phase_timeouts(value, add, values)
        elif key == "agent":
            _agent(value, add, values, where.get(("agent", "default")))
        elif key == "worktrees":
            _worktrees(value, add, values)
        elif key == "land":
            _land(value, add, values)
        elif key == "notify":
            _notify(value, add, values)
        elif key == "budget":
            _budget(value, add, values)
        elif key == "cluster":
            _cluster(value, add, values)
        elif key == "checks":
            _checks(value, add, values)
    return Settings(**values), problems


def _checks(value: object, add: _Add, values: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        add("", "checks", "expected a table: [checks]")
        return
    fields: dict[str, Any] = {}
    wrong = False

    def bad(key: str, message: str, hint: str = "") -> None:
        nonlocal wrong
        wrong = True
        add("checks", key, message, hint)

    for key, item in value.items():
        if key not in CHECKS_KEYS:
            bad(key, "unknown key", f"[checks] keys are: {', '.join(CHECKS_KEYS)}")
        elif key == "command":
            argv = isinstance(item, list) and item and all(isinstance(a, str) for a in item)
            if isinstance(item, str) and item.strip():
                fields["command"] = item
            elif argv:
                fields["command"] = shlex.join(item)
            else:
                bad(key, f"expected a command (a string or a list of strings), got {item!r}",
                    'e.g. command = "make test"')
        elif key == "timeout":
            number = isinstance(item, int | float) and not isinstance(item, bool)
            if not number or not 0 < item < float("inf"):
                bad(key, f"expected a number of seconds > 0, got {item!r}")
            else:
                fields["timeout_seconds"] = float(item)
        elif not _is_int(item) or item < 0:
            bad(key, f"expected a whole number ≥ 0, got {item!r}")
        else:
            fields["retries"] = item
    if not wrong:  # nothing half-applied: a broken table runs no checks
        values["checks"] = ChecksSettings(**fields)


def _budgets(value: object, add: _Add, values: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        add("", "budgets", "expected a table: [budgets]")
        return
    for key, number in value.items():
        if key not in _BUDGETS:
            add("budgets", key, "unknown budget", f"budgets are: {', '.join(_BUDGETS)}")
            continue
        attribute, minimum = _BUDGETS[key]
        if not _is_int(number) or number < minimum:
            add("budgets", key, f"expected an integer ≥ {minimum}, got {number!r}")
            continue
        values[attribute] = number


def _worktrees(value: object, add: _Add, values: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        add("", "worktrees", "expected a table: [worktrees]")
        return
    for key, item in value.items():
        if key not in WORKTREE_KEYS:
            keys = ", ".join(WORKTREE_KEYS)
            add("worktrees", key, "unknown key", f"[worktrees] keys are: {keys}")
        elif not isinstance(item, bool):
            add("worktrees", key, f"expected true or false, got {item!r}")
        else:
            values["worktree_per_agent"] = item


def _land(value: object, add: _Add, values: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        add("", "land", "expected a table: [land]")
        return
    for key, item in value.items():
        if key not in LAND_KEYS:
            add("land", key, "unknown key", f"[land] keys are: {', '.join(LAND_KEYS)}")
        elif item not in LAND_MODES:
            add("land", key, f"expected one of {', '.join(LAND_MODES)}, got {item!r}")
        else:
            values["land_mode"] = item


def _notify(value: object, add: _Add, values: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        add("", "notify", "expected a table: [notify]")
        return
    for key, item in value.items():
        if key not in NOTIFY_KEYS:
            add("notify", key, "unknown key", f"[notify] keys are: {', '.join(NOTIFY_KEYS)}")
        elif not isinstance(item, bool):
            add("notify", key, f"expected true or false, got {item!r}")
        else:
            values[f"notify_{key}"] = item


def _budget(value: object, add: _Add, values: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        add("", "budget", "expected a table: [budget]")
        return
    for key, item in value.items():
        if key != "usd":
            add("budget", key, "unknown key", "[budget] keys are: usd")
        elif not is_usd(item):
            add("budget", key, f"expected an amount of dollars > 0, got {item!r}")
        else:
            values["budget_usd"] = float(item)




def _is_amount(value: object) -> bool:
    """A Ray resource amount: a number > 0 (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _cluster(value: object, add: _Add, values: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        add("", "cluster", "expected a table: [cluster]")
        return
    fields: dict[str, Any] = {}
    for key, item in value.items():
        if key not in CLUSTER_KEYS:
            add("cluster", key, "unknown key", f"[cluster] keys are: {', '.join(CLUSTER_KEYS)}")
        elif key == "engine":
            if item not in CLUSTER_ENGINES:
                add("cluster", key, f"expected one of {', '.join(CLUSTER_ENGINES)}, got {item!r}")
            else:
                fields["engine"] = item
        elif key == "address":
            if not isinstance(item, str) or not item.strip():
                add("cluster", key, f"expected an address (auto, ray://host:port), got {item!r}")
            else:
                fields["address"] = item.strip()
        elif key == "numCpus":
            if not _is_amount(item):
                add("cluster", key, f"expected a number of CPUs > 0, got {item!r}")
            else:
                fields["num_cpus"] = float(item)
        elif not isinstance(item, dict) or not all(  # resources
            isinstance(name, str) and name and _is_amount(amount) for name, amount in item.items()
        ):
            add("cluster", key, f"expected a table of name = amount > 0, got {item!r}")
        else:
            fields["resources"] = MappingProxyType({n: float(a) for n, a in item.items()})
    values["cluster"] = ClusterSettings(**fields)


def _phase_timeouts(value: object, add: _Add, values: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        add("", "phaseTimeouts", "expected a table: [phaseTimeouts]")
        return
    explicit: dict[str, int] = {}
    for phase, ms in value.items():
        if not _PHASE_NAME.fullmatch(phase):
            add("phaseTimeouts", phase, "expected a phase name like 'implementing'")
        elif not _is_int(ms) or ms < 0:
            add("phaseTimeouts", phase, f"expected milliseconds (integer ≥ 0), got {ms!r}")
        else:
            explicit[phase] = ms
    values["phase_timeouts"] = MappingProxyType(explicit)


def _argv(table: str, key: str, item: object, add: _Add) -> tuple[str, ...] | None:
    """A `command = [...]` of `[agent]` or `[agent.KIND]`: a non-empty argv whose
    placeholders are known and never inside a script the interpreter runs."""
    from legion_tui.agents.placeholders import (
        PLACEHOLDERS,
        SAFE_WAY,
        placeholders_in,
        placeholders_in_scripts,
    )

    if not isinstance(item, list) or not item or not all(
        isinstance(part, str) and part for part in item
    ):
        add(table, key, f"expected a list of strings (argv), got {item!r}")
        return None
    unknown = [p for part in item for p in placeholders_in(part) if p not in PLACEHOLDERS]
    if unknown:
        known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
        add(table, key, f"unknown placeholder {{{unknown[0]}}}", f"placeholders: {known}")
        return None
    if scripted := placeholders_in_scripts(item):
        said = f"{{{scripted[0]}}} inside a script the interpreter runs"
        add(table, key, f"{said} would be run as code", SAFE_WAY)
        return None
    return tuple(item)


def _name(table: str, key: str, item: object, add: _Add) -> str | None:
    """A model or provider: a non-empty string."""
    if not isinstance(item, str) or not item.strip():
        add(table, key, f"expected a non-empty string, got {item!r}")
        return None
    return item.strip()


def _kind_table(kind: str, value: object, add: _Add) -> KindSettings | None:
    """`[agent.KIND]`; None when it is not a table."""
    table = f"agent.{kind}"
    if not isinstance(value, dict):
        add("agent", kind, f"expected a table: [{table}]")
        return None
    fields: dict[str, Any] = {}
    for key, item in value.items():
        if key not in KIND_KEYS:
            add(table, key, "unknown key", f"[{table}] keys are: {', '.join(KIND_KEYS)}")
        elif key == "command":
            if (argv := _argv(table, key, item, add)) is not None:
                fields[key] = argv
        elif key == "args":
            if not isinstance(item, list) or not all(isinstance(a, str) for a in item):
                add(table, key, f"expected a list of strings, got {item!r}")
            else:
                fields[key] = tuple(item)
        elif key == "env":
            if not isinstance(item, dict) or not all(
                isinstance(k, str) and k and "=" not in k and isinstance(v, str)
                for k, v in item.items()
            ):
                add(table, key, f'expected a table of strings ({{ NAME = "value" }}), got {item!r}')
            else:
                fields[key] = MappingProxyType(dict(item))
        elif (name := _name(table, key, item, add)) is not None:  # model, provider
            fields[key] = name
    return KindSettings(**fields)


def _agent(value: object, add: _Add, values: dict[str, Any], line: int | None) -> None:
    from legion_tui.model import CARD_KINDS

    if not isinstance(value, dict):
        add("", "agent", "expected a table: [agent]")
        return
    fields: dict[str, Any] = {"line": line}
    kinds: dict[str, KindSettings] = {}
    for key, item in value.items():
        if key in AGENT_KIND_TABLES:
            if (own := _kind_table(key, item, add)) is not None:
                kinds[key] = own
        elif key not in AGENT_KEYS:
            tables = ", ".join(f"[agent.{k}]" for k in AGENT_KIND_TABLES)
            add("agent", key, "unknown key", f"[agent] keys are: {', '.join(AGENT_KEYS)}; "
                f"tables: {tables}")
        elif key == "default":
            if item not in CARD_KINDS:
                add("agent", key, f"expected one of {', '.join(CARD_KINDS)}, got {item!r}")
            else:
                fields["default"] = item
        elif key == "command":
            if (argv := _argv("agent", key, item, add)) is not None:
                fields[key] = argv
        elif key == "permissions":
            from legion_tui.model import PERMISSIONS

            if item not in PERMISSIONS:
                add("agent", key, f"expected one of {', '.join(PERMISSIONS)}, got {item!r}")
            else:
                fields[key] = item
        elif key == "idle_release_seconds":
            if not isinstance(item, int | float) or isinstance(item, bool) or item < 0:
                add("agent", key, f"expected a number of seconds ≥ 0 (0: never), got {item!r}")
            else:
                fields[key] = float(item)
        elif (name := _name("agent", key, item, add)) is not None:  # model, provider
            fields[key] = name
    default = fields.get("default")
    # A command belongs to one agent; without a default naming it, which one runs it
    # would depend on what happens to be installed.
    if "command" in fields and default not in AGENT_KIND_TABLES:
        add("agent", "command", "a command needs default = " + " or ".join(
            f'"{k}"' for k in AGENT_KIND_TABLES))
        fields.pop("command")
    exec_command = "command" in value or kinds.get("exec", KindSettings()).command
    if default == "exec" and not exec_command:
        add("agent", "default", 'default = "exec" needs a command = [...] to run')
        fields.pop("default")
    values["agent"] = AgentSettings(**fields, kinds=MappingProxyType(kinds))


def load_settings(project_dir: Path) -> SettingsResult:
    """Read `<project_dir>/.legion/settings.toml`; a missing file means all defaults."""
    path = project_dir / SETTINGS_FILE
    display = str(SETTINGS_FILE)
    try:
        text = read_regular_text(path, max_bytes=MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return SettingsResult(DEFAULT_SETTINGS)
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        problem = SettingsProblem(display, None, None, f"cannot read: {reason}")
        return SettingsResult(DEFAULT_SETTINGS, (problem,), path)
    settings, problems = parse_settings(text, display)
    return SettingsResult(settings, tuple(problems), path)


_TOP_THEME = re.compile(r"^[ \t]*theme[ \t]*=.*$", re.MULTILINE)
_FIRST_TABLE = re.compile(r"^[ \t]*\[", re.MULTILINE)


def save_theme(project_dir: Path, theme: str) -> Path:
    """Write `theme = "<theme>"` into `<project_dir>/.legion/settings.toml` (`t` in the
    dashboard): the top-level line is replaced in place, or added before the first
    table; everything else in the file is kept as written. Atomic (a reader never sees
    half a file). Returns the file's path; OSError if it cannot be written."""
    path = project_dir / SETTINGS_FILE
    try:
        text = read_regular_text(path)
    except FileNotFoundError:
        text = ""
    line = f'theme = "{theme}"'
    table = _FIRST_TABLE.search(text)
    top, rest = (text[: table.start()], text[table.start() :]) if table else (text, "")
    top = _TOP_THEME.sub(line, top, count=1) if _TOP_THEME.search(top) else line + "\n" + top
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, top + rest, new_mode=0o644)  # a symlink's target: the link stays
    return path
