"""`legion doctor` as a user runs it: a real subprocess in a project folder."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from agent_bins import PI_LINES, pi_path
from claude_env import claude_env, claude_world
from codex_env import KEY_VAR, codex_env
from codex_env import MODEL as CODEX_MODEL
from codex_env import PROVIDER as CODEX_PROVIDER
from pi_env import MODEL, PROVIDER, pi_env
from process_helpers import put_fake_pi_on_path

pytestmark = pytest.mark.real

LEGION = str(Path(sys.executable).parent / "legion")


def doctor(
    project: Path, *args: str, pi_on_path: bool = True
) -> subprocess.CompletedProcess[str]:
    """`legion doctor` on a PATH the test controls: the system's, plus (by default) a
    `pi` for the bundled `kind: auto` cards to resolve to."""
    path = "/usr/bin:/bin"
    if pi_on_path:
        bin_dir = project / ".bin"
        put_fake_pi_on_path(bin_dir)
        path = f"{bin_dir}:{path}"
    return subprocess.run(
        [LEGION, "doctor", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": path, "HOME": str(project), "LEGION_AGENTS_DIR": ""},
    )


def write(project: Path, rel: str, text: str) -> Path:
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_clean_project_exits_0(tmp_path: Path) -> None:
    result = doctor(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "role cards: 3 loaded (centurion, scout, worker)" in result.stdout
    assert (
        f"the kind: auto cards (centurion, scout, worker) → pi ({tmp_path / '.bin' / 'pi'}), "
        "found on PATH" in result.stdout
    )
    assert result.stdout.rstrip().endswith("no problems, 0 warnings")


def test_no_agent_installed_is_a_problem(tmp_path: Path) -> None:
    """The bundled cards have nothing to run: never `no problems` (issue 9)."""
    result = doctor(tmp_path, pi_on_path=False)
    assert result.returncode == 1
    out = result.stdout
    assert "no agent to run the kind: auto cards (centurion, scout, worker): none is " in out
    assert "npm install -g @mariozechner/pi-coding-agent" in out
    assert out.rstrip().endswith("1 problem, 0 warnings")


def test_a_simulated_default_agent_is_a_warning(tmp_path: Path) -> None:
    write(tmp_path, ".legion/settings.toml", '[agent]\ndefault = "sim"\n')
    result = doctor(tmp_path, pi_on_path=False)
    assert result.returncode == 0, result.stdout
    assert "run the simulated agent ([agent] default = \"sim\")" in result.stdout
    assert result.stdout.rstrip().endswith("no problems, 1 warning")


def test_a_bad_agent_setting_is_a_problem_with_its_line(tmp_path: Path) -> None:
    write(tmp_path, ".legion/settings.toml", '[agent]\ndefault = "pie"\nmodels = "x"\n')
    result = doctor(tmp_path)
    assert result.returncode == 1
    out = result.stdout
    assert (
        ".legion/settings.toml:2: setting 'agent.default': expected one of auto, sim, pi, "
        "claude, codex, exec, got 'pie'" in out
    )
    assert ".legion/settings.toml:3: setting 'agent.models': unknown key" in out
    assert out.rstrip().endswith("2 problems, 0 warnings")


def test_the_older_agent_model_is_a_warning_to_move_it_to_its_kind(tmp_path: Path) -> None:
    write(tmp_path, ".legion/settings.toml",
          '[agent]\ndefault = "pi"\nprovider = "scripted"\n')  # fmt: skip
    result = doctor(tmp_path)  # (the fake pi refuses --provider: that is its problem)
    assert (
        "[agent] provider = 'scripted' apply to the default kind (pi) only: an agent of "
        "another kind (--kind) never gets them" in result.stdout
    )
    assert "move them to [agent.pi]" in result.stdout
    write(tmp_path, ".legion/settings.toml",
          '[agent]\ndefault = "pi"\n[agent.pi]\nprovider = "scripted"\n')  # fmt: skip
    result = doctor(tmp_path)
    assert "[agent] provider" not in result.stdout and "0 warnings" in result.stdout


@pytest.mark.parametrize(
    "text", ["x = " + "[" * 100_000 + "]" * 100_000, "# " + "x" * 2**26], ids=["deep", "64MB"]
)
def test_a_hostile_settings_file_is_one_line(tmp_path: Path, text: str) -> None:
    """Issue 30: 100 000 deep → a RecursionError traceback; 60 MB → read and parsed."""
    write(tmp_path, ".legion/settings.toml", text)
    result = doctor(tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    (line,) = [ln for ln in result.stdout.splitlines() if "settings.toml" in ln]
    assert line.strip() in (
        "error .legion/settings.toml: nested too deeply",
        "error .legion/settings.toml: cannot read: larger than 1048576 bytes",
    )


def test_every_problem_is_listed_with_where_and_how(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".legion/agents/worker.md",
        "---\nname: worker\ndescription: d\nkind: sim\ntimeoutMs: soon\n---\n",
    )
    write(tmp_path, ".legion/agents/scout.md", "---\nname: scout\ndescription: [\n---\n")
    write(
        tmp_path,
        ".legion/agents/lead.md",
        "---\nname: lead\ndescription: d\nkind: sim\nrole: centurion\nphases:\n"
        "  - {id: a, next: [a]}\n---\n",
    )
    write(tmp_path, ".legion/agents/notes.md", "just notes\n")
    write(
        tmp_path,
        ".legion/agents/coder.md",
        "---\nname: coder\ndescription: d\nkind: exec\n"
        'command: [no-such-agent-binary, "{task}"]\n---\n',
    )
    write(tmp_path, ".legion/agents/pi.md", "---\nname: pi-agent\ndescription: d\nkind: pi\n---\n")
    write(tmp_path, ".legion/settings.toml", "[budgets]\nmaxDepth = 'deep'\nmaxFun = 1\n")
    result = doctor(tmp_path, pi_on_path=False)
    assert result.returncode == 1
    out = result.stdout
    for expected in (
        ".legion/agents/worker.md:5: field 'timeoutMs': expected an integer, got 'soon'",
        ".legion/agents/scout.md:4: bad YAML",
        ".legion/agents/lead.md:6: field 'phases': phase machine cannot reach a terminal "
        "phase from 'a'",
        ".legion/agents/notes.md:1: missing frontmatter",
        "card 'coder' (kind exec) runs 'no-such-agent-binary', which is not on PATH",
        "card 'pi-agent' (kind pi) runs 'pi', which is not on PATH",
        ".legion/settings.toml:2: setting 'budgets.maxDepth': expected an integer ≥ 1, got 'deep'",
        ".legion/settings.toml:3: setting 'budgets.maxFun': unknown budget",
        "no agent to run the kind: auto cards (centurion): none is configured",
    ):
        assert expected in out, (expected, out)
    assert out.count("  error ") == 9
    assert out.count("fix: ") >= 9
    assert out.rstrip().endswith("9 problems, 0 warnings")


def test_json_output(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".legion/agents/worker.md",
        "---\nname: worker\ndescription: d\nkind: sim\ncolour: red\n---\n",
    )
    result = doctor(tmp_path, "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    (problem,) = report["problems"]
    assert problem["where"] == ".legion/agents/worker.md:5"
    assert problem["message"] == "field 'colour': unknown field"
    assert problem["check"] == "cards"


def test_exec_card_whose_command_exists(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".legion/agents/shell.md",
        '---\nname: shell\ndescription: d\nkind: exec\n'
        'command: [sh, -c, \'echo "$LEGION_TASK"\']\n---\n',
    )
    result = doctor(tmp_path)
    assert result.returncode == 0, result.stdout
    assert "card 'shell': sh → " in result.stdout


def test_ledgers_and_sockets(tmp_path: Path) -> None:
    from legion_tui.ledger import open_ledger

    good = tmp_path / ".legion" / "runs" / "r1"
    good.mkdir(parents=True)
    (good / "run.json").write_text(json.dumps({"runId": "r1", "sessionName": "main"}))

    async def make() -> None:
        ledger = await open_ledger(good / "legion.db", create=True)
        await ledger.close()

    asyncio.run(make())
    # a stale socket: bound once, nobody listens any more
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(good / "supervisor.sock"))
    stale.close()

    bad = tmp_path / ".legion" / "runs" / "r2"
    bad.mkdir(parents=True)
    (bad / "run.json").write_text("{not json")
    corrupt = bad / "legion.db"
    corrupt.write_bytes(b"this is not a database at all" * 200)
    before = corrupt.read_bytes()

    result = doctor(tmp_path)
    out = result.stdout
    assert result.returncode == 1, out
    assert ".legion/runs/r1/legion.db: ledger opens (0 nodes)" in out
    assert ".legion/runs/r1/supervisor.sock: stale socket: no supervisor is listening" in out
    assert ".legion/runs/r2/run.json: unreadable" in out
    assert "error .legion/runs/r2/legion.db:" in out
    assert out.rstrip().endswith("2 problems, 1 warning")
    assert corrupt.read_bytes() == before  # refused, never overwritten


def test_stale_socket_alone_is_only_a_warning_and_a_live_one_passes(tmp_path: Path) -> None:
    run = tmp_path / ".legion" / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"runId": "r1"}))
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(run / "supervisor.sock"))
    stale.close()
    result = doctor(tmp_path)
    assert result.returncode == 0
    assert "warn  .legion/runs/r1/supervisor.sock: stale socket" in result.stdout

    (run / "supervisor.sock").unlink()
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        live.bind(str(run / "supervisor.sock"))
        live.listen(1)
        result = doctor(tmp_path)
    finally:
        live.close()
    assert result.returncode == 0
    assert ".legion/runs/r1/supervisor.sock: a supervisor is listening" in result.stdout


@pytest.mark.parametrize("flag", ["--help"])
def test_help(tmp_path: Path, flag: str) -> None:
    result = doctor(tmp_path, flag)
    assert result.returncode == 0 and "--json" in result.stdout


def test_run_from_a_subfolder_finds_the_project(tmp_path: Path) -> None:
    write(tmp_path, ".legion/agents/worker.md", "---\nname: worker\n---\n")
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    result = doctor(sub)
    assert result.returncode == 1
    assert ".legion/agents/worker.md:1: field 'description': missing (required)" in result.stdout
    assert f"legion doctor — {tmp_path.resolve()}" in result.stdout


@pytest.mark.parametrize("line", PI_LINES)
def test_a_real_pi_that_cannot_start_fails_doctor_in_its_own_words(
    tmp_path: Path, line: str
) -> None:
    """The real pi, both lines: a card naming a provider pi does not know passes a PATH
    check but can never start — doctor dry-starts it and says why, in pi's words."""
    env = pi_env(line, "http://127.0.0.1:9/v1", tmp_path / "pi").env  # never contacted
    project = tmp_path / "project"
    for name, provider in (("worker", "nosuch"), ("scout", PROVIDER)):
        write(
            project,
            f".legion/agents/{name}.md",
            f"---\nname: {name}\ndescription: d\nkind: pi\nrole: {name}\n"
            f"command: [pi, --provider, {provider}, --model, {MODEL}]\n---\nbody\n",
        )
    result = subprocess.run(
        [LEGION, "doctor"], cwd=project, capture_output=True, text=True, timeout=120, env=env
    )
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "pi for worker: `pi --provider nosuch" in out
    assert 'Unknown provider "nosuch"' in out
    version = "0.73.1" if line == "0.73" else "1.6.0"
    assert f"pi for scout: {pi_path(line)} (pi {version}) starts; model scripted/{MODEL}" in out


def test_a_pi_warning_is_passed_on_whole(tmp_path: Path) -> None:
    """pi 1.6 with no model to use warns over three lines (`… See:` and two documents):
    doctor passes the warning on with the lines that go on from it, not cut at `See:`."""
    pi = pi_env("1.6", "http://127.0.0.1:9/v1", tmp_path / "pi")
    (pi.agent_dir / "models.json").unlink()  # no provider at all
    project = tmp_path / "project"
    write(project, ".legion/agents/worker.md",
          "---\nname: worker\ndescription: d\nkind: pi\nrole: worker\n---\nbody\n")  # fmt: skip
    result = subprocess.run(
        [LEGION, "doctor"], cwd=project, capture_output=True, text=True, timeout=120, env=pi.env
    )
    (warning,) = [ln for ln in result.stdout.splitlines() if "pi said: Warning:" in ln]
    # pi names its documents by their real path (a checkout whose .venv is a link, too)
    docs = (pi.install.prefix / "node_modules" / pi.install.package / "docs").resolve()
    assert warning.endswith(f"See: {docs / 'providers.md'} {docs / 'models.md'}"), warning


def _agent_card(project: Path, name: str, kind: str, command: str) -> None:
    write(
        project,
        f".legion/agents/{name}.md",
        f"---\nname: {name}\ndescription: d\nkind: {kind}\nrole: worker\n"
        f"command: {command}\n---\nbody\n",
    )


def _doctor_in(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LEGION, "doctor"], cwd=project, capture_output=True, text=True, timeout=180, env=env
    )


def test_doctor_dry_starts_the_real_claude_code(tmp_path: Path) -> None:
    """Claude Code in stream-json mode answers `initialize` (version, models, account)
    without a session or a model call: a command with a key passes with its model; one
    with no key and no login is a problem before any spawn."""
    world = claude_world(tmp_path)
    env = claude_env(world, "http://127.0.0.1:9")  # never contacted
    project = tmp_path / "project"
    _agent_card(project, "worker", "claude", "[claude, --model, scripted-model]")
    result = _doctor_in(project, env)
    assert result.returncode == 0, result.stdout + result.stderr
    exe = world.install.bin_dir / "claude"
    assert (
        f"claude for worker: {exe} (Claude Code 2.1.328) starts; model scripted-model"
        in result.stdout
    ), result.stdout
    assert not (world.config_dir / "projects").exists()  # no session was written
    keyless = {k: v for k, v in env.items() if k != "ANTHROPIC_API_KEY"}
    result = _doctor_in(project, keyless)
    assert result.returncode == 1, result.stdout
    assert "has no API key and no login: every turn would fail" in result.stdout


def test_doctor_dry_starts_the_real_codex(tmp_path: Path) -> None:
    """`codex app-server` answers `initialize` and `config/read` (the effective model and
    provider seen from the project): a provider whose key variable is unset is a problem."""
    codex = codex_env("http://127.0.0.1:9/v1", tmp_path / "codex")  # never contacted
    project = tmp_path / "project"
    _agent_card(project, "worker", "codex", "[codex]")
    result = _doctor_in(project, codex.env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        # The bundled auto cards resolve to the first agent on PATH, Codex: one command.
        f"codex for centurion, scout, worker: {codex.exe} (Codex 0.169.0) starts; model "
        f"{CODEX_PROVIDER}/{CODEX_MODEL}" in result.stdout
    ), result.stdout
    assert codex.rollouts() == []  # no thread was started
    keyless = {k: v for k, v in codex.env.items() if k != KEY_VAR}
    result = _doctor_in(project, keyless)
    assert result.returncode == 1, result.stdout
    assert f"reads its key from ${KEY_VAR}, which is not set" in result.stdout
