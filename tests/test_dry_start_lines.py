"""A dry start (`legion doctor`) reads its probe's answer by the one LF framing: a line
longer than asyncio's 64 KiB readline limit before the answer — a big banner, an
extension's stray print — does not end the probe."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from legion_tui.supervisor.backends.dry_starts import pi_dry_start

pytestmark = pytest.mark.host

# A pi stand-in: on the get_state request, one 200 KB line of noise, then the answer.
FAKE_PI = r"""
import json, sys
request = json.loads(sys.stdin.readline())
sys.stdout.write("x" * 200_000 + "\n")
reply = {"type": "response", "command": "get_state", "id": request.get("id"),
         "success": True, "data": {"model": {"provider": "fake", "id": "m1"}}}
sys.stdout.write(json.dumps(reply) + "\n")
sys.stdout.flush()
sys.stdin.read()
"""


def test_an_over_long_line_before_the_answer_does_not_end_the_probe(tmp_path: Path) -> None:
    script = tmp_path / "fake_pi.py"
    script.write_text(FAKE_PI)
    probe = asyncio.run(pi_dry_start([sys.executable, str(script)], {}, str(tmp_path), bound=30))
    assert (probe.error, probe.model) == (None, "fake/m1")
