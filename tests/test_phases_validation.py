"""Load-time validation: every kind of bad machine gives its path and message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from legion_tui.phases import (
    DEFAULT_MACHINE,
    MachineError,
    load_machine_file,
    parse_inline,
    parse_machine,
    validate_machine,
)
from legion_tui.phases.load import machine_from_json

pytestmark = pytest.mark.unit


def problems(data: Any) -> list[str]:
    machine, found = validate_machine(data)
    assert machine is None, "expected the machine to be refused"
    return [str(p) for p in found]


def test_default_machine_validates_and_round_trips() -> None:
    again = parse_machine(DEFAULT_MACHINE.to_dict())
    assert again == DEFAULT_MACHINE
    assert again.start == "planning"
    assert machine_from_json(DEFAULT_MACHINE.to_json()) == DEFAULT_MACHINE


def test_simple_v5_shape_loads_and_starts_in_first_phase() -> None:
    machine = parse_machine(
        [
            {"id": "planning", "require": ["contract_file"], "next": ["implementing"]},
            {"id": "implementing", "require": ["always"], "next": ["done"], "timeoutMs": 60000},
        ]
    )
    assert machine.start == "planning"
    assert machine.phase_ids == ("planning", "implementing")
    assert machine.timeout_ms("implementing") == 60000
    assert machine_from_json(machine.to_json()) == machine


def test_explicit_start_and_max_rework() -> None:
    machine = parse_machine(
        {
            "start": "build",
            "maxRework": 1,
            "phases": [
                {"id": "recon", "next": ["build"]},
                {"id": "build", "next": ["recon", "done"]},
            ],
        }
    )
    assert (machine.start, machine.max_rework) == ("build", 1)


def test_upstream_inline_edge_form_with_declared_terminal() -> None:
    # the exact shape of upstream centurion-declared-phases-v1 §2
    machine = parse_inline(
        json.dumps(
            {
                "phases": [
                    {
                        "id": "planning",
                        "next": [{"to": "implementing", "require": ["contract_file"]}],
                    },
                    {"id": "implementing", "next": [{"to": "done"}]},
                    {"id": "done", "terminal": True, "next": []},
                ],
                "start": "planning",
            }
        )
    )
    assert machine.phase_ids == ("planning", "implementing")
    assert machine.phase("planning").exit_requires("implementing") == ("contract_file",)  # type: ignore[union-attr]


def test_unknown_condition_has_its_path() -> None:
    found = problems([{"id": "a", "require": ["always", "sunny"], "next": ["done"]}])
    assert found == [
        "phases[0].require[1]: unknown condition 'sunny' (known: contract_file, "
        "children_present, children_settled, children_none_failed, verdict_ok, "
        "verdict_not_ok, verification_passed, verification_failed, rework_available, "
        "children_all_failed, always)"
    ]


def test_unknown_condition_on_an_edge() -> None:
    found = problems([{"id": "a", "next": [{"to": "done", "require": ["maybe"]}]}])
    assert len(found) == 1
    assert found[0].startswith("phases[0].next[0].require[0]: unknown condition 'maybe'")


def test_empty_next() -> None:
    found = problems([{"id": "a", "next": ["b"]}, {"id": "b", "next": []}, {"id": "c"}])
    assert "phases[1].next: empty: a working phase needs at least one next phase" in found
    assert "phases[2].next: empty: a working phase needs at least one next phase" in found


def test_duplicate_id() -> None:
    found = problems([{"id": "a", "next": ["done"]}, {"id": "a", "next": ["done"]}])
    assert found == ["phases[1].id: duplicate phase id 'a' (first at phases[0])"]


def test_unreachable_phase() -> None:
    found = problems([{"id": "a", "next": ["done"]}, {"id": "island", "next": ["done"]}])
    assert found == ["phases[1]: phase 'island' is unreachable from 'a'"]


def test_terminal_as_start() -> None:
    found = problems({"start": "done", "phases": [{"id": "a", "next": ["done"]}]})
    assert "start: 'done' is a terminal phase; a machine starts in a working phase" in found
    # a terminal declared first is the implied start, and refused the same way
    found = problems([{"id": "failed"}, {"id": "a", "next": ["done"]}])
    assert "start: 'failed' is a terminal phase; a machine starts in a working phase" in found


def test_next_naming_an_unknown_phase() -> None:
    found = problems([{"id": "a", "next": ["done", "nowhere"]}])
    assert found == ["phases[0].next[1]: unknown phase 'nowhere'"]


def test_no_terminal_reachable_from_start_uses_upstream_wording() -> None:
    found = problems([{"id": "a", "next": ["b"]}, {"id": "b", "next": ["a"]}])
    assert found == ["phases: phase machine cannot reach a terminal phase from 'a'"]


def test_terminal_reachable_only_from_an_unreachable_phase_still_fails() -> None:
    found = problems(
        {
            "start": "a",
            "phases": [
                {"id": "a", "next": ["a2"]},
                {"id": "a2", "next": ["a"]},
                {"id": "z", "next": ["done"]},
            ],
        }
    )
    assert "phases[2]: phase 'z' is unreachable from 'a'" in found
    assert "phases: phase machine cannot reach a terminal phase from 'a'" in found


def test_every_problem_is_reported_at_once() -> None:
    found = problems(
        {
            "phases": [
                {"id": "a", "require": ["nope"], "next": ["ghost"], "colour": "red"},
                {"id": "a", "next": ["done"]},
                {"id": "b", "next": [], "timeoutMs": "soon"},
            ],
            "maxRework": -1,
            "extra": 1,
        }
    )
    paths = [p.split(":")[0] for p in found]
    for expected in (
        "extra",
        "maxRework",
        "phases[0].colour",
        "phases[0].require[0]",
        "phases[1].id",
        "phases[2].next",
        "phases[2].timeoutMs",
        "phases[0].next[0]",
        "phases[2]",
    ):
        assert expected in paths, (expected, found)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (None, "phases: expected a non-empty list of phases, got null"),
        ([], "phases: expected a non-empty list of phases"),
        ("planning", "phases: expected a non-empty list of phases, got str"),
        ([42], "phases[0]: expected a mapping"),
        ([{"next": ["done"]}], "phases[0].id: expected a phase name"),
        ([{"id": "a", "next": "done"}], "phases[0].next: expected a list of phase names"),
        ([{"id": "a", "next": [{"to": "done", "rework": "yes"}]}], "phases[0].next[0].rework"),
        ([{"id": "a", "next": ["done", "done"]}], "phases[0].next[1]: 'done' is listed twice"),
        ([{"id": "a", "next": ["done"], "terminal": True}], "phases[0].terminal"),
        ([{"id": "done", "next": ["a"]}, {"id": "a", "next": ["done"]}], "phases[0].id"),
    ],
)
def test_shape_errors(data: Any, fragment: str) -> None:
    assert any(fragment in p for p in problems(data)), problems(data)


def test_machine_error_lists_every_problem() -> None:
    with pytest.raises(MachineError) as caught:
        parse_machine([{"id": "a", "next": ["b"]}, {"id": "b", "next": ["a"]}, {"id": "a"}])
    assert len(caught.value.problems) >= 2
    assert "phases[2].id: duplicate" in str(caught.value)


def test_machine_file_yaml_problems_carry_lines(tmp_path: Path) -> None:
    path = tmp_path / "phases.yaml"
    path.write_text(
        "phases:\n"
        "  - id: recon\n"
        "    require: [contract_file]\n"
        "    next: [build]\n"
        "  - id: build\n"
        "    require:\n"
        "      - children_settled\n"
        "      - sunshine\n"
        "    next: [done]\n"
    )
    with pytest.raises(MachineError) as caught:
        load_machine_file(path)
    (problem,) = caught.value.problems
    assert problem.path == "phases[1].require[1]"
    assert problem.line == 8
    assert f"{path}:8: phases[1].require[1]: unknown condition 'sunshine'" in str(caught.value)


def test_machine_file_json_and_yaml_load(tmp_path: Path) -> None:
    data = {"phases": [{"id": "solo", "require": ["always"], "next": ["done"]}]}
    (tmp_path / "m.json").write_text(json.dumps(data))
    (tmp_path / "m.yml").write_text("- id: solo\n  require: [always]\n  next: [done]\n")
    assert load_machine_file(tmp_path / "m.json") == load_machine_file(tmp_path / "m.yml")


def test_machine_file_syntax_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"phases": [\n  {"id": "a",}\n]}')
    with pytest.raises(MachineError, match=r"bad\.json:2: file: not valid JSON"):
        load_machine_file(tmp_path / "bad.json")
    (tmp_path / "bad.yaml").write_text("phases:\n  - id: [a\n    next: b\n")
    with pytest.raises(MachineError, match="not valid YAML"):
        load_machine_file(tmp_path / "bad.yaml")
    with pytest.raises(MachineError, match="cannot read"):
        load_machine_file(tmp_path / "missing.yaml")


def test_inline_bad_json() -> None:
    with pytest.raises(MachineError, match="not valid JSON"):
        parse_inline("[{")
