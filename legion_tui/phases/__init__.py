"""Declared phase machines: the data, the load-time validation, the condition vocabulary.

`timeouts.py` (the runtime stint tracker) belongs to the team machinery; everything it
needs from here is re-exported below (`resolve_timeout_ms`, `Machine.timeout_ms`).
"""

from legion_tui.phases.builtin import BUILTIN_TIMEOUTS_MS, DEFAULT_MACHINE, resolve_timeout_ms
from legion_tui.phases.conditions import (
    CONDITIONS,
    DEFAULT_MAX_REWORK,
    ChildFact,
    Condition,
    TeamSnapshot,
    Verification,
    evaluate,
    explain,
    snapshot_of,
    verdict_ok_of,
)
from legion_tui.phases.declare import (
    DeclarationRefused,
    check_centurion_dispatch,
    declared_machine,
)
from legion_tui.phases.load import (
    MachineError,
    PhaseProblem,
    load_machine_file,
    parse_inline,
    parse_machine,
    validate_machine,
)
from legion_tui.phases.machine import (
    NEEDS_REASON,
    TERMINALS,
    Actor,
    Edge,
    Machine,
    PhaseSpec,
    TransitionResult,
)
from legion_tui.phases.verify_blocks import VerifyBlocks, extract_verify_commands

__all__ = [
    "BUILTIN_TIMEOUTS_MS",
    "CONDITIONS",
    "DEFAULT_MACHINE",
    "DEFAULT_MAX_REWORK",
    "NEEDS_REASON",
    "TERMINALS",
    "Actor",
    "ChildFact",
    "Condition",
    "DeclarationRefused",
    "Edge",
    "Machine",
    "MachineError",
    "PhaseProblem",
    "PhaseSpec",
    "TeamSnapshot",
    "TransitionResult",
    "Verification",
    "VerifyBlocks",
    "check_centurion_dispatch",
    "declared_machine",
    "evaluate",
    "explain",
    "extract_verify_commands",
    "load_machine_file",
    "parse_inline",
    "parse_machine",
    "resolve_timeout_ms",
    "snapshot_of",
    "validate_machine",
    "verdict_ok_of",
]
