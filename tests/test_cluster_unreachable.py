"""SPEC §10 'an unreachable cluster address': the launch fails within its bound; SIGTERM
honoured (issue 30, item 8). Before: `legion run --cluster 127.0.0.1:1` sat in ray.init
on the host's main thread for 45 s, SIGTERM unheard, the node `starting` throughout."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from supervisor_helpers import run_cli

from legion_tui.supervisor.backends.ray.cluster import REACH_S

pytestmark = pytest.mark.host

CARD = "---\nname: sleeper\ndescription: d\nkind: exec\ncommand: [sleep, '30']\n---\n"


async def test_an_address_where_nothing_listens_fails_the_launch_at_once(
    tmp_path: Path,
) -> None:
    card = tmp_path / ".legion" / "agents" / "sleeper.md"
    card.parent.mkdir(parents=True)
    card.write_text(CARD)
    started = time.monotonic()
    code, out, err = await run_cli(
        "run", "sleeper", "--task", "x", "--cluster", "127.0.0.1:1", cwd=tmp_path,
        limit=REACH_S + 60,
    )  # fmt: skip
    assert code == 1
    said = "cannot reach the Ray cluster at 127.0.0.1:1: Connection refused"
    assert f"launch of root/sleeper-0 failed: {said}" in err
    assert f"failed · launch failed: {said}" in out
    # A witness, not a timing: the refusal came before the agent's own 30 s could pass.
    assert time.monotonic() - started < 30


async def test_a_silent_address_is_given_up_on_within_the_bound() -> None:
    """A listener whose accept queue is full drops new connections unanswered (as a
    firewall that drops does): the probe gives up at its bound, on the loop."""
    from legion_tui.settings import ClusterSettings
    from legion_tui.supervisor.backends.ray.cluster import reach

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    queued = [socket.create_connection(("127.0.0.1", port), timeout=5)]  # the queue: full
    try:
        with pytest.raises(RuntimeError) as err:
            await reach(ClusterSettings(address=f"127.0.0.1:{port}"), bound=1.0)
        assert str(err.value) == (
            f"cannot reach the Ray cluster at 127.0.0.1:{port}: nothing answered within 1 s"
        )
    finally:
        for sock in (*queued, listener):
            sock.close()
