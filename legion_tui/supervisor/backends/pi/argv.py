"""The command lines of the agents that speak pi's RPC: `legion-sim` as a process, and
`pi --mode rpc` with its session folder (`pi.handle` drives both)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from legion_tui.runs.folder import agent_sessions_dir
from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.common import resolve_argv

__all__ = ["pi_argv", "pi_session_dir", "sim_argv"]


def sim_argv(spec: LaunchSpec) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "legion_tui.sim.rpc_front",
        "--node-id",
        spec.node_id,
        "--name",
        spec.name,
        "--role",
        spec.role,
        "--session-file",
        str(spec.session_file),
        "--run-dir",
        str(spec.run_dir),
        "--cwd",
        str(spec.cwd),
        "--socket",
        str(spec.socket_path),
        "--seed",
        str(spec.seed),
        "--speed",
        repr(spec.speed),
        "--behaviour",
        json.dumps(spec.sim_behaviour),
    ]
    if spec.resume:
        argv.append("--resume")
    return argv


def pi_session_dir(spec: LaunchSpec) -> Path:
    return agent_sessions_dir(spec.run_dir, spec.node_id)


def pi_argv(spec: LaunchSpec) -> list[str]:
    """`pi --mode rpc --session-dir <run>/sessions/<nodeId>/` (+ `--continue` to resume),
    with the role card's body appended to pi's system prompt and its tools as pi's.

    pi names its own file inside that folder; `get_state` tells us which. Flags the
    card's own command already gives are left as the card wrote them.
    """
    argv = resolve_argv(spec.command or ["pi"], spec)
    if "--mode" not in argv:
        argv += ["--mode", "rpc"]
    if "--session-dir" not in argv:
        argv += ["--session-dir", str(pi_session_dir(spec))]
    if spec.system_prompt and not {"--system-prompt", "--append-system-prompt"} & set(argv):
        argv += ["--append-system-prompt", spec.system_prompt]
    if spec.tools and "--tools" not in argv:
        argv += ["--tools", ",".join(spec.tools)]
    if spec.resume and "--continue" not in argv and "-c" not in argv:
        argv.append("--continue")
    return argv
