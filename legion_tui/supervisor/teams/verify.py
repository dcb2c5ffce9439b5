"""Running a contract's `legion-verify` commands (SPEC §6.4, upstream G6 and #371).

The phases package reads the commands out of the contract (`extract_verify_commands`);
this module runs them, one after another, each:

- as `/bin/sh -c COMMAND` in the team's worktree (or cwd), through the process layer
  (own session, parent-death signal, pidfd exit), with stdout+stderr appended to ONE
  output file, each command introduced by a `$ COMMAND` line and closed by its exit;
- with its own time limit; on expiry the whole tree of that command is swept (SIGKILL to
  its group, its snapshotted descendants and everything carrying its run marker) — a
  test runner's forked workers must not outlive a timed-out verification;
- under a marker node id of its own (`<node>.verify`), so the sweep's `/proc` scan can
  never hit the team's own agent processes, which carry the team's node id.

An empty block (or none) is reported as `by contract (0 commands)` — never as "passed":
the parent must be able to tell "ran and passed" from "nothing to run" (upstream #371).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from legion_tui import receipts
from legion_tui.phases.builtin import DEFAULT_MACHINE
from legion_tui.phases.machine import Machine
from legion_tui.phases.verify_blocks import VerifyBlocks, extract_verify_commands
from legion_tui.supervisor.processes.process import spawn_child
from legion_tui.supervisor.processes.sweep import sweep
from legion_tui.wire.names import ENV_NODE_ID, ENV_RUN_ID, ENV_SOCKET

__all__ = [
    "DEFAULT_COMMAND_TIMEOUT",
    "VERIFY_CONDITIONS",
    "CommandResult",
    "VerificationResult",
    "needs_verification",
    "run_verification",
    "verification_gate",
    "verify_contract",
]

# Upstream's tool bound (toolTimeoutMs 600000): one hung probe must not hold a team.
DEFAULT_COMMAND_TIMEOUT = 600.0
SHELL = "/bin/sh"

Outcome = Literal["pass", "fail"]
VERIFY_CONDITIONS = frozenset({"verification_passed", "verification_failed"})
LEGACY_GATE = "verifying"



def verify_marker(node_id: str) -> str:
    """The node id a team's `legion-verify` commands run under: the stop sweep's `/proc`
    scan finds them by it (no agent handle owns them)."""
    return f"{node_id}.verify"

def verification_gate(machine: Machine | None) -> str:
    """The phase that runs `legion-verify` (upstream G6, #358): the one the machine says
    judges success; `verifying` for no machine or a machine with no exit to `done`."""
    found = machine.verification_phase() if machine is not None else None
    return found or LEGACY_GATE


def needs_verification(machine: Machine | None, current: str, target: str) -> bool:
    """Does moving `current → target` need a fresh verification result? Only a move out
    of the gate phase whose rules mention `verification_passed`/`verification_failed`."""
    if current != verification_gate(machine):
        return False
    spec = (machine or DEFAULT_MACHINE).phase(current)
    if spec is None:
        return False
    return not VERIFY_CONDITIONS.isdisjoint(spec.exit_requires(target))


@dataclass(frozen=True, slots=True)
class CommandResult:
    command: str
    exit_code: int | None  # None: it was stopped at its time limit
    seconds: float
    timed_out: bool = False
    survivors: tuple[int, ...] = ()  # pids the sweep could not kill (should be empty)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def describe(self) -> str:
        if self.timed_out:
            return f"`{self.command}` timed out after {self.seconds:.0f}s"
        return f"`{self.command}` exit {self.exit_code}"


@dataclass(frozen=True, slots=True)
class VerificationResult:
    outcome: Outcome
    commands: tuple[CommandResult, ...]
    output_file: Path
    blocks: int = 0  # `legion-verify` blocks found in the contract

    @property
    def by_contract(self) -> bool:
        """Nothing ran: the gate was satisfied by an empty contract, not by a test run."""
        return not self.commands

    @property
    def summary(self) -> str:
        if self.by_contract:
            return receipts.VERIFY_BY_CONTRACT
        failed = [c for c in self.commands if not c.ok]
        if not failed:
            return receipts.verification_passed(len(self.commands))
        details = "; ".join(c.describe() for c in failed)
        return f"{receipts.verification_failed(len(failed), len(self.commands))}: {details}"

    def gate_summary(self, gate_requires_pass: bool) -> str:
        """`summary`, plus — when nothing ran and the machine's completion gate asks for
        `verification_passed` — the plain statement that an empty contract met it."""
        if self.by_contract and gate_requires_pass:
            return receipts.verify_gate_by_contract()
        return self.summary

    def event_data(self) -> dict[str, Any]:
        """The `verification_result` event's data."""
        return {
            "outcome": self.outcome,
            "by_contract": self.by_contract,
            "summary": self.summary,
            "output_file": str(self.output_file),
            "commands": [
                {
                    "command": c.command,
                    "exit_code": c.exit_code,
                    "timed_out": c.timed_out,
                    "seconds": round(c.seconds, 3),
                }
                for c in self.commands
            ],
        }


def _env(run_id: str, marker: str) -> dict[str, str]:
    env = dict(os.environ)
    env[ENV_RUN_ID] = run_id
    env[ENV_NODE_ID] = marker
    # A verification command is not an agent: it gets no way to the supervisor.
    env.pop(ENV_SOCKET, None)
    return env


def _note(output_file: Path, text: str) -> None:
    with output_file.open("a", encoding="utf-8") as handle:
        handle.write(text)


async def _run_one(
    command: str,
    *,
    cwd: Path,
    output_file: Path,
    env: dict[str, str],
    run_id: str,
    marker: str,
    limit: float,
) -> CommandResult:
    _note(output_file, f"$ {command}\n")
    started = time.monotonic()
    child = await spawn_child([SHELL, "-c", command], env=env, cwd=cwd, log_path=output_file)
    try:
        code = await child.wait(limit)
        if code is not None:
            seconds = time.monotonic() - started
            _note(output_file, f"[exit {code} after {seconds:.1f}s]\n\n")
            return CommandResult(command, code, seconds)
        report = await sweep(
            root=child.process,
            run_id=run_id,
            node_ids=[marker],
            force=True,
            root_exit=child.exited_future(),
        )
        seconds = time.monotonic() - started
        _note(output_file, f"[timed out after {limit:g}s; stopped]\n\n")
        return CommandResult(
            command, None, seconds, timed_out=True, survivors=tuple(report.survivors)
        )
    finally:
        await child.aclose()


async def run_verification(
    commands: Sequence[str] | VerifyBlocks,
    *,
    cwd: Path,
    output_file: Path,
    run_id: str,
    node_id: str,
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
) -> VerificationResult:
    """Run every command (all of them: the report lists each exit code), in order.

    `pass` when every command exits 0 — or when there are none, which `summary` reports
    as `by contract (0 commands)`. The output file is created even then, saying so.
    """
    blocks = commands.blocks if isinstance(commands, VerifyBlocks) else 0
    todo = tuple(commands.commands if isinstance(commands, VerifyBlocks) else commands)
    output_file.parent.mkdir(parents=True, exist_ok=True)
    marker = verify_marker(node_id)
    if not todo:
        _note(output_file, f"{receipts.VERIFY_BY_CONTRACT}: no legion-verify command to run\n")
        return VerificationResult("pass", (), output_file, blocks)
    env = _env(run_id, marker)
    results = [
        await _run_one(
            command,
            cwd=cwd,
            output_file=output_file,
            env=env,
            run_id=run_id,
            marker=marker,
            limit=command_timeout,
        )
        for command in todo
    ]
    outcome: Outcome = "pass" if all(r.ok for r in results) else "fail"
    return VerificationResult(outcome, tuple(results), output_file, blocks)


def _read_contract(contract: Path) -> str:
    try:
        return contract.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


async def verify_contract(
    contract: Path,
    *,
    cwd: Path,
    output_file: Path,
    run_id: str,
    node_id: str,
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
) -> VerificationResult:
    """Read `contract` (missing file: no commands), extract its blocks, run them."""
    text = await asyncio.to_thread(_read_contract, contract)
    return await run_verification(
        extract_verify_commands(text),
        cwd=cwd,
        output_file=output_file,
        run_id=run_id,
        node_id=node_id,
        command_timeout=command_timeout,
    )
