"""What one simulated agent is told at its start (its node, files, socket, seed, speed and
behaviour knobs; see `rpc_front.py`), and where a centurion sim writes its contract."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SimConfig", "contract_path", "seed_material"]


@dataclass(frozen=True)
class SimConfig:
    node_id: str
    name: str
    role: str
    session_file: Path
    run_dir: Path
    cwd: Path
    socket_path: Path | None = None
    seed: int = 0
    speed: float = 1.0
    behaviour: dict[str, Any] = field(default_factory=dict)
    resume: bool = False


def seed_material(cfg: SimConfig) -> int | str:
    """The seed, or — resuming — the seed and the file's length, so a resumed agent does
    not replay the ids of its first life (duplicate entry ids would tangle the tree)."""
    if cfg.resume:
        with contextlib.suppress(OSError):
            return f"{cfg.seed}/resume/{cfg.session_file.stat().st_size}"
    return cfg.seed


def contract_path(run_dir: Path, name: str) -> Path:
    """Where a centurion sim writes its contract (with a `legion-verify` block)."""
    return run_dir / "contracts" / f"{name}.md"
