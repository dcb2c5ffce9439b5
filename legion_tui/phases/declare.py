"""Spawn-time guards for a declared machine (upstream centurion-declared-phases-v1 §3).

The supervisor calls these BEFORE it creates any row, file, process or worktree, so a
refused declaration leaves nothing behind (invariant I7). Wording is upstream's, kept in
`legion_tui.receipts`.
"""

from __future__ import annotations

from legion_tui import receipts
from legion_tui.phases.load import MachineError, parse_inline
from legion_tui.phases.machine import Machine

__all__ = ["DeclarationRefused", "check_centurion_dispatch", "declared_machine"]


class DeclarationRefused(ValueError):
    """G1–G4: the spawn is refused; `str()` is the message for the caller."""


def check_centurion_dispatch(role: str, *, caller_is_root: bool, caller: str, node: str) -> None:
    """G1: only the root shell dispatches a centurion (`node`: the caller's path)."""
    if role == "centurion" and not caller_is_root:
        raise DeclarationRefused(receipts.centurion_root_only(caller, node))


def declared_machine(
    phases: object,
    *,
    role: str,
    caller_is_root: bool,
    caller: str,
    card_machine: Machine | None = None,
) -> Machine | None:
    """The machine a new node runs under, or None for an ordinary agent.

    Precedence (upstream §2): the spawn request's inline `phases` → the role card's
    `phases:` → none. G2: only root may pass `phases`; G3: only for a centurion; G4: the
    machine validates and reaches a terminal from its start (every problem is quoted).
    """
    if phases is None:
        return card_machine if role == "centurion" else None
    if not caller_is_root:
        raise DeclarationRefused(receipts.phases_root_only(caller))
    if role != "centurion":
        raise DeclarationRefused(receipts.PHASES_CENTURION_ONLY)
    try:
        return parse_inline(phases)
    except MachineError as err:
        raise DeclarationRefused(str(err)) from err
