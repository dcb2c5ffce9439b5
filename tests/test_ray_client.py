"""A `ray://host:port` address (issue 15): the host reaches the cluster through Ray Client
(`legion-tui[ray]` pulls `ray[client]`, i.e. grpcio). A real local head started with its
client server (`ray_client_server_port`, what `ray start --head --ray-client-server-port
P` starts) and one worker node; `legion run --cluster ray://127.0.0.1:P` as a user's shell
runs it, its sim worker placed, mirrored and settled through the client connection."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray.cluster_utils import Cluster
from supervisor_helpers import LEGION

pytestmark = [
    pytest.mark.ray,
    pytest.mark.timeout(180),
    # Ray's head leaves its client server's log file open (ray/_private/node.py), not ours.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def client_address() -> Iterator[str]:
    port = _free_port()
    head = {"num_cpus": 0, "include_dashboard": False, "ray_client_server_port": port}
    # The head's client proxy starts one Python server per client and gives it 30 s to
    # answer; on this 2-core machine inside a full run that start took longer once (the
    # proxy gave up: "Starting Ray client server failed"). Ray's own bound, read by the
    # head's processes from their environment: still a bound, with room for a busy box.
    #
    # gRPC's fork support off in the head's processes (gRPC's own switch, read from their
    # environment): the proxy starts each client's server by fork with a preexec_fn while
    # its gRPC threads run. In 3 of 10 whole-suite runs under load the child died before
    # its exec: 10 ms after the fork a new thread of the child logged "Epoll1Poller …
    # epoll_wait error: Bad file descriptor" to the server's log, and the proxy "SpecificServer
    # startup failed" — read as gRPC's fork handling restarting its poller in the child, whose
    # epoll file the fork's close_fds then closed. Every proxy log of those ten runs says
    # "skipping fork() handlers" (fork support on); with this switch none does. The child
    # only execs: it needs no gRPC.
    settings = {"RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "120", "GRPC_ENABLE_FORK_SUPPORT": "0"}
    with pytest.MonkeyPatch.context() as env:  # restored however the cluster's start ends
        for key, value in settings.items():
            env.setenv(key, value)
        made = Cluster(initialize_head=True, head_node_args=head)
        made.add_node(num_cpus=2)
        made.wait_for_nodes()
        try:
            yield f"ray://127.0.0.1:{port}"
        finally:
            made.shutdown()


def test_legion_run_on_a_ray_client_address_settles_its_agent_there(
    tmp_path: Path, client_address: str
) -> None:
    done = subprocess.run(
        [LEGION, "run", "worker", "--kind", "sim", "--speed", "50", "--cluster",
         client_address, "--task", "anything"],
        cwd=tmp_path, capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "root/worker-0: settled · ✓ ok" in done.stdout, done.stdout
    # Ray Client's own words: the connection went through the client server.
    assert "client_builder" in done.stderr, done.stderr
    (mirror,) = (tmp_path / ".legion" / "runs").glob("*/sessions/*.jsonl")
    assert not mirror.is_symlink() and b'"role":"assistant"' in mirror.read_bytes()
