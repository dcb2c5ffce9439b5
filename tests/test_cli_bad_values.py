"""Bad option values are usage errors before anything happens (issue 14 item 23): an
invalid `--session` printed a traceback, `--timeout nan` waited "after nans", `--name ''`
was silently auto-numbered, 100 000 nested `[` in `--phases` died of RecursionError."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from supervisor_helpers import cli_env

CASES = [
    (["status", "--session", "../x"], "argument --session: invalid session name '../x'"),
    (["tui", "--session", "a/b"], "argument --session: invalid session name 'a/b'"),
    (["run", "worker", "--task", "t", "--session", ".x"], "invalid session name '.x'"),
    (["wait", "--timeout", "nan"], "argument --timeout: seconds must be finite and ≥ 0"),
    (["wait", "--timeout", "-5"], "seconds must be finite and ≥ 0, got '-5'"),
    (["spawn", "worker", "--task", "t", "--name", ""], "argument --name: a name cannot be empty"),
    (["run", "worker", "--task", "t", "--name", " "], "argument --name: a name cannot be empty"),
]


def _legion(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "legion_tui.cli", *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(("args", "said"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_bad_value_is_a_usage_error_and_touches_nothing(
    tmp_path: Path, args: list[str], said: str
) -> None:
    done = _legion(tmp_path, *args)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / ".legion").exists()  # nothing created


@pytest.mark.parametrize("suffix", [".json", ".yml"])
def test_phases_nested_absurdly_deep_is_a_clear_refusal(tmp_path: Path, suffix: str) -> None:
    deep = tmp_path / f"deep{suffix}"
    deep.write_text("[" * 100_000, encoding="utf-8")
    done = _legion(tmp_path, "run", "centurion", "--kind", "sim", "--task", "t",
                   "--phases", str(deep))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "invalid phase machine" in done.stderr
    assert "nested too deeply" in done.stderr or "maximum nesting depth" in done.stderr
