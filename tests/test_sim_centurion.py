"""A centurion sim orchestrates through the socket API (against a stand-in server)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from process_helpers import launch_spec, until

from legion_tui.phases.verify_blocks import extract_verify_commands
from legion_tui.session.reader import read_session
from legion_tui.sim.agent import SimAgent
from legion_tui.sim.clock import FakeClock
from legion_tui.sim.config import SimConfig
from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.pi.handle import RpcHandle
from legion_tui.supervisor.backends.registry import make_handle

pytestmark = pytest.mark.host


class StandInServer:
    """Answers the ops a centurion uses; refuses `phase --to done` like a strict machine."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.mail_sent = False  # the first wait returns early with mail, like the postman

    def answer(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req["op"]
        if op == "spawn":
            nodes = [
                {"id": f"c{i}", "name": c["name"], "path": f"centurion-0/{c['name']}"}
                for i, c in enumerate(req["children"])
            ]
            return {"ok": True, "result": {"nodes": nodes}}
        if op == "phase" and req["to"] == "done":
            error = {"code": "PHASE_REFUSED", "message": "legal next: implementing"}
            return {"ok": False, "error": error}
        if op == "wait" and not self.mail_sent:
            self.mail_sent = True
            return {"ok": True, "result": {"state": "mail", "message_ids": [1], "text": "hi"}}
        results = {
            "phase": {"phase": req.get("to")},
            "mail": {"message_id": 1},
            "wait": {"state": "settled", "nodes": []},
            "collect": {"text": "done", "verdict": {"ok": True, "reason": "fine"}},
        }
        return {"ok": True, "result": results[op]}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Closed however it ends: 3.11's server.wait_closed does not wait for a handler,
        # and one the loop's end cancelled at its read left its socket to the GC (a
        # ResourceWarning in whichever test ran next on the worker).
        try:
            while line := await reader.readline():
                req = json.loads(line)
                self.requests.append(req)
                reply = {"id": req["id"], **self.answer(req)}
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        finally:
            writer.close()


def _config(tmp_path: Path, socket: Path) -> SimConfig:
    return SimConfig(
        node_id="cent-1",
        name="centurion-0",
        role="centurion",
        session_file=tmp_path / "sessions" / "cent-1.jsonl",
        run_dir=tmp_path,
        cwd=tmp_path,
        socket_path=socket,
        seed=11,
    )


async def test_centurion_contracts_spawns_waits_collects_and_logs_a_refusal(
    tmp_path: Path,
) -> None:
    stand_in = StandInServer()
    socket = tmp_path / "s.sock"
    server = await asyncio.start_unix_server(stand_in.handle, path=str(socket))
    try:
        cfg = _config(tmp_path, socket)
        agent = SimAgent(cfg, clock=FakeClock())
        agent.prompt("Harden the order service.")
        await asyncio.wait_for(agent.wait_idle(), 20.0)
        await agent.close()
    finally:
        server.close()
        await server.wait_closed()

    ops = [(r["op"], r["to"] if r["op"] == "phase" else None) for r in stand_in.requests]
    spawn = next(r for r in stand_in.requests if r["op"] == "spawn")
    names = [c["name"] for c in spawn["children"]]
    assert 2 <= len(names) <= 4
    assert {c["role"] for c in spawn["children"]} <= {"worker", "scout"}
    assert ops == [
        ("phase", "implementing"),
        ("spawn", None),
        *[("mail", None)] * len(names),  # a handoff to each member
        ("wait", None),
        ("wait", None),  # the first one came back early with mail
        ("phase", "reviewing"),
        *[("collect", None)] * len(names),
        ("phase", "verifying"),
        ("phase", "done"),
    ]
    assert {r["from"] for r in stand_in.requests} == {"cent-1"}
    assert [r["name"] for r in stand_in.requests if r["op"] == "collect"] == names
    mails = [r for r in stand_in.requests if r["op"] == "mail"]
    assert [(m["to"], m["kind"]) for m in mails] == [(n, "handoff") for n in names]
    assert all("contracts/centurion-0.md" in m["body"] for m in mails)

    contract = tmp_path / "contracts" / "centurion-0.md"
    assert extract_verify_commands(contract.read_text()).commands == ("true",)

    lines = [json.loads(x) for x in cfg.session_file.read_text().splitlines()]
    errors = [
        e["message"]["content"][0]["text"]
        for e in lines
        if e["type"] == "message"
        and e["message"]["role"] == "toolResult"
        and e["message"]["isError"]
    ]
    assert errors == ["PHASE_REFUSED: legal next: implementing"]
    verdict = read_session(cfg.session_file).verdict
    assert verdict is not None and verdict.ok


async def test_centurion_without_a_supervisor_says_it_could_not_dispatch(tmp_path: Path) -> None:
    cfg = _config(tmp_path, tmp_path / "nobody-listens.sock")
    agent = SimAgent(cfg, clock=FakeClock())
    agent.prompt("Harden the order service.")
    await asyncio.wait_for(agent.wait_idle(), 20.0)
    await agent.close()
    verdict = read_session(cfg.session_file).verdict
    assert verdict is not None and not verdict.ok
    assert verdict.reason is not None and "NO_SUPERVISOR" in verdict.reason


async def test_a_process_centurion_blocked_in_wait_exits_within_1s_of_sigterm(
    tmp_path: Path,
) -> None:
    stand_in = StandInServer()
    stand_in.mail_sent = True
    blocked = asyncio.Event()

    async def never_answer_wait(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            req = json.loads(line)
            stand_in.requests.append(req)
            if req["op"] == "wait":
                blocked.set()
                continue  # the children never settle
            reply = {"id": req["id"], **stand_in.answer(req)}
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
        writer.close()

    spec = launch_spec(tmp_path, role="centurion", name="centurion-0", isolate=True, speed=500.0)
    assert isinstance(spec, LaunchSpec)
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    server = await asyncio.start_unix_server(never_answer_wait, path=str(spec.socket_path))
    handle = make_handle(spec)
    assert isinstance(handle, RpcHandle)
    try:
        await handle.start()
        await asyncio.wait_for(blocked.wait(), 15.0)
        assert handle.pid is not None and handle.child is not None
        os.kill(handle.pid, signal.SIGTERM)
        # Exit 0 is the agent's own answer to SIGTERM (nothing else signals it before the
        # force stop below); the bound only keeps a hang from being silent.
        assert await handle.child.wait(30.0) == 0
        assert await until(lambda: handle.exited is not None)
    finally:
        assert (await handle.stop(force=True)).survivors == []
        server.close()
        await server.wait_closed()
    assert [r["from"] for r in stand_in.requests] == [spec.node_id] * len(stand_in.requests)
