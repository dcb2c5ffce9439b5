"""SPEC §10 'a card with a placeholder inside an interpreter's script': refused at load
with file:line; `$LEGION_TASK` and `{task_file}` carry a task literally (issue 30, item
6). Before: a card `bash -c 'echo {task}'` given `x; touch pwned` ran `touch pwned`."""

from __future__ import annotations

from pathlib import Path

import pytest

from legion_tui.agents.cards import load_cards
from legion_tui.agents.placeholders import fill, placeholders_in_scripts
from legion_tui.settings import load_settings

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "argv",
    [
        ["bash", "-c", "echo {task}"],
        ["/bin/sh", "-ec", "run '{task}'"],
        ["/usr/bin/env", "FOO=1", "bash", "-lc", "x {task}"],
        ["timeout", "60", "zsh", "-c", "{task}"],
        ["nice", "-n", "5", "bash", "-c", "x {task}"],
        ["ssh", "box", "bash", "-lc", "{task}"],
        ["python3.11", "-c", "print('{task}')"],
        ["node", "--eval", "run(`{task}`)"],
        ["perl", "-e", "print q({task})"],
        ["deno", "eval", "'{task}'"],
    ],
)
def test_the_task_inside_a_script_is_found(argv: list[str]) -> None:
    assert placeholders_in_scripts(argv) == ["task"]


@pytest.mark.parametrize(
    "argv",
    [
        ["my-agent", "--task", "{task}"],  # one literal argument
        ["bash", "-c", 'do-it "$1"', "_", "{task}"],  # an argument after the script
        ["bash", "./agent.sh", "{task}"],  # a script file's arguments are data
        ["bash", "-c", "echo started {name} in {cwd}"],  # legion's own values
        ["python", "agent.py", "-c", "{task}"],  # the script's own -c, not python's
    ],
)
def test_safe_uses_are_not(argv: list[str]) -> None:
    assert placeholders_in_scripts(argv) == []


def test_a_card_with_the_task_in_a_shell_script_is_refused_with_file_and_line(
    tmp_path: Path,
) -> None:
    folder = tmp_path / ".legion" / "agents"
    folder.mkdir(parents=True)
    (folder / "shell.md").write_text(
        "---\nname: shell\ndescription: d\nkind: exec\n"
        "command: [bash, -c, 'echo {task}']\n---\n"
    )
    (problem,) = load_cards(tmp_path).problems
    assert str(problem).startswith(
        ".legion/agents/shell.md:5: field 'command': {task} inside a script the interpreter "
        "runs would be run as code"
    )
    assert "\"$LEGION_TASK\"" in problem.hint and "{task_file}" in problem.hint


def test_the_settings_agent_command_is_held_to_the_same_rule(tmp_path: Path) -> None:
    (tmp_path / ".legion").mkdir()
    (tmp_path / ".legion" / "settings.toml").write_text(
        '[agent]\ndefault = "exec"\ncommand = ["sh", "-c", "run {task}"]\n'
    )
    messages = [p.message for p in load_settings(tmp_path).problems]
    assert "{task} inside a script the interpreter runs would be run as code" in messages


def test_a_task_quoting_a_placeholder_is_filled_once() -> None:
    values = {"task": "say {name} and {task}", "name": "w-0"}
    assert fill(["agent", "{task}", "{name}"], values) == ["agent", "say {name} and {task}", "w-0"]
