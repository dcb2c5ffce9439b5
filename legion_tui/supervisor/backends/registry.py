"""`make_handle`: the handle a launch spec gets — on this machine (`local.build`) or, with
`[cluster] engine = "ray"`, in a Ray actor on some cluster node (`ray.handle`).

The contract (`backend`) knows no backend; every backend imports the contract. Callers
that build handles import them from here, so the dependency runs one way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from legion_tui.session.streaming import StreamSink
from legion_tui.supervisor.backend import AgentHandle, LaunchSpec, backend_for
from legion_tui.supervisor.backends.local import build

if TYPE_CHECKING:
    from legion_tui.settings import ClusterSettings

__all__ = ["make_handle"]


def make_handle(
    spec: LaunchSpec,
    *,
    on_stream: StreamSink | None = None,
    on_line: Callable[[str], None] | None = None,
    on_input: Callable[[str | None], None] | None = None,
    cluster: ClusterSettings | None = None,
    on_lost: Callable[[str], None] | None = None,
    on_cost: Callable[[float], None] | None = None,
    on_note: Callable[[str | None], None] | None = None,
) -> AgentHandle:
    """Build (not start) the handle for `spec`; call `await handle.start()` next.

    `on_stream` hears the message an RPC agent is generating now (for the live tok/s);
    `on_line` the current line of an exec command's terminal (its row's activity);
    `on_input` the question the agent waits on its user for, and None once it is
    answered (`backends.asking`; the next steer is the answer).
    `cluster` with engine "ray": the agent runs in a Ray actor on some node
    (`ray.handle.py`) and the three hooks hear what its handle on the node
    heard, by the mirror's pulls; `on_lost` hears, once, that its node died.
    `on_cost` hears the agent's own running total for its session as it reports one
    (Claude Code, each turn; not from a Ray node, whose calls stay priced by the table).
    `on_note` hears what the handle says of its node while it starts (a Ray launch
    waiting for a place on the cluster), and None once that is over.
    """
    if cluster is not None and cluster.engine == "ray":
        # Imported only for a Ray run, like the local handles: not at the core's import.
        from legion_tui.supervisor.backends.ray.handle import RayHandle
        from legion_tui.supervisor.backends.ray.mirror import LiveHooks

        live = LiveHooks(on_stream, on_line, on_input)
        return RayHandle(spec, cluster, on_lost=on_lost, live=live, on_note=on_note)

    return build(spec, backend_for(spec), on_stream, on_line, on_input, on_cost)
