"""Role cards: Markdown with YAML frontmatter, bundled and per project.

    ---
    name: worker
    description: ...
    kind: auto           # auto | sim | pi | exec (auto: the configured or installed agent)
    command: [my-agent, --task, "{task}"]
    resources: {num_cpus: 2, GPU: 0, my-resource: 1}   # on a Ray cluster: what its actor asks
    ---
    The body is the system prompt.

`load_cards(project)` reads the bundled cards (package data) and lets
`<project>/.legion/agents/*.md` override them BY NAME. Validation collects every problem
with its file and line — bad YAML, missing frontmatter, unknown or duplicate field, wrong
type, invalid enum value, invalid phases — and a card with any problem is not loaded at
all: asking for it raises `CardError` and nothing is spawned. A broken project override
never falls back to the bundled card, because silently running a different card than the
one the user wrote is worse than refusing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import yaml

from legion_tui.agents.placeholders import (
    PLACEHOLDERS,
    SAFE_WAY,
    fill,
    placeholders_in,
    placeholders_in_scripts,
)
from legion_tui.costs import is_usd
from legion_tui.model import CARD_KINDS, PERMISSIONS, ROLES, CardKind, Role
from legion_tui.phases import locate
from legion_tui.phases.load import validate_machine
from legion_tui.phases.locate import line_of, load_with_nodes
from legion_tui.phases.machine import Machine
from legion_tui.regular_files import read_regular_text

__all__ = [
    "CARD_FIELDS",
    "CardError",
    "CardProblem",
    "CardSet",
    "RoleCard",
    "load_cards",
    "parse_card",
]

NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
PROJECT_CARDS = Path(".legion") / "agents"
# The parser class; a module attribute so the benchmark can compare parsers.
YAML_LOADER: type[yaml.SafeLoader] = locate.YAML_LOADER

# The closed field set, in the order `legion doctor` suggests them.
CARD_FIELDS: tuple[str, ...] = (
    "name",
    "description",
    "kind",
    "role",
    "command",
    "tools",
    "timeoutMs",
    "toolTimeoutMs",
    "maxSubagentDepth",
    "worktree",
    "renewable",
    "isolate",
    "permissions",
    "budgetUsd",
    "resources",
    "phases",
)
_REQUIRED = ("name", "description", "kind")


@dataclass(frozen=True, slots=True)
class CardProblem:
    path: str  # as the user should read it: `.legion/agents/worker.md`
    line: int | None
    field: str | None
    message: str
    hint: str = ""  # how to fix it (`legion doctor` prints it)

    @property
    def where(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"

    @property
    def what(self) -> str:
        return f"field '{self.field}': {self.message}" if self.field else self.message

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


class CardError(LookupError):
    """A card that is missing or broken was asked for; nothing was spawned."""

    def __init__(self, name: str, message: str, problems: tuple[CardProblem, ...] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.problems = problems


@dataclass(frozen=True, slots=True)
class RoleCard:
    name: str
    description: str
    kind: CardKind  # `auto` is resolved at launch (agents.resolve), never stored on a node
    role: Role
    prompt: str  # the Markdown body: the agent's system prompt
    command: tuple[str, ...] = ()  # argv template for pi/exec cards
    tools: tuple[str, ...] = ()
    timeout_ms: int | None = None
    tool_timeout_ms: int | None = None
    max_subagent_depth: int = 0  # levels of descendants below this node; 0 spawns nothing
    worktree: bool = False
    renewable: bool = True
    isolate: bool = False  # a sim card that must run as an OS process
    permissions: str | None = None  # one of model.PERMISSIONS; None: the settings' or kind's
    budget_usd: float | None = None  # `budgetUsd`: its subtree is stopped past it (costs)
    # `resources:` on a Ray cluster ({"CPU": 2.0, "GPU": 0.0, "my-resource": 1.0}: Ray's
    # names); None: the settings' `[cluster] numCpus` / `resources` ask for it.
    resources: Mapping[str, float] | None = None
    phases: Machine | None = None
    source: str = ""  # where it was read from (display path)
    bundled: bool = False

    def argv(self, **values: str) -> list[str]:
        """The command with its placeholders filled (placeholders.fill: one pass, so
        braces in a task are left alone)."""
        return fill(self.command, values)


@dataclass(frozen=True, slots=True)
class CardSet:
    cards: Mapping[str, RoleCard]
    problems: tuple[CardProblem, ...] = ()
    broken: Mapping[str, tuple[CardProblem, ...]] = field(default_factory=dict)

    def get(self, name: str) -> RoleCard:
        if name in self.broken:
            problems = self.broken[name]
            listed = "\n".join(f"  {p}" for p in problems)
            raise CardError(
                name,
                f"role card '{name}' is invalid — nothing spawned:\n{listed}",
                problems,
            )
        card = self.cards.get(name)
        if card is None:
            known = ", ".join(sorted(self.cards)) or "none"
            raise CardError(name, f"no role card named '{name}' (known: {known}) — nothing spawned")
        return card

    def __contains__(self, name: object) -> bool:
        return name in self.cards

    def __iter__(self) -> Iterator[RoleCard]:
        return iter(sorted(self.cards.values(), key=lambda c: c.name))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.cards))




# ----- one card ------------------------------------------------------------------------


class _Collector:
    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[CardProblem] = []

    def add(self, line: int | None, field_name: str | None, message: str, hint: str = "") -> None:
        self.problems.append(CardProblem(self.path, line, field_name, message, hint))


def _split_frontmatter(text: str, out: _Collector) -> tuple[str, str] | None:
    """(yaml text, body) — the frontmatter sits between two `---` lines at the top."""
    lines = text.splitlines(keepends=True)
    first = lines[0].lstrip("\ufeff").rstrip("\r\n") if lines else ""
    if first.rstrip() != "---":
        out.add(
            1,
            None,
            "missing frontmatter: a role card starts with a '---' line",
            "put the card's fields between two '---' lines at the top of the file",
        )
        return None
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n").rstrip() in ("---", "..."):
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    out.add(
        len(lines),
        None,
        "frontmatter is not closed: no second '---' line",
        "end the fields with a '---' line",
    )
    return None


def _got(value: object) -> str:
    return "nothing" if value is None else repr(value)


def _check_fields(
    data: dict[str, Any], root: yaml.MappingNode, out: _Collector
) -> dict[str, int | None]:
    """Unknown and duplicate keys; returns the line of every key (1-based, file lines)."""
    lines: dict[str, int | None] = {}
    for key_node, _ in root.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
        line = key_node.start_mark.line + 2  # +1 for 1-based, +1 for the opening fence
        if key in lines:
            out.add(line, key, f"duplicate field (first on line {lines[key]})", "keep one of them")
            continue
        lines[key] = line
        if key not in CARD_FIELDS:
            out.add(
                line,
                key,
                "unknown field",
                f"remove it or fix its spelling; card fields are: {', '.join(CARD_FIELDS)}",
            )
    for key in _REQUIRED:
        if key not in data:
            out.add(1, key, "missing (required)", f"add '{key}:' to the frontmatter")
    return lines


def _str(data: dict[str, Any], key: str, lines: Mapping[str, int | None], out: _Collector) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str) or not value.strip():
        out.add(lines.get(key), key, f"expected a non-empty string, got {_got(value)}")
        return ""
    return value.strip()


def _int(
    data: dict[str, Any],
    key: str,
    lines: Mapping[str, int | None],
    out: _Collector,
    *,
    minimum: int,
) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        out.add(lines.get(key), key, f"expected an integer, got {_got(value)}")
        return None
    if value < minimum:
        out.add(lines.get(key), key, f"expected an integer ≥ {minimum}, got {value}")
        return None
    return value


def _usd(
    data: dict[str, Any], key: str, lines: Mapping[str, int | None], out: _Collector
) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if not is_usd(value):
        out.add(lines.get(key), key, f"expected an amount of dollars > 0, got {_got(value)}")
        return None
    return float(value)


# `resources:` keys that are Ray's own (the actor's num_cpus / num_gpus), by what a card
# may call them; any other name is a custom resource some node declares.
_RAY_RESOURCES = {"num_cpus": "CPU", "CPU": "CPU", "num_gpus": "GPU", "GPU": "GPU"}
# Ray's own options that are not resource amounts a card can ask for this way.
_NOT_RESOURCES = frozenset({"memory", "object_store_memory"})
_RESOURCE_STEP = 10_000  # Ray counts resources in units of 0.0001
_RESOURCES_HINT = (
    "write e.g. resources: {num_cpus: 2, GPU: 0, my-resource: 1} — num_cpus (or CPU), "
    "num_gpus (or GPU), or a custom resource your Ray nodes declare, each an amount ≥ 0 "
    "in steps of 0.0001 (whole numbers above 1 GPU)"
)


def _resource_problem(name: object, amount: object, canonical: str | None) -> str | None:
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        return f"expected a resource name, got {_got(name)}"
    if name in _NOT_RESOURCES:
        return f"'{name}' is not a resource amount a card can ask for"
    if not isinstance(amount, int | float) or isinstance(amount, bool):
        return f"'{name}': expected an amount ≥ 0, got {_got(amount)}"
    if not amount >= 0 or amount == float("inf"):
        return f"'{name}': expected an amount ≥ 0, got {amount!r}"
    steps = amount * _RESOURCE_STEP  # in floats 0.0003 * 10 000 is 2.9999999999999996
    if abs(steps - round(steps)) > 1e-6:
        return f"'{name}': Ray counts in steps of 0.0001, got {amount!r}"
    if canonical == "GPU" and amount > 1 and amount != int(amount):
        return f"'{name}': more than one GPU is a whole number, got {amount!r}"
    return None


def _resources(
    data: dict[str, Any], lines: Mapping[str, int | None], out: _Collector
) -> Mapping[str, float] | None:
    """`resources:` as Ray's names and amounts; None when the card names none."""
    value = data.get("resources")
    if value is None:
        return None
    line = lines.get("resources")
    if not isinstance(value, dict):
        out.add(line, "resources", f"expected a mapping of name: amount, got {_got(value)}",
                _RESOURCES_HINT)  # fmt: skip
        return None
    asked: dict[str, float] = {}
    for name, amount in value.items():
        canonical = _RAY_RESOURCES.get(name) if isinstance(name, str) else None
        problem = _resource_problem(name, amount, canonical)
        key = canonical or str(name)
        if problem is None and key in asked:
            problem = f"'{name}': {key} is asked for twice"
        if problem is not None:
            out.add(line, "resources", problem, _RESOURCES_HINT)
            continue
        asked[key] = float(amount)
    return MappingProxyType(asked)


def _bool(
    data: dict[str, Any], key: str, lines: Mapping[str, int | None], out: _Collector, default: bool
) -> bool:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        out.add(lines.get(key), key, f"expected true or false, got {_got(value)}")
        return default
    return value


def _enum(
    data: dict[str, Any],
    key: str,
    allowed: tuple[str, ...],
    lines: Mapping[str, int | None],
    out: _Collector,
) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if value not in allowed:
        out.add(
            lines.get(key),
            key,
            f"expected one of {', '.join(allowed)}, got {_got(value)}",
        )
        return None
    return str(value)


def _string_list(
    data: dict[str, Any], key: str, lines: Mapping[str, int | None], out: _Collector
) -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if isinstance(value, str) and key == "tools":
        # upstream cards write `tools: read, edit, bash`
        return tuple(t.strip() for t in value.split(",") if t.strip())
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        out.add(lines.get(key), key, f"expected a list of strings, got {_got(value)}")
        return ()
    return tuple(value)


def _check_command(
    command: tuple[str, ...],
    kind: str | None,
    lines: Mapping[str, int | None],
    out: _Collector,
) -> None:
    if kind == "auto" and command:
        # The agent an auto card runs is the user's choice ([agent] in settings); a
        # command here would silently apply to whichever agent that turns out to be.
        out.add(
            lines.get("command"),
            "command",
            "a kind auto card runs the configured agent and takes no command",
            "set kind: pi or kind: exec to give this card its own command, or put it "
            "in .legion/settings.toml [agent] command",
        )
    if kind == "exec" and not command:
        out.add(
            lines.get("kind"),
            "command",
            "missing: a kind exec card needs a command (argv list)",
            'add e.g. command: [my-agent, --task, "{task}"]',
        )
    for part in command:
        for placeholder in placeholders_in(part):
            if placeholder not in PLACEHOLDERS:
                out.add(
                    lines.get("command"),
                    "command",
                    f"unknown placeholder {{{placeholder}}}",
                    "placeholders are " + ", ".join("{" + p + "}" for p in PLACEHOLDERS),
                )
    for placeholder in placeholders_in_scripts(command):
        out.add(
            lines.get("command"),
            "command",
            f"{{{placeholder}}} inside a script the interpreter runs would be run as code",
            SAFE_WAY,
        )


def _check_phases(
    data: dict[str, Any],
    role: str | None,
    root: yaml.MappingNode,
    lines: Mapping[str, int | None],
    out: _Collector,
) -> Machine | None:
    if data.get("phases") is None:
        return None
    if role != "centurion":
        out.add(
            lines.get("phases"),
            "phases",
            "phases belong to a centurion team",
            "remove phases: or make this card's role centurion",
        )
        return None
    machine, problems = validate_machine(data["phases"])
    for problem in problems:
        path = problem.path if problem.path.startswith("phases") else f"phases.{problem.path}"
        located = line_of(root, path, first_line=2)
        out.add(located, path, problem.message)
    return machine


def parse_card(
    text: str, path: str, *, bundled: bool = False
) -> tuple[RoleCard | None, str, list[CardProblem]]:
    """(card or None, the card's name, problems). The name falls back to the file stem."""
    out = _Collector(path)
    stem = Path(path).stem
    split = _split_frontmatter(text, out)
    if split is None:
        return None, stem, out.problems
    front, body = split
    try:
        root, data = load_with_nodes(front, YAML_LOADER)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1  # +1 fence, +1 for 1-based
        reason = getattr(err, "problem", None) or str(err)
        out.add(line, None, f"bad YAML: {reason}", "fix the YAML syntax of the frontmatter")
        return None, stem, out.problems
    if not isinstance(data, dict) or not isinstance(root, yaml.MappingNode):
        out.add(
            2, None, "frontmatter is not a mapping of fields", "write one 'field: value' per line"
        )
        return None, stem, out.problems

    lines = _check_fields(data, root, out)
    name = _str(data, "name", lines, out)
    if name and not NAME.fullmatch(name):
        out.add(
            lines.get("name"),
            "name",
            f"expected a name like 'worker' ([a-z0-9][a-z0-9._-]*), got {name!r}",
        )
    description = _str(data, "description", lines, out)
    kind = _enum(data, "kind", CARD_KINDS, lines, out)
    role = _enum(data, "role", ROLES, lines, out)
    if role is None and "role" not in data:
        # A card named like a role plays it; any other name is a worker-like helper.
        role = name if name in ROLES else "worker"
    command = _string_list(data, "command", lines, out)
    tools = _string_list(data, "tools", lines, out)
    timeout_ms = _int(data, "timeoutMs", lines, out, minimum=1)
    tool_timeout_ms = _int(data, "toolTimeoutMs", lines, out, minimum=1)
    depth = _int(data, "maxSubagentDepth", lines, out, minimum=0)
    worktree = _bool(data, "worktree", lines, out, False)
    renewable = _bool(data, "renewable", lines, out, True)
    isolate = _bool(data, "isolate", lines, out, False)
    permissions = _enum(data, "permissions", PERMISSIONS, lines, out)
    budget_usd = _usd(data, "budgetUsd", lines, out)
    asked = _resources(data, lines, out)
    _check_command(command, kind, lines, out)
    machine = _check_phases(data, role, root, lines, out)

    card_name = name or stem
    if out.problems or kind is None or role is None:
        # Checks run field by field; report them in file order, as an editor shows them.
        return None, card_name, sorted(out.problems, key=lambda p: p.line or 0)
    card = RoleCard(
        name=card_name,
        description=description,
        kind=_as_kind(kind),
        role=_as_role(role),
        prompt=body.strip("\n"),
        command=command,
        tools=tools,
        timeout_ms=timeout_ms,
        tool_timeout_ms=tool_timeout_ms,
        max_subagent_depth=depth or 0,
        worktree=worktree,
        renewable=renewable,
        isolate=isolate,
        permissions=permissions,
        budget_usd=budget_usd,
        resources=asked,
        phases=machine,
        source=path,
        bundled=bundled,
    )
    return card, card_name, []


def _as_kind(value: str) -> CardKind:
    # `_enum` checked membership in CARD_KINDS; the cast only tells the type checker.
    return cast(CardKind, value)


def _as_role(value: str) -> Role:
    return cast(Role, value)


# ----- the set -------------------------------------------------------------------------


def _bundled_cards() -> Iterator[tuple[str, str]]:
    folder = resources.files("legion_tui.agents").joinpath("cards")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md") and entry.is_file():
            yield f"legion_tui/agents/cards/{entry.name}", entry.read_text(encoding="utf-8")


def _display(path: Path, project_dir: Path) -> str:
    try:
        return str(path.relative_to(project_dir))
    except ValueError:
        return str(path)


def load_cards(project_dir: Path) -> CardSet:
    """Bundled cards, overridden by name by `<project_dir>/.legion/agents/*.md`."""
    cards: dict[str, RoleCard] = {}
    broken: dict[str, tuple[CardProblem, ...]] = {}
    problems: list[CardProblem] = []
    for display, text in _bundled_cards():
        card, name, found = parse_card(text, display, bundled=True)
        if card is not None:
            cards[name] = card
        else:
            broken[name] = tuple(found)
            problems.extend(found)

    folder = project_dir / PROJECT_CARDS
    seen: dict[str, str] = {}
    files = sorted(folder.glob("*.md")) if folder.is_dir() else []
    for file in files:
        display = _display(file, project_dir)
        try:
            text = read_regular_text(file)
        except UnicodeDecodeError:
            found = [CardProblem(display, None, None, "not UTF-8 text", "save the file as UTF-8")]
            card, name = None, file.stem
        except OSError as err:
            reason = err.strerror or str(err)
            found = [
                CardProblem(display, None, None, f"cannot read: {reason}", "check its permissions")
            ]
            card, name = None, file.stem
        else:
            card, name, found = parse_card(text, display)
        if name in seen:
            # Two project files claim one name: refuse both rather than pick one.
            duplicate = CardProblem(
                display,
                None,
                "name",
                f"card '{name}' is already defined in {seen[name]}",
                "give one of them another name",
            )
            found = [*found, duplicate]
            cards.pop(name, None)
            broken[name] = (*broken.get(name, ()), *found)
            problems.extend(found)
            continue
        seen[name] = display
        # A project card replaces the bundled one of the same name — even when broken.
        cards.pop(name, None)
        broken.pop(name, None)
        if card is not None and not found:
            cards[name] = card
        else:
            broken[name] = tuple(found)
            problems.extend(found)
    return CardSet(cards=cards, problems=tuple(problems), broken=broken)
