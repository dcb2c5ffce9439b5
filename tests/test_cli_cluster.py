"""`--cluster` on the hosting verbs reaches the host: an address it cannot use fails the
launch in Ray's own words, and the run exits 1 at once (nothing waits on a dead address)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from supervisor_helpers import LEGION

pytestmark = pytest.mark.host


def test_legion_run_on_a_cluster_it_cannot_reach_fails_clearly(tmp_path: Path) -> None:
    done = subprocess.run(
        [LEGION, "run", "worker", "--kind", "sim", "--cluster", "ray://127.0.0.1:9",
         "--task", "anything"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done
    assert "launch failed" in done.stdout and "Ray" in done.stdout, done.stdout
