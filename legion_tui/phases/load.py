"""Load and validate a declared phase machine: from a card, a file, or a spawn request.

Accepted shapes (one validator for all of them):

    [ {id, require?, next, timeoutMs?}, ... ]                  a bare list of phases
    {start?, phases: [...], maxRework?}                        with a start / rework cap

`next` items are phase names, or `{to, require?, rework?}` for an edge with its own
conditions. A `{id: done|failed|aborted, terminal?: true, next: []}` entry is accepted as
a no-op (upstream's inline example declares its terminals that way).

Validation collects EVERY problem, each with the path of the offending value
(`phases[2].require[0]`): unknown condition, empty `next`, duplicate id, unreachable
phase, terminal as start, `next` naming an unknown phase, no terminal reachable from the
start (upstream G4), plus type errors and unknown fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from legion_tui import receipts
from legion_tui.phases.conditions import CONDITIONS, DEFAULT_MAX_REWORK, Condition, is_condition
from legion_tui.phases.locate import line_of, load_with_nodes
from legion_tui.phases.machine import TERMINALS, Edge, Machine, PhaseSpec
from legion_tui.regular_files import read_regular_text

__all__ = [
    "MachineError",
    "PhaseProblem",
    "load_machine_file",
    "parse_inline",
    "parse_machine",
    "validate_machine",
]

PHASE_ID = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_TOP_FIELDS = ("start", "phases", "maxRework")
_PHASE_FIELDS = ("id", "require", "next", "timeoutMs", "terminal")
_EDGE_FIELDS = ("to", "require", "rework")


@dataclass(frozen=True, slots=True)
class PhaseProblem:
    path: str  # `phases[2].require[0]`
    message: str
    line: int | None = None  # set when the machine came from YAML text

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class MachineError(ValueError):
    """A declared machine that does not validate; `problems` lists every reason."""

    def __init__(self, problems: Sequence[PhaseProblem], source: str | None = None) -> None:
        self.problems = tuple(problems)
        self.source = source
        lines = []
        for problem in self.problems:
            where = source or ""
            if source and problem.line is not None:
                where = f"{source}:{problem.line}"
            lines.append(f"  {where + ': ' if where else ''}{problem}")
        super().__init__("invalid phase machine:\n" + "\n".join(lines))


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


class _Validator:
    def __init__(self) -> None:
        self.problems: list[PhaseProblem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(PhaseProblem(path, message))

    def conditions(self, value: object, path: str) -> tuple[Condition, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            value = [value]  # `require: contract_file` is a one-item list in spirit
        if not isinstance(value, list):
            self.add(path, f"expected a list of condition names, got {_kind(value)}")
            return ()
        found: list[Condition] = []
        for k, item in enumerate(value):
            if is_condition(item):
                found.append(item)
            else:
                self.add(
                    f"{path}[{k}]",
                    f"unknown condition {item!r} (known: {', '.join(CONDITIONS)})",
                )
        return tuple(found)

    def unknown_fields(
        self, raw: Mapping[object, object], allowed: Sequence[str], path: str
    ) -> None:
        for key in raw:
            if key not in allowed:
                where = f"{path}.{key}" if path else str(key)
                self.add(where, f"unknown field (allowed: {', '.join(allowed)})")

    def edge(self, item: object, path: str) -> Edge | None:
        if isinstance(item, str):
            return Edge(item)
        if not isinstance(item, dict):
            self.add(path, f"expected a phase name or {{to, require?, rework?}}, got {_kind(item)}")
            return None
        self.unknown_fields(item, _EDGE_FIELDS, path)
        to = item.get("to")
        if not isinstance(to, str) or not to:
            self.add(f"{path}.to", f"expected a phase name, got {to!r}")
            return None
        rework = item.get("rework", False)
        if not isinstance(rework, bool):
            self.add(f"{path}.rework", f"expected true or false, got {rework!r}")
            rework = False
        return Edge(to, self.conditions(item.get("require"), f"{path}.require"), rework)

    def phase(self, raw: object, path: str) -> tuple[str | None, PhaseSpec | None]:
        """(declared id, spec); spec is None for a terminal declaration or a broken entry."""
        if not isinstance(raw, dict):
            self.add(path, f"expected a mapping with id, require, next; got {_kind(raw)}")
            return None, None
        self.unknown_fields(raw, _PHASE_FIELDS, path)
        phase_id = raw.get("id")
        if not isinstance(phase_id, str) or not PHASE_ID.fullmatch(phase_id):
            self.add(f"{path}.id", f"expected a phase name like 'planning', got {phase_id!r}")
            return None, None
        if phase_id in TERMINALS:
            if raw.get("require") or raw.get("next"):
                self.add(
                    f"{path}.id",
                    f"'{phase_id}' is a terminal phase; terminals take no require or next "
                    "(they are always available)",
                )
            return phase_id, None
        if raw.get("terminal"):
            self.add(
                f"{path}.terminal", f"only done, failed and aborted are terminal, not {phase_id!r}"
            )
        require = self.conditions(raw.get("require"), f"{path}.require")
        next_raw = raw.get("next")
        edges: list[Edge] = []
        if next_raw is None or next_raw == []:
            self.add(f"{path}.next", "empty: a working phase needs at least one next phase")
        elif not isinstance(next_raw, list):
            self.add(f"{path}.next", f"expected a list of phase names, got {_kind(next_raw)}")
        else:
            for k, item in enumerate(next_raw):
                edge = self.edge(item, f"{path}.next[{k}]")
                if edge is None:
                    continue
                if any(e.to == edge.to for e in edges):
                    self.add(f"{path}.next[{k}]", f"{edge.to!r} is listed twice")
                    continue
                edges.append(edge)
        timeout = raw.get("timeoutMs")
        if timeout is not None and (
            not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0
        ):
            self.add(f"{path}.timeoutMs", f"expected a positive integer (ms), got {timeout!r}")
            timeout = None
        spec = PhaseSpec(
            phase_id,
            require=require,
            next=tuple(e.to for e in edges),
            timeout_ms=timeout,
            edges=tuple(e for e in edges if e.require or e.rework),
        )
        return phase_id, spec


def validate_machine(data: object) -> tuple[Machine | None, tuple[PhaseProblem, ...]]:
    """(machine, ()) when `data` is a valid machine, else (None, every problem)."""
    v = _Validator()
    start_raw: object = None
    max_rework: object = DEFAULT_MAX_REWORK
    phases_raw: object
    if isinstance(data, dict):
        v.unknown_fields(data, _TOP_FIELDS, "")
        phases_raw = data.get("phases")
        start_raw = data.get("start")
        max_rework = data.get("maxRework", DEFAULT_MAX_REWORK)
    else:
        phases_raw = data
    if not isinstance(phases_raw, list) or not phases_raw:
        v.add("phases", f"expected a non-empty list of phases, got {_kind(phases_raw)}")
        return None, tuple(v.problems)
    if not isinstance(max_rework, int) or isinstance(max_rework, bool) or max_rework < 0:
        v.add("maxRework", f"expected a non-negative integer, got {max_rework!r}")
        max_rework = DEFAULT_MAX_REWORK

    specs: list[PhaseSpec] = []
    index_of: dict[str, int] = {}
    declared: list[str] = []  # every id in order, terminal declarations included
    for i, raw in enumerate(phases_raw):
        path = f"phases[{i}]"
        phase_id, spec = v.phase(raw, path)
        if phase_id is None:
            continue
        if phase_id in index_of:
            v.add(
                f"{path}.id",
                f"duplicate phase id {phase_id!r} (first at phases[{index_of[phase_id]}])",
            )
            continue
        index_of[phase_id] = i
        declared.append(phase_id)
        if spec is not None:
            specs.append(spec)

    working = {s.id for s in specs}
    for spec in specs:
        i = index_of[spec.id]
        for k, to in enumerate(spec.next):
            if to not in working and to not in TERMINALS:
                k = _next_index(phases_raw[i], to, k)
                v.add(f"phases[{i}].next[{k}]", f"unknown phase {to!r}")

    start: str | None = None
    if start_raw is not None:
        if not isinstance(start_raw, str):
            v.add("start", f"expected a phase name, got {_kind(start_raw)}")
        else:
            start = start_raw
    elif declared:
        start = declared[0]
    if start is not None:
        if start in TERMINALS:
            v.add("start", f"{start!r} is a terminal phase; a machine starts in a working phase")
            start = None
        elif start not in working:
            v.add("start", f"unknown phase {start!r}")
            start = None
    if start is not None:
        _check_reachability(v, specs, index_of, start)
    if v.problems or start is None:
        return None, tuple(v.problems)
    machine = Machine(phases=tuple(specs), start=start, max_rework=int(max_rework))
    return machine, ()


def _next_index(raw: object, to: str, fallback: int) -> int:
    """Index of `to` in the raw `next` list (edges that failed to parse shift positions)."""
    if isinstance(raw, dict) and isinstance(raw.get("next"), list):
        for k, item in enumerate(raw["next"]):
            name = item.get("to") if isinstance(item, dict) else item
            if name == to:
                return k
    return fallback


def _check_reachability(
    v: _Validator, specs: list[PhaseSpec], index_of: dict[str, int], start: str
) -> None:
    by_id = {s.id: s for s in specs}
    seen = {start}
    todo = [start]
    terminal_reached = False
    while todo:
        spec = by_id[todo.pop()]
        for to in spec.next:
            if to in TERMINALS:
                terminal_reached = True
            elif to in by_id and to not in seen:
                seen.add(to)
                todo.append(to)
    for spec in specs:
        if spec.id not in seen:
            v.add(
                f"phases[{index_of[spec.id]}]", f"phase {spec.id!r} is unreachable from {start!r}"
            )
    if not terminal_reached:
        v.add("phases", receipts.phase_no_terminal(start))


def parse_machine(data: object) -> Machine:
    """A validated machine; raises `MachineError` listing every problem."""
    machine, problems = validate_machine(data)
    if machine is None:
        raise MachineError(problems)
    return machine


def parse_inline(value: object) -> Machine:
    """A machine passed in a spawn request: a list/dict, or JSON text of one."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise MachineError(
                [PhaseProblem("phases", f"not valid JSON: {err.msg}", err.lineno)]
            ) from err
    return parse_machine(value)


def load_machine_file(path: str | Path) -> Machine:
    """`--phases FILE`: YAML or JSON (by suffix; YAML otherwise). Problems carry lines."""
    file = Path(path)
    source = str(path)
    try:
        text = read_regular_text(file)
    except (OSError, UnicodeDecodeError) as err:
        raise MachineError([PhaseProblem("file", f"cannot read: {err}")], source) from err
    node: yaml.Node | None = None
    try:
        if file.suffix.lower() == ".json":
            data: object = json.loads(text)
        else:
            node, data = load_with_nodes(text)
    except json.JSONDecodeError as err:
        problem = PhaseProblem("file", f"not valid JSON: {err.msg}", err.lineno)
        raise MachineError([problem], source) from err
    except RecursionError as err:  # `[[[[…` 100 000 deep: no machine nests like that
        problem = PhaseProblem("file", "nested too deeply to be a phase machine")
        raise MachineError([problem], source) from err
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = PhaseProblem("file", f"not valid YAML: {getattr(err, 'problem', err)}", line)
        raise MachineError([problem], source) from err
    machine, problems = validate_machine(data)
    if machine is None:
        located = [PhaseProblem(p.path, p.message, line_of(node, p.path)) for p in problems]
        raise MachineError(located, source)
    return machine


def machine_from_json(text: str) -> Machine:
    """A stored machine (`Machine.to_json`), parsed and validated; raises `MachineError`
    when it is invalid."""
    return parse_machine(json.loads(text))
