"""legion-verify commands run as real processes; a timed-out one is swept with its tree."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from legion_tui.phases.builtin import DEFAULT_MACHINE
from legion_tui.phases.load import parse_machine
from legion_tui.supervisor.teams.verify import (
    VerificationResult,
    needs_verification,
    run_verification,
    verification_gate,
    verify_contract,
)

pytestmark = pytest.mark.host

# A command that leaves a child ignoring SIGTERM and a double-forked setsid daemon, writes
# their pids, and then hangs: only the sweep (group + snapshot + /proc marker) gets them all.
TREE = r"""
import os, signal, subprocess, sys, time
out = sys.argv[1]
stubborn = ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "while True: time.sleep(1)")
child = subprocess.Popen([sys.executable, "-c", stubborn])
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    pid = os.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time\nwhile True: time.sleep(1)"])
    os.write(w, str(pid).encode())
    os._exit(0)
daemon = int(os.read(r, 32))
with open(out, "w") as fh:
    fh.write(f"{child.pid} {daemon}")
while True:
    time.sleep(1)
"""


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def run_id() -> str:
    return f"verify-test-{uuid.uuid4().hex[:8]}"


async def test_passing_and_failing_commands_report_each_exit_code(
    tmp_path: Path, run_id: str
) -> None:
    out = tmp_path / "verify.log"
    result = await run_verification(
        ["echo hello-from-verify", "pwd", "echo oops >&2; exit 3", "true"],
        cwd=tmp_path,
        output_file=out,
        run_id=run_id,
        node_id="lead",
    )
    assert result.outcome == "fail"
    assert [c.exit_code for c in result.commands] == [0, 0, 3, 0]  # all of them ran
    assert result.summary == (
        "verification failed (1 of 4 commands failed): `echo oops >&2; exit 3` exit 3"
    )
    log = out.read_text()
    assert "$ echo hello-from-verify\nhello-from-verify\n[exit 0" in log
    assert f"\n{tmp_path}\n" in log  # ran in the given cwd
    assert "oops" in log and "[exit 3" in log
    assert result.event_data()["commands"][2] == {
        "command": "echo oops >&2; exit 3",
        "exit_code": 3,
        "timed_out": False,
        "seconds": result.commands[2].seconds.__round__(3),
    }

    passing = await run_verification(
        ["true", "test -d ."],
        cwd=tmp_path,
        output_file=tmp_path / "ok.log",
        run_id=run_id,
        node_id="lead",
    )
    assert passing.outcome == "pass"
    assert passing.summary == "verification passed (2 commands)"
    assert not passing.by_contract


async def test_an_empty_block_is_by_contract_never_passed(tmp_path: Path, run_id: str) -> None:
    contract = tmp_path / "contract.md"
    contract.write_text("# Contract\n\n```legion-verify\n# nothing yet\n\n```\n")
    out = tmp_path / "verify.log"
    result = await verify_contract(
        contract, cwd=tmp_path, output_file=out, run_id=run_id, node_id="lead"
    )
    assert result.commands == () and result.blocks == 1
    assert result.by_contract
    assert result.summary == "by contract (0 commands)"
    assert "passed" not in result.summary
    assert result.event_data()["by_contract"] is True
    assert "by contract (0 commands)" in out.read_text()

    missing = await verify_contract(
        tmp_path / "no-such-contract.md",
        cwd=tmp_path,
        output_file=out,
        run_id=run_id,
        node_id="lead",
    )
    assert missing.summary == "by contract (0 commands)" and missing.blocks == 0


async def test_contract_commands_are_extracted_and_run(tmp_path: Path, run_id: str) -> None:
    contract = tmp_path / "contract.md"
    contract.write_text(
        "Acceptance:\n\n```legion-verify\ntouch made-by-verify\ntest -f made-by-verify\n```\n"
    )
    result = await verify_contract(
        contract, cwd=tmp_path, output_file=tmp_path / "v.log", run_id=run_id, node_id="lead"
    )
    assert result.outcome == "pass" and len(result.commands) == 2
    assert (tmp_path / "made-by-verify").exists()


async def test_a_timed_out_command_is_swept_with_its_whole_tree(
    tmp_path: Path, run_id: str
) -> None:
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    pids_file = tmp_path / "pids"
    command = f"{sys.executable} {script} {pids_file}; echo never-here"

    async def fire() -> VerificationResult:
        return await run_verification(
            [command, "echo after"],
            cwd=tmp_path,
            output_file=tmp_path / "v.log",
            run_id=run_id,
            node_id="lead",
            command_timeout=1.5,
        )

    task = asyncio.create_task(fire())
    for _ in range(400):  # learn the pids while they are alive (bounded poll)
        if pids_file.exists() and pids_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    child, daemon = (int(p) for p in pids_file.read_text().split())
    assert alive(child) and alive(daemon)
    result = await task
    assert result.outcome == "fail"
    first = result.commands[0]
    assert first.timed_out and first.exit_code is None and first.survivors == ()
    assert result.commands[1].exit_code == 0
    assert "timed out after" in result.summary
    for _ in range(200):
        if not alive(child) and not alive(daemon):
            break
        await asyncio.sleep(0.01)
    assert not alive(child) and not alive(daemon)
    log = (tmp_path / "v.log").read_text()
    assert "\nnever-here\n" not in log and "[timed out after 1.5s; stopped]" in log


async def test_the_sweep_spares_the_teams_own_processes(tmp_path: Path, run_id: str) -> None:
    # A process of the team itself carries LEGION_NODE_ID=lead: a verification timeout
    # (marker lead.verify) must not touch it.
    env = dict(os.environ, LEGION_RUN_ID=run_id, LEGION_NODE_ID="lead")
    agent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time\nwhile True: time.sleep(1)", env=env
    )
    try:
        result = await run_verification(
            ["sleep 30"],
            cwd=tmp_path,
            output_file=tmp_path / "v.log",
            run_id=run_id,
            node_id="lead",
            command_timeout=0.3,
        )
        assert result.commands[0].timed_out
        assert alive(agent.pid)
    finally:
        agent.kill()
        await asyncio.wait_for(agent.wait(), 5)


# ----- which move runs the verification (G6) ----------------------------------------------


def test_the_default_machine_verifies_when_leaving_verifying() -> None:
    assert verification_gate(None) == "verifying"
    assert verification_gate(DEFAULT_MACHINE) == "verifying"
    assert needs_verification(DEFAULT_MACHINE, "verifying", "done")
    assert needs_verification(DEFAULT_MACHINE, "verifying", "implementing")  # rework edge
    assert not needs_verification(DEFAULT_MACHINE, "reviewing", "verifying")
    assert not needs_verification(DEFAULT_MACHINE, "implementing", "reviewing")


def test_a_declared_machine_moves_the_gate_to_its_own_phase() -> None:
    machine = parse_machine(
        {
            "phases": [
                {"id": "spec", "next": ["impl"]},
                {"id": "impl", "next": ["ship"]},
                {"id": "ship", "next": [{"to": "done", "require": ["verification_passed"]}]},
            ]
        }
    )
    assert verification_gate(machine) == "ship"
    assert needs_verification(machine, "ship", "done")
    assert not needs_verification(machine, "impl", "ship")
    plain = parse_machine({"phases": [{"id": "solo", "next": ["done"]}]})
    assert verification_gate(plain) == "solo" and not needs_verification(plain, "solo", "done")


async def test_an_empty_contract_meeting_the_gate_says_so(tmp_path: Path, run_id: str) -> None:
    result = await run_verification(
        [], cwd=tmp_path, output_file=tmp_path / "v.log", run_id=run_id, node_id="lead"
    )
    assert result.gate_summary(gate_requires_pass=False) == "by contract (0 commands)"
    text = result.gate_summary(gate_requires_pass=True)
    assert text.startswith("by contract (0 commands)") and "gate" in text
    assert "passed (" not in text
