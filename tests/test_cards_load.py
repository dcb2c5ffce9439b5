"""Role cards: bundled ones, project overrides, and every kind of broken card."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from legion_tui.agents import cards as cards_module
from legion_tui.agents.cards import CARD_FIELDS, CardError, load_cards
from legion_tui.phases import DEFAULT_MACHINE

pytestmark = pytest.mark.unit


def write_card(project: Path, file: str, text: str) -> Path:
    folder = project / ".legion" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file
    path.write_text(text)
    return path


def problem_lines(project: Path) -> list[str]:
    return [str(p) for p in load_cards(project).problems]


def test_bundled_cards_are_valid_auto_cards(tmp_path: Path) -> None:
    """The bundled cards never fake work: `auto` resolves to a real agent at launch."""
    cards = load_cards(tmp_path)
    assert cards.problems == ()
    assert cards.names == ("centurion", "scout", "worker")
    for card in cards:
        assert card.bundled and card.kind == "auto" and card.command == ()
        assert card.role == card.name
        assert card.description and len(card.prompt) > 200
        assert not card.prompt.startswith("---")
    centurion = cards.get("centurion")
    assert centurion.worktree and centurion.phases is None  # a machine is declared by root
    assert cards.get("scout").renewable is False
    assert cards.get("scout").tool_timeout_ms == 600_000
    assert cards.get("worker").max_subagent_depth == 0


def test_project_card_overrides_bundled_by_name(tmp_path: Path) -> None:
    write_card(
        tmp_path,
        "my-worker.md",  # the file name does not matter, the card's name does
        "---\nname: worker\ndescription: runs my script\nkind: exec\n"
        'command: [./agent.sh, "{task}", --log, "{session_file}", "{cwd}/{name}", "${HOME}"]\n'
        "tools: read, bash\ntimeoutMs: 1000\n---\nDo it.\n",
    )
    write_card(tmp_path, "reviewer.md", "---\nname: reviewer\ndescription: r\nkind: sim\n---\n")
    cards = load_cards(tmp_path)
    assert cards.problems == ()
    worker = cards.get("worker")
    assert not worker.bundled and worker.kind == "exec"
    assert worker.source == ".legion/agents/my-worker.md"
    assert worker.tools == ("read", "bash")
    assert worker.prompt == "Do it."
    assert worker.argv(task="fix {x}", session_file="/s.jsonl", cwd="/p", name="w-0") == [
        "./agent.sh",
        "fix {x}",
        "--log",
        "/s.jsonl",
        "/p/w-0",
        "${HOME}",  # a shell variable, not a placeholder: left for the shell
    ]
    assert cards.get("reviewer").role == "worker"  # a non-role name plays a worker
    assert cards.get("centurion").bundled


def test_bad_yaml_reports_the_file_line(tmp_path: Path) -> None:
    write_card(tmp_path, "worker.md", "---\nname: worker\ndescription: [oops\nkind: sim\n---\n")
    (problem,) = load_cards(tmp_path).problems
    assert problem.path == ".legion/agents/worker.md"
    assert problem.line == 4  # YAML notices the unclosed list on the next line
    assert str(problem).startswith(".legion/agents/worker.md:4: bad YAML:")


def test_bad_yaml_indentation_line(tmp_path: Path) -> None:
    write_card(tmp_path, "w.md", "---\nname: w\ndescription: d\nkind: sim\n  tools: x\n---\n")
    (problem,) = load_cards(tmp_path).problems
    assert problem.line == 5 and "bad YAML" in problem.message


def test_missing_frontmatter(tmp_path: Path) -> None:
    write_card(tmp_path, "worker.md", "name: worker\nkind: sim\n")
    write_card(tmp_path, "open.md", "---\nname: open\ndescription: d\nkind: sim\n")
    assert problem_lines(tmp_path) == [
        ".legion/agents/open.md:4: frontmatter is not closed: no second '---' line",
        ".legion/agents/worker.md:1: missing frontmatter: a role card starts with a '---' line",
    ]


def test_unknown_field_points_at_its_line(tmp_path: Path) -> None:
    write_card(
        tmp_path,
        "worker.md",
        "---\nname: worker\ndescription: d\nkind: sim\nplacement: split-down\n---\n",
    )
    (problem,) = load_cards(tmp_path).problems
    assert str(problem) == ".legion/agents/worker.md:5: field 'placement': unknown field"
    assert all(f in problem.hint for f in CARD_FIELDS)


def test_wrong_type(tmp_path: Path) -> None:
    write_card(
        tmp_path,
        "worker.md",
        "---\nname: worker\ndescription: d\nkind: sim\ntimeoutMs: soon\nworktree: maybe\n"
        "command: run-me\nmaxSubagentDepth: -1\n---\n",
    )
    assert problem_lines(tmp_path) == [
        ".legion/agents/worker.md:5: field 'timeoutMs': expected an integer, got 'soon'",
        ".legion/agents/worker.md:6: field 'worktree': expected true or false, got 'maybe'",
        ".legion/agents/worker.md:7: field 'command': expected a list of strings, got 'run-me'",
        ".legion/agents/worker.md:8: field 'maxSubagentDepth': expected an integer ≥ 0, got -1",
    ]


def test_invalid_enum_values(tmp_path: Path) -> None:
    write_card(
        tmp_path, "worker.md", "---\nname: worker\ndescription: d\nkind: docker\nrole: boss\n---\n"
    )
    assert problem_lines(tmp_path) == [
        ".legion/agents/worker.md:4: field 'kind': expected one of auto, sim, pi, claude, "
        "codex, exec, got 'docker'",
        ".legion/agents/worker.md:5: field 'role': expected one of root, centurion, worker, "
        "scout, got 'boss'",
    ]


def test_permissions_is_one_of_three_policies(tmp_path: Path) -> None:
    card = "---\nname: worker\ndescription: d\nkind: claude\npermissions: {}\n---\n"
    write_card(tmp_path, "worker.md", card.format("allowed-tools"))
    assert load_cards(tmp_path).get("worker").permissions == "allowed-tools"
    write_card(tmp_path, "worker.md", card.format("sometimes"))
    assert problem_lines(tmp_path) == [
        ".legion/agents/worker.md:5: field 'permissions': expected one of ask, allowed-tools, "
        "never-ask, got 'sometimes'",
    ]
    from legion_tui.settings import parse_settings

    settings, problems = parse_settings('[agent]\npermissions = "never-ask"\n', "s.toml")
    assert problems == [] and settings.agent.permissions == "never-ask"
    _settings, problems = parse_settings('[agent]\npermissions = "yes"\n', "s.toml")
    assert [p.key for p in problems] == ["agent.permissions"]


def test_missing_required_and_duplicate_fields(tmp_path: Path) -> None:
    write_card(tmp_path, "x.md", "---\nname: x\nname: y\n---\n")
    lines = problem_lines(tmp_path)
    assert ".legion/agents/x.md:1: field 'description': missing (required)" in lines
    assert ".legion/agents/x.md:1: field 'kind': missing (required)" in lines
    assert ".legion/agents/x.md:3: field 'name': duplicate field (first on line 2)" in lines


def test_exec_card_needs_a_command_and_known_placeholders(tmp_path: Path) -> None:
    write_card(tmp_path, "a.md", "---\nname: a\ndescription: d\nkind: exec\n---\n")
    write_card(
        tmp_path,
        "b.md",
        '---\nname: b\ndescription: d\nkind: exec\ncommand: [x, "{prompt}"]\n---\n',
    )
    lines = problem_lines(tmp_path)
    assert lines == [
        ".legion/agents/a.md:4: field 'command': missing: a kind exec card needs a command "
        "(argv list)",
        ".legion/agents/b.md:5: field 'command': unknown placeholder {prompt}",
    ]


def test_invalid_phases_point_at_the_item(tmp_path: Path) -> None:
    write_card(
        tmp_path,
        "lead.md",
        "---\n"  # 1
        "name: lead\n"  # 2
        "description: d\n"  # 3
        "kind: sim\n"  # 4
        "role: centurion\n"  # 5
        "phases:\n"  # 6
        "  - id: recon\n"  # 7
        "    require: [contract_file, luck]\n"  # 8
        "    next: [build]\n"  # 9
        "  - id: build\n"  # 10
        "    next: [recon]\n"  # 11
        "---\n",
    )
    assert problem_lines(tmp_path) == [
        ".legion/agents/lead.md:6: field 'phases': phase machine cannot reach a terminal "
        "phase from 'recon'",
        ".legion/agents/lead.md:8: field 'phases[0].require[1]': unknown condition 'luck' "
        "(known: contract_file, children_present, children_settled, children_none_failed, "
        "verdict_ok, verdict_not_ok, verification_passed, verification_failed, "
        "rework_available, children_all_failed, always)",
    ]


def test_valid_phases_on_a_centurion_card(tmp_path: Path) -> None:
    text = "---\nname: centurion\ndescription: d\nkind: sim\nphases:\n"
    for spec in DEFAULT_MACHINE.to_dict()["phases"]:
        text += f"  - {spec!r}\n".replace("'", '"')
    write_card(tmp_path, "centurion.md", text + "---\n")
    cards = load_cards(tmp_path)
    assert cards.problems == ()
    assert cards.get("centurion").phases == DEFAULT_MACHINE


def test_phases_on_a_worker_card_are_refused(tmp_path: Path) -> None:
    write_card(
        tmp_path,
        "worker.md",
        "---\nname: worker\ndescription: d\nkind: sim\nphases:\n  - {id: a, next: [done]}\n---\n",
    )
    assert problem_lines(tmp_path) == [
        ".legion/agents/worker.md:5: field 'phases': phases belong to a centurion team"
    ]


def test_broken_override_is_not_replaced_by_the_bundled_card(tmp_path: Path) -> None:
    write_card(tmp_path, "worker.md", "---\nname: worker\ndescription: d\nkind: sim\nx: 1\n---\n")
    cards = load_cards(tmp_path)
    assert "worker" not in cards
    with pytest.raises(CardError) as caught:
        cards.get("worker")
    assert "nothing spawned" in str(caught.value)
    assert ".legion/agents/worker.md:5: field 'x': unknown field" in str(caught.value)
    assert caught.value.problems == cards.problems
    with pytest.raises(CardError, match="no role card named 'ghost'"):
        cards.get("ghost")
    assert cards.get("scout").bundled  # the other cards are unaffected


def test_two_project_files_with_one_name_are_both_refused(tmp_path: Path) -> None:
    write_card(tmp_path, "a.md", "---\nname: helper\ndescription: d\nkind: sim\n---\n")
    write_card(tmp_path, "b.md", "---\nname: helper\ndescription: d\nkind: sim\n---\n")
    cards = load_cards(tmp_path)
    assert "helper" not in cards
    assert [str(p) for p in cards.problems] == [
        ".legion/agents/b.md: field 'name': card 'helper' is already defined in .legion/agents/a.md"
    ]


def test_not_utf8_and_unreadable(tmp_path: Path) -> None:
    path = write_card(tmp_path, "bin.md", "")
    path.write_bytes(b"---\nname: \xff\n---\n")
    assert problem_lines(tmp_path) == [".legion/agents/bin.md: not UTF-8 text"]
    path.unlink()
    (tmp_path / ".legion" / "agents" / "folder.md").mkdir()
    assert problem_lines(tmp_path) == [".legion/agents/folder.md: cannot read: Is a directory"]
    (tmp_path / ".legion" / "agents" / "folder.md").rmdir()
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    locked = write_card(tmp_path, "locked.md", "---\nname: locked\n---\n")
    locked.chmod(0)
    try:
        assert problem_lines(tmp_path) == [
            ".legion/agents/locked.md: cannot read: Permission denied"
        ]
    finally:
        locked.chmod(0o600)


@pytest.mark.parametrize("loader", [yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)])
def test_lines_are_the_same_with_either_yaml_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: type[yaml.SafeLoader]
) -> None:
    monkeypatch.setattr(cards_module, "YAML_LOADER", loader)
    write_card(tmp_path, "a.md", "---\nname: a\ndescription: [oops\nkind: sim\n---\n")
    write_card(tmp_path, "b.md", "---\nname: b\ndescription: d\nkind: sim\nbogus: 1\n---\n")
    assert [(p.path, p.line) for p in load_cards(tmp_path).problems] == [
        (".legion/agents/a.md", 4),
        (".legion/agents/b.md", 5),
    ]
