"""Why a node was retired, where `r` resumes it from: the reasons that leave it
interrupted rather than ended (the host's exit, an orphan found on reopening, its cluster
node lost). Read by the retire that writes the mark (`retires`), the reopening
(`continuity`) and `legion status`."""

from __future__ import annotations

from legion_tui.model import ATTACHED_REASON

__all__ = [
    "ATTACHED_REASON",
    "INTERRUPT_REASONS",
    "NODE_LOST_REASON",
    "ORPHAN_REASON",
    "RESUME_FAILED_REASON",
    "SHUTDOWN_REASON",
]

SHUTDOWN_REASON = "session-shutdown"
ORPHAN_REASON = "orphaned"
NODE_LOST_REASON = "node-lost"  # its cluster node died under it (life/node_loss.py)
RESUME_FAILED_REASON = "resume-failed"  # its agent would not start again on its session
# ATTACHED_REASON (model.py): handed to its own UI; a host that ended meanwhile left it
# interrupted, and `r` takes it back.
INTERRUPT_REASONS = frozenset(
    {SHUTDOWN_REASON, ORPHAN_REASON, NODE_LOST_REASON, RESUME_FAILED_REASON, ATTACHED_REASON}
)
