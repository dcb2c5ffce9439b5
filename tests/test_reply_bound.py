"""A control verb's reply is bounded (legion_tui.wire.reply_bound): a host that takes
the request and never answers is an error naming the op, the bound and the host's state."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from legion_tui.wire import reply_bound
from legion_tui.wire.client import BlockingClient
from legion_tui.wire.names import RequestError

pytestmark = pytest.mark.unit


def test_each_op_has_its_bound() -> None:
    assert reply_bound.reply_bound("status", {}) == reply_bound.QUICK_S
    assert reply_bound.reply_bound("spawn", {}) == reply_bound.AGENTS_S
    assert reply_bound.reply_bound("wait", {"timeout": 2}) == 2 + reply_bound.WAIT_MARGIN_S
    assert reply_bound.reply_bound("wait", {"timeout": None}) is None  # its purpose
    assert reply_bound.reply_bound("phase", {}) is None  # a verification may run long


@pytest.fixture
def silent_host(tmp_path: Path) -> Iterator[Path]:
    """A socket that takes connections and requests and never answers."""
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    taken: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.05)
        while not stop.is_set():
            try:
                taken.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield path
    stop.set()
    thread.join()
    for conn in taken:
        conn.close()
    server.close()


def test_no_reply_within_the_bound_says_what_the_host_is_doing(
    silent_host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reply_bound, "QUICK_S", 1.5)
    with BlockingClient(silent_host) as client, pytest.raises(RequestError) as err:
        client.request("status")
    assert err.value.code == "NO_REPLY"
    # The peer is this very process, running: its state is read, not guessed.
    assert err.value.message in (
        f"the host (pid {os.getpid()}) did not answer `status` within 1.5 s; it is running (R)",
        f"the host (pid {os.getpid()}) did not answer `status` within 1.5 s; it is sleeping (S)",
    )
