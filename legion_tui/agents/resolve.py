"""`kind: auto` → the agent that really runs (SPEC §6.1).

The bundled cards say `kind: auto`. At launch that becomes, in order:

1. `--kind` (the launch's own request) when it names a kind other than auto;
2. `sim` for a child of a simulated agent — a pretend lead's team is part of the same
   pretence, and a real agent must never be started on a simulated plan;
3. `[agent] default` in `.legion/settings.toml` (with its `command`, `model`,
   `provider`);
4. the first agent of `AGENTS` whose program is installed: on PATH, else among the
   agents installed beside legion (`agents.installed`: `make agents` puts them in
   `.venv/agents/`), run by that path.

With none of these there is no agent, and the launch is refused with `NoAgent` — a
message saying how to install one or how to ask for the simulation — before anything
exists. The simulated agent is never the silent fallback: it runs only when a card,
`--kind`, `[agent] default` or a simulated parent asks for it.

Pure apart from the look-ups (`find_program`, `find_installed`); the supervisor calls
`resolve_launch` while it plans a spawn, `legion run` / `legion tui` call it to refuse
before hosting.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from legion_tui.model import CARD_KINDS, Kind
from legion_tui.settings import SETTINGS_FILE, AgentSettings, KindSettings, SettingsProblem

__all__ = [
    "AGENTS",
    "INSTALL_HINTS",
    "Launch",
    "NoAgent",
    "agent_problems",
    "configured_command",
    "configured_env",
    "resolve_launch",
]

# The real agents `auto` may pick, in the order it tries them: (kind, program on PATH).
AGENTS: tuple[tuple[Kind, str], ...] = (("pi", "pi"), ("claude", "claude"), ("codex", "codex"))
INSTALL_HINTS: Mapping[Kind, str] = MappingProxyType(
    {
        "pi": "npm install -g @mariozechner/pi-coding-agent",
        "claude": "npm install -g @anthropic-ai/claude-code",
        "codex": "npm install -g @openai/codex",
    }
)

Via = Literal["card", "--kind", "parent", "settings", "PATH", "installed"]


@dataclass(frozen=True, slots=True)
class Launch:
    """What one launch runs: the kind the node records, the argv template for pi/exec
    (empty: the card has none and pi runs as `pi`), and what decided it."""

    kind: Kind
    command: tuple[str, ...]
    via: Via
    env: Mapping[str, str] = field(default_factory=dict)  # `[agent.KIND] env`


MODEL_KINDS = ("pi", "claude", "codex")  # the agents whose model a launch can choose


def with_model(kind: Kind, command: Sequence[str], model: str) -> tuple[str, ...]:
    """`command` (empty: the kind's own program) running `model`: the model flag it had
    replaced — pi and Claude Code take `--model`, Codex `-c model=…` (as
    `configured_command` writes them). One attempt of a fan-out per model."""
    argv = list(command) or [kind]
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if kind == "codex" and word == "-c" and nxt.startswith("model="):
            i += 2
            continue
        if kind != "codex" and word == "--model":
            i += 2
            continue
        if kind != "codex" and word.startswith("--model="):
            i += 1
            continue
        out.append(word)
        i += 1
    if kind == "codex":
        return (*out, "-c", f"model={json.dumps(model)}")
    return (*out, "--model", model)


class NoAgent(LookupError):
    """No agent can run an `auto` launch; the message says how to get one. Nothing has
    been spawned when this is raised."""


def agent_problems(problems: Sequence[SettingsProblem]) -> tuple[SettingsProblem, ...]:
    """The settings problems that leave the configured agent unknown: any in `[agent]`,
    and any that broke the whole file (bad TOML, unreadable: it may name an agent)."""
    return tuple(p for p in problems if p.key is None or p.key.split(".")[0] == "agent")


def configured_command(agent: AgentSettings, kind: Kind, *, default: bool) -> tuple[str, ...]:
    """The argv the settings give an auto launch of `kind`: `[agent.KIND]`'s command,
    model, provider and args; for the default kind (`default`: chosen by `[agent]
    default` or found first on PATH, not by `--kind`) the older `[agent]` command / model
    / provider where `[agent.KIND]` does not say. Model and provider go in the agent's
    own flags (pi: `--provider` `--model`; Claude Code: `--model`; Codex: `-c model=…`
    `-c model_provider=…`). () when nothing is said."""
    own = agent.kinds.get(kind, KindSettings())
    command = own.command or (agent.command if agent.default == kind else ())
    model = own.model or (agent.model if default else None)
    provider = own.provider or (agent.provider if default else None)
    extra: list[str] = []
    if kind == "pi":
        if provider and "--provider" not in command:
            extra += ["--provider", provider]
        if model and "--model" not in command:
            extra += ["--model", model]
    elif kind == "claude":
        if model and "--model" not in command:
            extra += ["--model", model]
    elif kind == "codex":
        said = " ".join(command)
        if model and "model=" not in said:
            extra += ["-c", f"model={json.dumps(model)}"]
        if provider and "model_provider=" not in said:
            extra += ["-c", f"model_provider={json.dumps(provider)}"]
    extra += own.args
    if extra:
        return (*(command or (kind,)), *extra)
    return command


def configured_env(agent: AgentSettings, kind: str) -> Mapping[str, str]:
    """What `[agent.KIND] env` adds to the environment of that kind's agents."""
    return agent.kinds.get(kind, KindSettings()).env


def _simulate_hint() -> str:
    return (
        '  or simulate:  --kind sim, or [agent] default = "sim" '
        "(the simulated agent does no real work; it changes no files)"
    )


def _where_default(agent: AgentSettings) -> str:
    return str(SETTINGS_FILE) if agent.line is None else f"{SETTINGS_FILE}:{agent.line}"


def _missing_program(what: str, agent: AgentSettings, kind: Kind, program: str) -> NoAgent:
    lines = [
        f"no agent to run {what}: {_where_default(agent)} says [agent] default = "
        f'"{kind}", but {program!r} is not installed (looked {_looked_in()}) — nothing spawned.'
    ]
    hint = INSTALL_HINTS.get(kind)
    if hint:
        lines.append(f"  install it:   {hint}")
    lines.append("  or point it:  [agent] command = [\"/path/to/" + program + "\"]")
    lines.append(_simulate_hint())
    return NoAgent("\n".join(lines))


def _looked_in() -> str:
    """Where an auto launch looked for an agent, for a refusal."""
    from legion_tui.agents.installed import agents_dir

    found = agents_dir()
    return "on PATH" if found is None else f"on PATH and in {found}"


def _nothing_installed(what: str) -> NoAgent:
    looked = ", ".join(program for _kind, program in AGENTS)
    lines = [
        f"no agent to run {what}: none is configured ([agent] in {SETTINGS_FILE}) and "
        f"none is installed (looked {_looked_in()} for: {looked}) — nothing spawned."
    ]
    for kind, _program in AGENTS:
        hint = INSTALL_HINTS.get(kind)
        if hint:
            lines.append(f"  install one:  {hint}   ({kind})")
    first = AGENTS[0][0]
    lines.append(f'  or name one:  [agent] default = "{first}" in {SETTINGS_FILE}')
    lines.append(_simulate_hint())
    return NoAgent("\n".join(lines))


def _broken_settings(what: str, problems: Sequence[SettingsProblem]) -> NoAgent:
    listed = "\n".join(f"  {p}" for p in problems)
    return NoAgent(
        f"no agent to run {what}: {SETTINGS_FILE} has a problem, so the agent it names "
        f"is unknown — nothing spawned:\n{listed}\n"
        "  fix it (legion doctor lists every problem), or pass --kind for this launch"
    )


def resolve_launch(
    card_kind: str,
    card_command: Sequence[str],
    *,
    requested: str | None,
    agent: AgentSettings,
    problems: Sequence[SettingsProblem] = (),
    simulated_parent: bool = False,
    what: str = "this agent",
    cwd: Path,
    path: str | None = None,
) -> Launch:
    """The kind and command of one launch of a card (see the module doc for the order).

    `requested`: the launch's `--kind` (None: the card decides). `problems`: the settings
    file's problems (`agent_problems` picks the ones that matter). `what` names the
    launch in a refusal (`'worker' (kind: auto)`). `path`: the PATH to look on (None:
    this process's, which the agents inherit)."""

    kind = requested or card_kind
    if kind not in CARD_KINDS:
        raise ValueError(f"unknown kind {kind!r} (one of {', '.join(CARD_KINDS)})")
    if kind != "auto" and (card_kind != "auto" or kind == "sim"):
        via: Via = "--kind" if requested else "card"
        return Launch(_as_kind(kind), tuple(card_command), via)
    if kind == "auto" and simulated_parent:
        return Launch("sim", (), "parent")
    broken = agent_problems(problems)
    if kind != "auto":  # an auto card run as `--kind KIND`: `[agent.KIND]` says how
        own = [p for p in broken if p.key is not None and p.key.startswith(f"agent.{kind}")]
        if own:
            raise _broken_settings(what, own)
        chosen = _as_kind(kind)
        command = configured_command(agent, chosen, default=False)
        return Launch(chosen, command, "--kind", configured_env(agent, chosen))
    if broken:
        raise _broken_settings(what, broken)
    default = agent.default
    if default is not None and default != "auto":
        chosen = _as_kind(default)
        command = configured_command(agent, chosen, default=True)
        programs = dict(AGENTS)
        if chosen in programs:
            # Refused here, not as a failed launch: the node would exist only to fail.
            program = command[0] if command else programs[chosen]
            if find_program(program, cwd=cwd, path=path) is None:
                installed = _installed(program, command)
                if installed is None:
                    raise _missing_program(what, agent, chosen, program)
                command = installed
        return Launch(chosen, command, "settings", configured_env(agent, chosen))
    for candidate, program in AGENTS:
        mine = agent.kinds.get(candidate, KindSettings()).command
        if find_program(mine[0] if mine else program, cwd=cwd, path=path) is not None:
            command = configured_command(agent, candidate, default=True)
            return Launch(candidate, command, "PATH", configured_env(agent, candidate))
    for candidate, program in AGENTS:  # none on PATH: one `make agents` installed?
        if agent.kinds.get(candidate, KindSettings()).command:
            continue  # the settings name its program: that one, or none
        command = configured_command(agent, candidate, default=True)
        installed = _installed(program, command)
        if installed is not None:
            return Launch(candidate, installed, "installed", configured_env(agent, candidate))
    raise _nothing_installed(what)


def _installed(program: str, command: tuple[str, ...]) -> tuple[str, ...] | None:
    """`command` run by the installed copy of `program` (`agents.installed`), or None when
    none is installed. The command's own program is replaced only when it is that bare
    name: a path the settings give is theirs."""
    from legion_tui.agents.installed import find_installed

    if command and command[0] != program:
        return None
    found = find_installed(program)
    return None if found is None else (str(found), *command[1:])


def _as_kind(value: str) -> Kind:
    # Only ever called with a member of CARD_KINDS other than "auto", i.e. of KINDS.
    from legion_tui.model import KINDS

    for kind in KINDS:
        if kind == value:
            return kind
    raise ValueError(f"not a runnable kind: {value!r}")


def find_program(program: str, *, cwd: Path, path: str | None) -> str | None:
    """Where `program` would be executed from, or None when it is not there.

    A bare name is looked up on `path` (a PATH string; None: this process's PATH). A name
    with a slash is taken as the child takes it: relative to `cwd`, the folder the child
    starts in — not to the folder the supervisor happens to run in.
    """
    if os.sep not in program:
        return shutil.which(program, path=path)
    candidate = Path(program) if os.path.isabs(program) else cwd / program
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
