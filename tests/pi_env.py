"""The environment for running a real, installed pi against the scripted model server.

`pi_env(line, base_url, root)` lays out, under `root` (a per-test tmp dir): a HOME, a
pi agent dir (`PI_CODING_AGENT_DIR`) holding a `models.json` that declares the
`scripted` provider (api `openai-completions`, `baseUrl` = the server's `/v1` URL, a
dummy key, one model `scripted-model`), a session dir and a working dir; and an
environment built from scratch (no inherited API keys or proxies), with the line's bin
dir first on PATH and pi's network extras off (`PI_OFFLINE=1`, no version check, no
telemetry). The same models.json shape works for 0.73.1 and 1.6.0.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_bins import PiInstall, pi_install

PROVIDER = "scripted"
MODEL = "scripted-model"
DUMMY_KEY = "scripted-dummy-key"

# Kept from the parent environment; everything else is dropped (API keys, proxies, npm).
_INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "LEGION_AGENTS_DIR")
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def models_json(base_url: str, *, provider: str = PROVIDER, models: Sequence[str] = (MODEL,),
                api: str = "openai-completions") -> dict[str, object]:
    """The models.json declaring one custom provider and its models."""
    return {
        "providers": {
            provider: {
                "baseUrl": base_url,
                "api": api,
                "apiKey": DUMMY_KEY,
                "models": [{
                    "id": model,
                    "name": model,
                    "reasoning": False,
                    "input": ["text"],
                    "contextWindow": 128000,
                    "maxTokens": 16384,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                } for model in models],
            }
        }
    }


@dataclass(frozen=True)
class PiEnv:
    """Everything needed to start one pi of a line against the server."""

    install: PiInstall
    env: dict[str, str]
    home: Path
    agent_dir: Path  # PI_CODING_AGENT_DIR (models.json, auth.json, settings.json)
    session_dir: Path  # pass as --session-dir
    workdir: Path  # pi's cwd: where its tools act

    @property
    def pi(self) -> Path:
        return self.install.pi

    def rpc_argv(self, *extra: str, provider: str = PROVIDER, model: str = MODEL) -> list[str]:
        """`pi --mode rpc --provider … --model … --session-dir …` plus `extra`."""
        return [str(self.pi), "--mode", "rpc", "--provider", provider, "--model", model,
                "--session-dir", str(self.session_dir), *extra]

    def session_files(self) -> list[Path]:
        return sorted(self.session_dir.rglob("*.jsonl"))


def pi_env(line: str, base_url: str, root: Path, *,
           extra_env: Mapping[str, str] | None = None,
           models: Sequence[str] = (MODEL,)) -> PiEnv:
    """Lay out HOME, agent dir (with models.json), session and work dirs under `root`."""
    install = pi_install(line)
    home = root / "home"
    agent_dir = home / ".pi" / "agent"
    session_dir = root / "sessions"
    workdir = root / "work"
    for d in (agent_dir, session_dir, workdir):
        d.mkdir(parents=True, exist_ok=True)
    config = models_json(base_url, models=models)
    (agent_dir / "models.json").write_text(json.dumps(config, indent=2) + "\n")
    env = {k: os.environ[k] for k in _INHERITED if k in os.environ}
    env.update({
        "PATH": f"{install.bin_dir}:{_SYSTEM_PATH}",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
        "NO_COLOR": "1",
        "TERM": "dumb",
    })
    env.update(extra_env or {})
    return PiEnv(install, env, home, agent_dir, session_dir, workdir)
