"""What a host takes from `.legion/settings.toml`, read once when it is made.

Defaults stand in for a missing or broken file: `legion doctor` reports a broken file,
supervision must not depend on it, so each problem is only logged here.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from legion_tui.wire.spawn_request import Budgets

if TYPE_CHECKING:
    from legion_tui.settings import ClusterSettings

__all__ = ["HostSettings", "read_host_settings"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HostSettings:
    budgets: Budgets
    stop_grace: float  # seconds from SIGTERM to SIGKILL
    idle_release: float  # a settled agent's process ends after this long idle (0: never)
    cluster: ClusterSettings  # where agents run: here, or on a Ray cluster
    # Only the phase timeouts the operator wrote (upstream #358: a default-filled table
    # would silently beat a card's `timeoutMs`).
    phase_timeouts: dict[str, int]


def read_host_settings(project_dir: Path, cluster_address: str | None) -> HostSettings:
    """The host's settings; a cluster address given to the host (`--cluster`) means Ray
    there, over the file's `[cluster]`."""
    from legion_tui.settings import load_settings

    result = load_settings(project_dir)
    for problem in result.problems:
        log.warning("settings: %s", problem)
    s = result.settings
    cluster = s.cluster
    if cluster_address is not None:
        cluster = dataclasses.replace(cluster, engine="ray", address=cluster_address)
    return HostSettings(
        budgets=Budgets(
            max_depth=s.max_depth,
            max_children=s.max_children_per_node,
            max_active=s.max_active_nodes,
        ),
        stop_grace=s.stop_grace_seconds,
        idle_release=s.agent.idle_release_seconds,
        cluster=cluster,
        phase_timeouts=dict(s.phase_timeouts),
    )
