"""SPEC §10 'the host is stopped (SIGSTOP)': every client verb returns within its bound,
naming the host's state (issue 30, item 7). Before: `status`, `stop`, `spawn` and `wait
--timeout 2` against a stopped host hung until killed (30 s here, by `timeout`)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from supervisor_helpers import LEGION, cli_env, git

pytestmark = pytest.mark.host

# What a verb may take to notice: one look at the host a second, plus its own start.
NOTICE_BOUND = 15.0


def test_every_verb_names_a_stopped_host_instead_of_hanging(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "first")
    host = subprocess.Popen(
        [LEGION, "run", "--kind", "sim", "worker", "--task", "slowly", "--speed", "0.01"],
        cwd=tmp_path, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # Until the host serves: `status` answers (bounded by the deadline).
        deadline = time.monotonic() + 60
        status = [LEGION, "status"]
        while subprocess.run(status, cwd=tmp_path, env=cli_env(), capture_output=True,
                             timeout=NOTICE_BOUND).returncode != 0:  # fmt: skip
            assert time.monotonic() < deadline, "the host never answered `legion status`"
        os.kill(host.pid, signal.SIGSTOP)
        for verb in (
            ["status"],
            ["wait", "--timeout", "2"],
            ["stop", "worker-0"],
            ["spawn", "worker", "--task", "another", "--kind", "sim"],
        ):
            done = subprocess.run([LEGION, *verb], cwd=tmp_path, env=cli_env(),
                                  capture_output=True, text=True, timeout=NOTICE_BOUND)  # fmt: skip
            assert done.returncode != 0, verb
            said = (f"the host (pid {host.pid}) is stopped (T) and answers nothing until it "
                    f"is resumed: kill -CONT {host.pid}")  # fmt: skip
            assert said in done.stderr, (verb, done.stderr)
    finally:
        os.kill(host.pid, signal.SIGCONT)
        host.terminate()
        host.wait(timeout=60)
