"""The environment for running the real, pinned Claude Code against the scripted model server.

notes/agent-clis.md §1.2: `ANTHROPIC_BASE_URL` is the server's origin (Claude appends
`/v1/messages`), any `ANTHROPIC_API_KEY` is accepted, and `DISABLE_TELEMETRY=1
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` make it send nothing anywhere else. Each test
gets its own HOME and `CLAUDE_CONFIG_DIR` (everything Claude writes, its session files
under `projects/<slug>/` included, lands there), and an environment built from scratch:
no inherited API key, proxy, or `ANTHROPIC_*`/`CLAUDE*` setting can reach the CLI.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from agent_bins import CliInstall, claude_code_install

__all__ = [
    "DUMMY_KEY",
    "MODEL",
    "OFFLINE",
    "ClaudeWorld",
    "claude_env",
    "claude_slug",
    "claude_vars",
    "claude_world",
    "drop_claude_settings",
]

DUMMY_KEY = "sk-scripted-dummy-000"
MODEL = "scripted-model"  # passed with --model; Claude passes any name through
OFFLINE = {"DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}

# Kept from the parent environment; everything else is dropped.
_INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "LEGION_AGENTS_DIR")
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
# Settings of an outer Claude Code (or a user's shell) that would steer the one under test.
_CLAUDE_SETTING = re.compile(r"(?i)^(anthropic_.*|claude.*)$")


def claude_slug(cwd: Path) -> str:
    """The folder Claude names after its working directory: every non-alphanumeric
    character of the absolute path → "-" (notes §1.8; the test's own computation)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


@dataclass(frozen=True)
class ClaudeWorld:
    """One test's Claude Code install and scratch directories."""

    install: CliInstall
    home: Path
    config_dir: Path  # CLAUDE_CONFIG_DIR
    workdir: Path
    logs: Path
    tmp: Path  # TMPDIR: Claude's scratch (claude-<uid>/, cc-socks/) stays in the test's dir

    def session_file(self, session_id: str, cwd: Path | None = None) -> Path:
        """Where Claude run in `cwd` (default: the workdir) writes session `session_id`."""
        slug = claude_slug(cwd or self.workdir)
        return self.config_dir / "projects" / slug / f"{session_id}.jsonl"


def claude_world(tmp_path: Path, workdir: str = "work_dir.v2") -> ClaudeWorld:
    """The install (fails the test when missing) and fresh HOME, config, work and log dirs.
    The default workdir name has a '_' and a '.', which the slug replaces too."""
    install = claude_code_install()
    world = ClaudeWorld(
        install,
        home=tmp_path / "home",
        config_dir=tmp_path / "claude-config",
        workdir=tmp_path / workdir,
        logs=tmp_path / "logs",
        tmp=tmp_path / "claude-tmp",
    )
    for d in (world.home, world.config_dir, world.workdir, world.logs, world.tmp):
        d.mkdir(parents=True)
    return world


def claude_vars(world: ClaudeWorld, origin: str) -> dict[str, str]:
    """What points Claude at the scripted server (`origin`: http://127.0.0.1:PORT) and
    keeps it offline, with its config and scratch files in the world's dirs."""
    return {
        "CLAUDE_CONFIG_DIR": str(world.config_dir),
        "TMPDIR": str(world.tmp),
        "ANTHROPIC_BASE_URL": origin,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        **OFFLINE,
    }


def claude_env(
    world: ClaudeWorld, origin: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A whole environment from scratch: the CLI's bin dir first on PATH, the world's
    HOME, the server and offline switches, then `extra`."""
    env = {k: os.environ[k] for k in _INHERITED if k in os.environ}
    env.update({
        "PATH": f"{world.install.bin_dir}:{_SYSTEM_PATH}",
        "HOME": str(world.home),
        "XDG_CONFIG_HOME": str(world.home / ".config"),
        "XDG_CACHE_HOME": str(world.home / ".cache"),
        "XDG_DATA_HOME": str(world.home / ".local" / "share"),
        "NO_COLOR": "1",
        "TERM": "dumb",
        **claude_vars(world, origin),
    })  # fmt: skip
    env.update(extra or {})
    return env


def drop_claude_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove this process's ANTHROPIC_*/CLAUDE* variables (an outer Claude Code's, a
    user's key) before a test's env is applied on top of os.environ."""
    for key in list(os.environ):
        if _CLAUDE_SETTING.match(key):
            monkeypatch.delenv(key, raising=False)
