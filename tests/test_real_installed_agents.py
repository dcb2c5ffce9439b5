"""A user who ran `make test` has the pinned agents in `.venv/agents` and none on PATH:
`kind: auto` runs the one installed beside legion, `legion doctor` says which, and pi 1.6
starts on the Node 22 beside it (the machine's Node is 20) — issue 33 item 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from agent_bins import AGENTS_DIR, pi_install
from model_server import ModelServer, Text
from pi_env import MODEL, PROVIDER, pi_env
from process_helpers import by_env
from real_pi_helpers import verdict_line
from supervisor_helpers import GIT_ENV, LEGION

pytestmark = pytest.mark.real

_SYSTEM_PATH = "/usr/bin:/bin"  # git and the machine's Node 20; no agent CLI


def _legion(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LEGION, *args], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )


def test_an_auto_card_runs_the_pi_installed_beside_legion(
    server: ModelServer, tmp_path: Path
) -> None:
    pi = pi_install("1.6")  # the newest line there: auto takes it over 0.73
    home = pi_env("1.6", server.base_url, tmp_path / "pi")
    project = tmp_path / "project"
    project.mkdir()
    env = {**home.env, **GIT_ENV, "PATH": _SYSTEM_PATH, "LEGION_AGENTS_DIR": str(AGENTS_DIR)}
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, env=env, check=True)
    settings = project / ".legion" / "settings.toml"
    settings.parent.mkdir()
    settings.write_text(f'[agent.pi]\nprovider = "{PROVIDER}"\nmodel = "{MODEL}"\n')

    doctor = _legion(project, env, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert (
        f"the kind: auto cards (centurion, scout, worker) → pi ({pi.pi}), not on PATH: the "
        "one installed beside legion" in doctor.stdout
    ), doctor.stdout
    assert f"pi {pi.version}" in doctor.stdout  # its dry start ran on its own Node

    server.script(Text(f"Done.\n{verdict_line('said done')}"))
    run = _legion(project, env, "run", "worker", "--task", "Say done, then give a verdict.")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "root/worker-0: settled · ✓ ok — said done" in run.stdout, run.stdout
    assert len(server.requests()) == 1
    assert by_env("LEGION_RUN_DIR", prefix=str(project / ".legion" / "runs")) == []

    # Told to look nowhere, the same shell has no agent: refused, saying where it looked.
    refused = _legion(project, {**env, "LEGION_AGENTS_DIR": ""}, "run", "worker", "--task", "x")
    assert refused.returncode == 1
    assert "(looked on PATH for: pi, claude, codex)" in refused.stderr, refused.stderr
