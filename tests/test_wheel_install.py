"""The package a Python user installs (issue 33 item 1): a wheel built from the source
tree holds everything `legion` needs (the bundled cards, the stylesheets, the entry
points), and, installed into a venv of its own, runs from a directory that has nothing
to do with this repository — `--version`, `doctor`, a headless demo — and leaves that
directory's repository clean.

The new venv reaches the dependencies through the test venv's site-packages (a `.pth`
line: its own `.pth` files, the editable install of this checkout among them, are not
read), so what is imported as `legion_tui` is the wheel's copy, never the source tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from supervisor_helpers import git

pytestmark = pytest.mark.host

REPO = Path(__file__).resolve().parent.parent
# The source a wheel is built from, as a fresh clone has it (git's own files, the venv,
# build output and caches are not part of it).
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis",
    ".soak", ".legion", "snapshots", "tests", "bench",
)  # fmt: skip
BOUND = 300.0  # a wheel build fetches its build backend into an isolated environment


def run(argv: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=BOUND, check=False)  # fmt: skip
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


def test_the_wheel_installs_and_runs_from_an_unrelated_directory(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, source], tmp_path)
    (wheel,) = dist.glob("legion_tui-*.whl")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], tmp_path)
    # A user's shell: this venv first on PATH, nothing of the test's Python or legion.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LEGION_", "PYTHON"))}
    env["PATH"] = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    python = venv / "bin" / "python"
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    tmp_path, env).strip())  # fmt: skip
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel], tmp_path, env)
    # After the install: with the test venv in sight, pip would take the editable install
    # of this checkout for legion-tui already there.
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    git(elsewhere, "commit", "-q", "--allow-empty", "-m", "first")
    legion = venv / "bin" / "legion"
    where = run([python, "-c", "import legion_tui; print(legion_tui.__file__)"], elsewhere, env)
    assert Path(where.strip()).is_relative_to(venv), where  # the wheel's copy
    assert run([legion, "--version"], elsewhere, env).strip() == "legion 0.1.0"
    doctor = subprocess.run([legion, "doctor"], cwd=elsewhere, env=env, capture_output=True,
                            text=True, timeout=BOUND, check=False)  # fmt: skip
    assert doctor.returncode in (0, 1) and "Traceback" not in doctor.stderr, doctor.stderr
    assert doctor.stdout.strip(), "doctor said nothing"
    summary = run([legion, "demo", "--headless", "--duration", "5"], elsewhere, env)
    assert "agents" in summary or "nodes" in summary, summary
    status = git(elsewhere, "status", "--porcelain")
    assert status == "", status  # the demo's run is excluded from the user's git status
