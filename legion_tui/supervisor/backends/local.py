"""The handle of an agent that runs on this machine, by backend (`backend.backend_for`).

The concrete classes are imported when asked for: importing this module (the supervisor
core does, through `registry`) pulls in no process layer, and a Ray worker
(`ray.actor`) builds its one agent's handle here without the Ray side of the registry.
"""

from __future__ import annotations

from collections.abc import Callable

from legion_tui.model import Backend
from legion_tui.session.streaming import StreamSink
from legion_tui.supervisor.backend import AgentHandle, LaunchSpec
from legion_tui.supervisor.backends.asking import InputSink

__all__ = ["build"]


def build(
    spec: LaunchSpec,
    backend: Backend,
    on_stream: StreamSink | None = None,
    on_line: Callable[[str], None] | None = None,
    on_input: InputSink | None = None,
    on_cost: Callable[[float], None] | None = None,
) -> AgentHandle:
    if backend == "inprocess":
        from legion_tui.supervisor.backends.inprocess import InProcessHandle

        return InProcessHandle(spec)
    if backend == "claude-stream":
        from legion_tui.supervisor.backends.claude.handle import ClaudeHandle

        return ClaudeHandle(spec, on_stream=on_stream, on_input=on_input, on_cost=on_cost)
    if backend == "codex-app-server":
        from legion_tui.supervisor.backends.codex.handle import CodexHandle

        return CodexHandle(spec, on_stream=on_stream, on_input=on_input)
    if spec.kind == "exec":
        from legion_tui.supervisor.backends.exec_handle import ExecHandle

        return ExecHandle(spec, on_line=on_line, on_input=on_input)
    from legion_tui.supervisor.backends.pi.handle import RpcHandle

    return RpcHandle(spec, backend, on_stream=on_stream, on_input=on_input)
