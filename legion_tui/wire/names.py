"""What the supervisor, its agents and its clients agree on beyond the JSON lines
themselves (framed in `lines`): the environment a child is started with, the caller
name of a user's own shell, and the one error a refused or failed request raises.

Imported by the control verbs' client, so it imports nothing (SPEC §8's verb budget).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from legion_tui.model_records import Node

__all__ = [
    "ENV_INBOX",
    "ENV_NODE_ID",
    "ENV_NO_CGROUP",
    "ENV_RUN_DIR",
    "ENV_RUN_ID",
    "ENV_SESSION_FILE",
    "ENV_SOCKET",
    "ENV_TASK",
    "ENV_TASK_FILE",
    "NAME_PATTERN",
    "ROOT_ID",
    "RequestError",
    "shortest_refs",
]

# A child's environment (process.marker_env): where to reach its supervisor and who it
# is there. LEGION_RUN_ID + LEGION_NODE_ID are also the marker the sweep finds it by.
ENV_SOCKET = "LEGION_SOCKET"
ENV_NODE_ID = "LEGION_NODE_ID"
ENV_RUN_ID = "LEGION_RUN_ID"
ENV_RUN_DIR = "LEGION_RUN_DIR"
ENV_SESSION_FILE = "LEGION_SESSION_FILE"
ENV_INBOX = "LEGION_INBOX"  # an exec command's mail, appended as it comes
ENV_TASK = "LEGION_TASK"  # the agent's task: the safe way for a script to read it
ENV_TASK_FILE = "LEGION_TASK_FILE"  # …and the file that holds it (`{task_file}`)
# In the host's own environment: "1" runs agents without a cgroup of their own.
ENV_NO_CGROUP = "LEGION_NO_CGROUP"

# A node's name: what `spawn --name` and every resolver accept (checked by the verbs'
# argument parser before they connect, and by the supervisor's naming).
NAME_PATTERN = r"[a-z0-9][a-z0-9._-]{0,63}"

# The root node's id: the host's own node, and the `from` of a request from a user's own
# shell (which acts as root).
ROOT_ID = "root"


def shortest_refs(nodes: Iterable[Node]) -> dict[str, str]:
    """What a printed hint names each node by, so it works as printed: the bare name
    where no other node has it, else the path below root (the resolver takes both; a
    bare name three nodes share is refused as ambiguous). By node id."""
    nodes = list(nodes)
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node.name] = counts.get(node.name, 0) + 1
    below_root = f"{ROOT_ID}/"
    return {n.id: n.name if counts[n.name] == 1 else n.path.removeprefix(below_root)
            for n in nodes}  # fmt: skip


class RequestError(Exception):
    """A request refused or failed — by the supervisor (`code` is its machine-readable
    code: BUSY, FORBIDDEN, NO_SUPERVISOR…) or by an agent's RPC channel (`code` names the
    request it did not take: "prompt", "turn/steer", "start"…); `message` says why in
    words. `str()` gives both: "code: message"."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class OpError(Exception):
    """An operation was refused or failed; `code` is machine-readable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
