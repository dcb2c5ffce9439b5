"""The built-in machine and the built-in advisory clocks.

The default reproduces upstream's four-phase pipeline (declarative-phase-machine-v5
"Migration" table, in the per-edge form upstream settled on):

    planning      → implementing   contract_file
    implementing  → reviewing      children_settled (phase) + children_present, children_none_failed
    implementing  → failed         children_settled (phase) + children_all_failed
    reviewing     → verifying      verdict_ok
    reviewing     → implementing   verdict_not_ok, rework_available   (rework)
    verifying     → done           verification_passed
    verifying     → implementing   verification_failed, rework_available (rework)

`children_present` on the way to review keeps upstream I1 ("implementing needs ≥ 1
settled child"); the two rework edges are the ones upstream's CHANGELOG names.
"""

from __future__ import annotations

from collections.abc import Mapping

from legion_tui.phases.machine import Edge, Machine, PhaseSpec

__all__ = ["BUILTIN_TIMEOUTS_MS", "DEFAULT_MACHINE", "resolve_timeout_ms"]

_MINUTE_MS = 60_000

BUILTIN_TIMEOUTS_MS: Mapping[str, int] = {
    "planning": 15 * _MINUTE_MS,
    "implementing": 60 * _MINUTE_MS,
    "reviewing": 30 * _MINUTE_MS,
    "verifying": 15 * _MINUTE_MS,
}

DEFAULT_MACHINE = Machine(
    phases=(
        PhaseSpec("planning", require=("contract_file",), next=("implementing",)),
        PhaseSpec(
            "implementing",
            require=("children_settled",),
            next=("reviewing", "failed"),
            edges=(
                Edge("reviewing", require=("children_present", "children_none_failed")),
                Edge("failed", require=("children_all_failed",)),
            ),
        ),
        PhaseSpec(
            "reviewing",
            next=("verifying", "implementing"),
            edges=(
                Edge("verifying", require=("verdict_ok",)),
                Edge("implementing", require=("verdict_not_ok", "rework_available"), rework=True),
            ),
        ),
        PhaseSpec(
            "verifying",
            next=("done", "implementing"),
            edges=(
                Edge("done", require=("verification_passed",)),
                Edge(
                    "implementing",
                    require=("verification_failed", "rework_available"),
                    rework=True,
                ),
            ),
        ),
    ),
    start="planning",
)


def resolve_timeout_ms(
    phase: str,
    *,
    machine: Machine | None = None,
    operator: Mapping[str, int] | None = None,
) -> int | None:
    """The advisory limit of one phase stint in ms, or None for "never warn".

    Order (upstream #358): an EXPLICIT operator setting (settings.toml `[phaseTimeouts]`;
    pass only keys the operator wrote, never a default-filled table) → the machine's
    `timeoutMs` for that phase → the built-in 15/60/30/15 min → never. An operator value
    of 0 means "never warn" and wins like any other operator value.
    """
    if operator is not None and phase in operator:
        value = operator[phase]
        return value if value > 0 else None
    if machine is not None:
        declared = machine.timeout_ms(phase)
        if declared is not None:
            return declared
    return BUILTIN_TIMEOUTS_MS.get(phase)
