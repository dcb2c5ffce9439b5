"""The socket server under load and hostile clients (issue 14 items 7 and 8).

A real host process (a Supervisor on a tmp project with an in-process simulated worker,
serving its real Unix socket) and real clients from this test: idle clients past the
host's RLIMIT_NOFILE, idle clients past the idle timeout, 1 000 clients at once, 30
clients sending 40 MB lines, requests nested 100 000 deep, and clients whose connect is
refused or reset. Each bound is measured on the host (`/proc/<pid>/fd`, `VmHWM`) and
printed (`pytest -s`) as the figure of the issue's closing note.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import LEGION, cli_env, hosted, run_cli, until

from legion_tui.supervisor.socket import intake
from legion_tui.wire.client import LegionClient
from legion_tui.wire.names import RequestError

pytestmark = pytest.mark.host

# The host: argv project, soft RLIMIT_NOFILE (0: as inherited), idle timeout in seconds.
# One JSON line when it serves; then one JSON line per command on stdin: "spawn" launches
# a quick in-process worker and says how it ended (the host's own agents still work);
# "hog" opens /dev/null until the fds run out, "unhog" closes those; EOF ends it.
HOST = r"""
import asyncio, dataclasses, json, os, resource, sys
from pathlib import Path

project, nofile, idle = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
if nofile:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))

from legion_tui.supervisor.socket import intake
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest
from legion_tui.supervisor.core import Supervisor

intake.DEFAULT_LIMITS = dataclasses.replace(intake.DEFAULT_LIMITS, idle_seconds=idle)
hogged = []


async def settle(sup, node_id):
    loop = asyncio.get_running_loop()
    end = loop.time() + 30
    while sup.names.node(node_id).live:
        if loop.time() > end:
            return "still live after 30 s"
        await asyncio.sleep(0.01)
    return sup.names.node(node_id).status.value


async def spawn(sup, stuck, n):
    (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", "quick", name=f"q{n}")])
    status = await settle(sup, node.id)
    return {"status": status, "error": sup.names.node(node.id).error,
            "stuck_live": sup.names.node(stuck.id).live}


def hog():
    try:
        while True:
            hogged.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        return {"hogged": len(hogged)}


def unhog():
    freed = len(hogged)
    while hogged:
        os.close(hogged.pop())
    return {"freed": freed}


async def main():
    sup = Supervisor(project, session="main", speed=200.0, default_kind="sim")
    await sup.start()
    try:
        stall = {"stall_seconds": 1e7}
        (stuck,) = await sup.launcher.spawn(
            ROOT_ID, [ChildRequest("worker", "hold on", name="stuck", sim=stall)]
        )
        print(json.dumps({"socket": str(sup.socket_path), "stuck": stuck.id}), flush=True)
        n = 0
        while command := (await asyncio.to_thread(sys.stdin.readline)).strip():
            n += 1
            said = await spawn(sup, stuck, n) if command == "spawn" else globals()[command]()
            print(json.dumps(said), flush=True)
    finally:
        await sup.close()


asyncio.run(main())
"""

MiB = 1024 * 1024


@dataclass
class Host:
    proc: asyncio.subprocess.Process
    socket: str
    stuck: str
    stderr: Path

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def sockets(self) -> int:
        fds = Path(f"/proc/{self.proc.pid}/fd")
        links = []
        for fd in fds.iterdir():
            with contextlib.suppress(OSError):  # closed as we look
                links.append(os.readlink(fd))
        return sum(1 for link in links if link.startswith("socket:"))

    def memory(self, field: str) -> int:
        """`VmRSS` / `VmHWM` of the host, in bytes."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no {field} for pid {self.proc.pid}")

    async def command(self, command: str) -> dict[str, Any]:
        """A HOST command ("spawn", "hog", "unhog") and what the host said."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command.encode() + b"\n")
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), 40)
        assert line, self.stderr.read_text()
        said: dict[str, Any] = json.loads(line)
        return said


@asynccontextmanager
async def hosting(project: Path, *, nofile: int = 0, idle: float = 60.0) -> AsyncIterator[Host]:
    errors = project / "host.err"
    with errors.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", HOST, str(project), str(nofile), str(idle),
            cwd=project, env=cli_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=err,
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert first, errors.read_text()
        said = json.loads(first)
        yield Host(proc, said["socket"], said["stuck"], errors)
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 20)
        finally:
            if proc.returncode is None:
                proc.kill()
                await asyncio.wait_for(proc.wait(), 5)
        await proc.stdout.read()


def connect_raw(path: str, wait: float = 0.0) -> socket.socket | None:
    """A connected non-blocking client socket, or None when the listener's queue is full
    (after `wait` seconds: a blocking AF_UNIX connect waits for room in the queue; a
    non-blocking one fails with EAGAIN at once)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(wait if wait > 0 else None)
    if wait <= 0:
        sock.setblocking(False)
    try:
        sock.connect(path)
    except (BlockingIOError, TimeoutError):
        sock.close()
        return None
    sock.setblocking(False)
    return sock


def flood(path: str, count: int, limit: float = 10.0) -> list[socket.socket]:
    """Up to `count` idle clients, each connect waiting for room in the host's queue,
    all within `limit` seconds (a host that stops accepting gets fewer)."""
    deadline = time.monotonic() + limit
    socks = []
    for _ in range(count):
        sock = connect_raw(path, wait=max(deadline - time.monotonic(), 0.001))
        if sock is not None:
            socks.append(sock)
    return socks


async def read_line(sock: socket.socket, limit: float = 20.0) -> bytes:
    """One reply line (b"" at EOF), within `limit` seconds."""
    loop = asyncio.get_running_loop()
    data = b""
    async with asyncio.timeout(limit):
        while not data.endswith(b"\n"):
            try:
                chunk = await loop.sock_recv(sock, 65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return data
            data += chunk
    return data


def said_now(sock: socket.socket) -> bytes | None:
    """What the server has sent on `sock` so far (b"" = closed with nothing), or None
    while it has sent nothing and not closed it."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:
            return data or None
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def code_of(line: bytes) -> str:
    reply = json.loads(line)
    assert reply["ok"] is False and reply["error"]["message"], reply
    code: str = reply["error"]["code"]
    return code


async def status_of(path: str) -> dict[str, Any]:
    async with LegionClient(path) as client:
        return await client.request("status")


async def test_idle_clients_past_the_fd_limit_leave_the_host_serving(tmp_path: Path) -> None:
    """400 idle clients against a host whose soft RLIMIT_NOFILE is 256: the host keeps at
    most its cap of them, refuses the rest with an error line, logs that once, and goes
    on serving verbs, `legion status` and its in-process agents."""
    async with hosting(tmp_path, nofile=256) as host:
        base, base_sockets = host.fds(), host.sockets()
        cap = intake.connection_cap(256)
        clients = flood(host.socket, 400)
        try:
            # Connections are accepted in order: once a later one is answered, every
            # idle one before it has been taken or refused.
            status = await asyncio.wait_for(status_of(host.socket), 20)
            assert status["run_id"]
            # An idle client closed to make room for it may hear so a moment after.
            heard: list[bytes | None] = [None] * len(clients)

            def silent() -> int:
                for i, sock in enumerate(clients):
                    if heard[i] is None:
                        heard[i] = said_now(sock)
                return heard.count(None)

            await until(lambda: silent() <= cap, 10, "every client past the cap to hear why")
            await until(lambda: host.sockets() - base_sockets <= cap, 10, "at most cap held")
            held, still = host.fds() - base, silent()
            codes = Counter(code_of(line) for line in heard if line)
            print(f"\nhost fds: {base} + {held} under {len(clients)} idle clients (cap {cap}); "
                  f"refused {dict(codes)}, silent {still}")  # fmt: skip
            assert held <= cap + 2, (held, cap)  # + a session file the watcher holds
            assert b"" not in heard  # none dropped without an error line
            assert set(codes) <= {"BUSY", "IDLE_CLOSED"}, codes
            # A user's shell: the live host is live, not `gone: orphaned`.
            code, out, err = await run_cli("status", "--session", "main", cwd=tmp_path)
            assert code == 0, err
            assert "orphaned" not in out and "gone" not in out, out
            assert "stuck" in out
            # The host's own agents still start, work and settle.
            after = await host.command("spawn")
            assert after == {"status": "settled", "error": None, "stuck_live": True}, after
            log = host.stderr.read_text()
            print(f"host log: {len(log)} bytes")
            assert log.count("refused") == 1, log
            assert len(log) < 2000, log
        finally:
            for s in clients:
                s.close()


async def test_idle_connections_are_closed_but_a_wait_is_not_idle(tmp_path: Path) -> None:
    idle = 1.5
    async with hosting(tmp_path, idle=idle) as host:
        base, base_sockets = host.fds(), host.sockets()
        started = time.monotonic()
        clients = flood(host.socket, 50)
        assert len(clients) == 50
        waiter = LegionClient(host.socket)
        kept = LegionClient(host.socket)
        try:
            waiting = asyncio.create_task(waiter.request("wait", names=["stuck"], timeout=3 * idle))
            assert (await kept.request("status"))["run_id"]
            await until(lambda: host.sockets() >= base_sockets + 50, what="every client taken")
            held = host.fds() - base
            print(f"\nhost fds: {base} + {held} with 50 idle clients, a wait and a client")
            lines = await asyncio.gather(*(read_line(s, 10) for s in clients))
            closed_after = time.monotonic() - started
            assert [code_of(line) for line in lines] == ["IDLE_CLOSED"] * 50
            ends = await asyncio.gather(*(read_line(s, 5) for s in clients))
            assert ends == [b""] * 50  # ... and closed
            assert closed_after >= idle
            # Everything idle is gone; the wait's connection is not idle.
            await until(lambda: host.sockets() <= base_sockets + 1, what="the idle ones closed")
            print(f"host fds {closed_after:.1f} s later: {base} + {host.fds() - base}")
            result = await asyncio.wait_for(waiting, 20)
            assert result["state"] == "timeout", result
            assert time.monotonic() - started >= 3 * idle
            # A client whose connection timed out while it idled just asks again.
            assert (await kept.request("status"))["run_id"]
        finally:
            for s in clients:
                s.close()
            await waiter.close()
            await kept.close()


async def test_failed_accepts_are_logged_once_and_the_host_recovers(tmp_path: Path) -> None:
    """The host out of fds (opened by something else than connections): each accept fails
    while a client waits; the log says so once, and the client is answered once fds are
    free again."""
    async with hosting(tmp_path, nofile=128) as host:
        client = LegionClient(host.socket)
        try:
            assert (await host.command("hog"))["hogged"] > 0
            asking = asyncio.create_task(client.request("status"))
            # No fd to accept it with: not answered while the fds are held.
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(asyncio.shield(asking), 2.0)
            log = host.stderr.read_text()
            print(f"\nhost log after 2 s of failed accepts: {len(log)} bytes")
            assert log.count("cannot accept") == 1, log[:2000]
            assert len(log) < 2000
            await host.command("unhog")
            assert (await asyncio.wait_for(asking, 10))["run_id"]
        finally:
            await client.close()


async def test_1000_concurrent_clients_all_get_an_answer(tmp_path: Path) -> None:
    async with hosting(tmp_path) as host:
        started = time.monotonic()
        results = await asyncio.wait_for(
            asyncio.gather(*(status_of(host.socket) for _ in range(1000)), return_exceptions=True),
            90,
        )
        took = time.monotonic() - started
        answered = [r for r in results if isinstance(r, dict) and r.get("run_id")]
        failures = Counter(
            f"{type(r).__name__}: {getattr(r, 'code', r)}"
            for r in results
            if isinstance(r, BaseException)
        )
        print(f"\n{len(answered)} of 1000 concurrent clients answered in {took:.1f} s; {failures}")
        assert len(answered) == 1000, failures


async def test_40_mb_lines_from_30_clients_do_not_lift_the_hosts_memory(tmp_path: Path) -> None:
    async with hosting(tmp_path) as host:
        assert (await status_of(host.socket))["run_id"]
        before = host.memory("VmRSS")
        loop = asyncio.get_running_loop()
        chunk = b"x" * MiB

        async def long_line() -> str:
            sock = connect_raw(host.socket)
            assert sock is not None
            try:
                for _ in range(40):
                    await loop.sock_sendall(sock, chunk)
                await loop.sock_sendall(sock, b"\n")
                return code_of(await read_line(sock, 60))
            finally:
                sock.close()

        codes = await asyncio.wait_for(asyncio.gather(*(long_line() for _ in range(30))), 100)
        growth = host.memory("VmHWM") - before
        print(f"\nhost RSS {before / MiB:.0f} MiB, peak +{growth / MiB:.0f} MiB under 30 x 40 MiB "
              f"lines; replies {dict(Counter(codes))}")  # fmt: skip
        assert set(codes) <= {"TOO_LONG", "BUSY"}, codes
        assert growth < 96 * MiB
        assert (await status_of(host.socket))["run_id"]


async def test_requests_held_by_long_waits_are_charged_to_the_budget(tmp_path: Path) -> None:
    """30 `wait`s each carrying 6 MiB: a wait keeps its request while it waits, so only
    as many as the shared budget holds are taken; the others are answered BUSY at once."""
    limits = intake.DEFAULT_LIMITS
    pad = 6 * MiB
    most_held = limits.total_bytes // (pad - limits.free_bytes)
    async with hosting(tmp_path) as host:
        assert (await status_of(host.socket))["run_id"]
        before = host.memory("VmRSS")
        loop = asyncio.get_running_loop()
        line = json.dumps(
            {"id": 1, "op": "wait", "from": "root", "names": ["stuck"], "timeout": 600,
             "pad": "p" * pad}
        ).encode() + b"\n"  # fmt: skip
        socks = [connect_raw(host.socket, wait=5) for _ in range(30)]
        busy: list[socket.socket] = []

        async def ask(sock: socket.socket) -> None:
            await loop.sock_sendall(sock, line)
            if code_of(await read_line(sock, 120)) == "BUSY":
                busy.append(sock)

        asking = [asyncio.create_task(ask(s)) for s in socks if s is not None]
        try:
            await until(lambda: len(busy) >= 30 - most_held, 60, "the refusals")
            growth = host.memory("VmHWM") - before
            print(f"\n{30 - len(busy)} waits held, {len(busy)} refused BUSY; host RSS "
                  f"{before / MiB:.0f} MiB, peak +{growth / MiB:.0f} MiB")  # fmt: skip
            assert growth < 96 * MiB
            # Small requests are never refused for the big ones.
            assert (await status_of(host.socket))["run_id"]
        finally:
            for task in asking:
                task.cancel()
            await asyncio.gather(*asking, return_exceptions=True)
            for sock in socks:
                if sock is not None:
                    sock.close()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (nested(100_000), "TOO_DEEP"),
        (nested(intake.DEFAULT_LIMITS.max_depth), "TOO_DEEP"),  # + the request's own level
        ("[" + "{}," * intake.DEFAULT_LIMITS.max_values + "{}]", "TOO_MANY_VALUES"),
        (json.dumps(["a [ { string ] is one value"] * 1000), None),
        (nested(intake.DEFAULT_LIMITS.max_depth - 1), None),
    ],
)
async def test_deep_or_huge_requests_get_an_error_line(
    tmp_path: Path, payload: str, code: str | None
) -> None:
    async with hosted(tmp_path) as sup:
        sock = connect_raw(str(sup.socket_path))
        assert sock is not None
        loop = asyncio.get_running_loop()
        try:
            line = '{"id": 1, "op": "status", "from": "root", "x": ' + payload + "}\n"
            await loop.sock_sendall(sock, line.encode())
            reply = json.loads(await read_line(sock))
            if code is None:
                assert reply["ok"] is True, reply
            else:
                print(f"\n{len(line)} bytes -> {reply}")
                assert code_of(json.dumps(reply).encode()) == code
            # ... and the same connection is still served.
            await loop.sock_sendall(sock, b'{"id": 2, "op": "status", "from": "root"}\n')
            assert json.loads(await read_line(sock))["ok"] is True
        finally:
            sock.close()


async def test_a_reply_that_cannot_be_utf8_is_still_sent(tmp_path: Path) -> None:
    """A request id with a lone surrogate (`\\ud800`, valid JSON) is echoed escaped: the
    reply could not be encoded as UTF-8, and the connection died without one."""
    async with hosted(tmp_path) as sup:
        sock = connect_raw(str(sup.socket_path))
        assert sock is not None
        loop = asyncio.get_running_loop()
        try:
            await loop.sock_sendall(sock, b'{"id": "\\ud800", "op": "nope", "from": "root"}\n')
            reply = json.loads(await read_line(sock))
            assert reply["id"] == "\ud800" and code_of(json.dumps(reply).encode()) == "UNKNOWN_OP"
        finally:
            sock.close()


def legion_verb(socket_path: str, *args: str) -> tuple[int, str, float]:
    """`legion ARGS` from inside a legion whose socket is `socket_path`: (exit, stderr, s)."""
    env = cli_env() | {"LEGION_SOCKET": socket_path}
    started = time.monotonic()
    done = subprocess.run([LEGION, *args], env=env, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stderr, time.monotonic() - started


async def test_a_full_connection_queue_is_retried_then_one_clear_line(tmp_path: Path) -> None:
    path = str(tmp_path / "full.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(0)  # never accepted: the queue fills at once
    queued: list[socket.socket] = []
    try:
        while (sock := connect_raw(path)) is not None:
            queued.append(sock)
        code, err, took = await asyncio.to_thread(legion_verb, path, "stop", "w")
        print(f"\nexit {code} after {took:.1f} s: {err!r}")
        assert code == 1
        assert err.count("\n") == 1 and err.startswith("legion stop: "), err
        assert "busy" in err and "Traceback" not in err
    finally:
        for sock in queued:
            sock.close()
        listener.close()


async def test_a_reset_connection_is_retried_then_a_clear_error(tmp_path: Path) -> None:
    """A server that closes every connection with the request unread (the kernel resets
    it): the client tries again within its bound, then raises RequestError."""
    path = str(tmp_path / "reset.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    listener.setblocking(False)
    loop = asyncio.get_running_loop()
    resets = 0

    async def reset_all() -> None:
        nonlocal resets
        while True:
            conn, _ = await loop.sock_accept(listener)
            readable = loop.create_future()
            loop.add_reader(conn.fileno(), readable.set_result, None)
            try:
                await readable  # the request has arrived ...
            finally:
                loop.remove_reader(conn.fileno())
            conn.close()  # ... and is dropped unread
            resets += 1

    resetter = asyncio.create_task(reset_all())
    try:
        client = LegionClient(path, retry_seconds=2.0)
        started = time.monotonic()
        with pytest.raises(RequestError) as refused:
            await client.request("status")
        took = time.monotonic() - started
        print(f"\n{resets} resets in {took:.1f} s: {refused.value.code}: {refused.value.message}")
        assert refused.value.code == "DISCONNECTED"
        assert "\n" not in refused.value.message and path in refused.value.message
        assert resets >= 2  # tried again before it gave up
        await client.close()
        # The CLI says it in one line, exit 1.
        code, err, _took = await asyncio.to_thread(legion_verb, path, "stop", "w")
        assert code == 1 and err.count("\n") == 1 and err.startswith("legion stop: "), err
    finally:
        resetter.cancel()
        await asyncio.gather(resetter, return_exceptions=True)
        listener.close()
