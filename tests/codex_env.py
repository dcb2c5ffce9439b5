"""The environment for running the real, installed Codex CLI against the scripted model server.

`codex_env(base_url, root)` lays out, under `root`: a HOME, a `CODEX_HOME` holding a
`config.toml` that declares the `scripted` provider (`wire_api = "responses"`,
`base_url` = the server's `/v1`, `env_key` = a variable set to a dummy key) with Codex's
network extras off (`features.plugins = false`: no plugin sync from github.com /
chatgpt.com; `analytics.enabled = false`: no OTLP metrics to ab.chatgpt.com), and a
working dir; and an environment built from scratch (no inherited API keys or proxies),
with the CLI's bin dir first on PATH.

`CODEX_HOME` is wherever `root` is. Under /tmp (pytest's tmp_path) Codex 0.169.0 warns
"Refusing to create helper binaries under temporary dir" and runs its helpers from the
install instead; the shell tool, the sandbox and the rollout file work the same (the
end-to-end tests run there), so the warning is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agent_bins import CliInstall, codex_install

PROVIDER = "scripted"
MODEL = "scripted-model"
KEY_VAR = "SCRIPTED_API_KEY"  # the provider's env_key: Codex fails a turn when it is unset
DUMMY_KEY = "sk-scripted-dummy-000"

# Kept from the parent environment; everything else is dropped (API keys, proxies, npm).
_INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "LEGION_AGENTS_DIR")
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def codex_config(base_url: str, *, provider: str = PROVIDER, model: str = MODEL,
                 key_var: str = KEY_VAR) -> str:
    """`$CODEX_HOME/config.toml`: one custom Responses provider, the network extras off."""
    return (
        f'model = "{model}"\n'
        f'model_provider = "{provider}"\n'
        f"[model_providers.{provider}]\n"
        'name = "scripted model server"\n'
        f'base_url = "{base_url}"\n'  # Codex POSTs {base_url}/responses
        f'env_key = "{key_var}"\n'
        'wire_api = "responses"\n'
        "[features]\n"
        "plugins = false\n"  # else a plugin sync from github.com / chatgpt.com at start
        "[analytics]\n"
        "enabled = false\n"  # else OTLP metrics to ab.chatgpt.com
    )


@dataclass(frozen=True)
class CodexEnv:
    """Everything needed to start one Codex against the server."""

    install: CliInstall
    env: dict[str, str]
    home: Path
    codex_home: Path  # CODEX_HOME (config.toml, sessions/, logs)
    workdir: Path

    @property
    def exe(self) -> Path:
        return self.install.exe

    def rollouts(self, thread_id: str = "") -> list[Path]:
        """The rollout files Codex wrote (of `thread_id`, or all)."""
        pattern = f"*/*/*/rollout-*{thread_id}.jsonl"
        return sorted((self.codex_home / "sessions").glob(pattern))


def codex_env(base_url: str, root: Path, *,
              extra_env: Mapping[str, str] | None = None) -> CodexEnv:
    """Lay out HOME, CODEX_HOME (with config.toml) and a work dir under `root`."""
    install = codex_install()
    home, codex_home, workdir = root / "home", root / "codex-home", root / "work"
    for d in (home, codex_home, workdir):
        d.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(base_url))
    env = {k: os.environ[k] for k in _INHERITED if k in os.environ}
    env.update({
        "PATH": f"{install.bin_dir}:{_SYSTEM_PATH}",
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        KEY_VAR: DUMMY_KEY,
        "NO_COLOR": "1",
        "TERM": "dumb",
    })
    env.update(extra_env or {})
    return CodexEnv(install, env, home, codex_home, workdir)
