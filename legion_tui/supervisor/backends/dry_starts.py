"""Dry starts of pi, Claude Code and Codex for `legion doctor`.

The launch's own first step, stopped before any work: the binary starts in the mode
legion drives it in, answers its protocol's handshake, and says which model it would use
and whether it has what it needs to call it — with no session written and no model
called (a doctor run must cost nothing). An unknown provider, a missing key file or a
broken install shows here, in the agent's own words (its stderr), not at the first spawn:

- pi: `pi --mode rpc --no-session` answers `get_state` (its `provider/model`; its stderr
  `Warning:` lines, e.g. a model id it guessed, are passed on);

- Claude Code: `claude -p --input-format stream-json …` answers the `initialize`
  control request with its version, models and account (`apiKeySource`/`tokenSource`
  "none": no key and no login — every turn would fail);
- Codex: `codex app-server` answers `initialize`, then `config/read` gives the effective
  `model` and `model_provider` as seen from the project; a provider whose `env_key`
  variable is unset would fail every turn ("Missing environment variable").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from legion_tui.supervisor.backends.codex.rpc import JsonRpcClient
from legion_tui.supervisor.backends.common import has_option, option_value
from legion_tui.supervisor.backends.pi.cli import VERSION_BOUND
from legion_tui.timeouts import within
from legion_tui.wire.lines import lines_of
from legion_tui.wire.names import RequestError

__all__ = ["StartProbe", "claude_dry_start", "codex_dry_start", "pi_dry_start"]


@dataclass(frozen=True, slots=True)
class StartProbe:
    """What a dry start showed."""

    error: str | None  # why it cannot run (its own words); None: it answered, and can
    model: str | None  # `provider/model` (or the model) it would use; None: it has none
    warnings: tuple[str, ...]  # its stderr `Warning:` lines

_REQUEST_ID = "legion-doctor"
_CLAUDE_FLAGS = ("--input-format", "stream-json", "--output-format", "stream-json")


def _said(stderr: bytes) -> list[str]:
    return [ln.strip() for ln in stderr.decode(errors="replace").splitlines() if ln.strip()]


def _warnings(stderr: bytes) -> tuple[str, ...]:
    """Its `Warning:` lines, each with the indented lines that go on from it (pi's `See:`
    and the two documents it names: cut there, the warning ended mid-sentence)."""
    found: list[str] = []
    going_on = False
    for raw in stderr.decode(errors="replace").splitlines():
        line = raw.strip()
        if line.lower().startswith("warning"):
            found.append(line)
            going_on = True
        elif going_on and line and raw[0].isspace():
            found[-1] += " " + line
        else:
            going_on = False
    return tuple(found)


def _words(stderr: bytes) -> str:
    return " ⏎ ".join(_said(stderr))[-600:]


async def _spawn(argv: list[str], env: Mapping[str, str], cwd: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )


async def _end(proc: asyncio.subprocess.Process) -> None:
    """Close its stdin (both CLIs exit on EOF); kill it if it does not go in 5 s."""
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        await within(proc.wait(), 5.0)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


def _failure(
    why: str, proc: asyncio.subprocess.Process, stderr: bytes, warnings: tuple[str, ...] = ()
) -> StartProbe:
    code = f" (exit status {proc.returncode})" if proc.returncode else ""
    words = _words(stderr)
    return StartProbe(f"{why}{code}" + (f": {words}" if words else ""), None, warnings)


async def pi_dry_start(
    argv: list[str], env: Mapping[str, str], cwd: str, *, bound: float = VERSION_BOUND
) -> StartProbe:
    """`argv` (a pi command) in RPC mode with no session, asked `get_state` only."""
    full = [*argv]
    if "--mode" not in full:
        full += ["--mode", "rpc"]
    if "--no-session" not in full:
        full.append("--no-session")
    proc = await _spawn(full, env, cwd)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(b'{"id":1,"type":"get_state"}\n')
    errors = asyncio.ensure_future(proc.stderr.read())
    state: dict[str, object] | None = None
    why: str | None = None
    try:
        state = await within(_get_state(proc.stdout), bound)
        if state is None:
            why = "exited before it answered"
    except TimeoutError:
        why = f"no answer to get_state within {bound:g} s"
    finally:
        await _end(proc)
    stderr = await errors
    warnings = _warnings(stderr)
    if why is not None:
        return _failure(why, proc, stderr, warnings)
    model = state.get("model") if state is not None else None
    name = f"{model.get('provider')}/{model.get('id')}" if isinstance(model, dict) else None
    return StartProbe(None, name, warnings)


async def _get_state(stdout: asyncio.StreamReader) -> dict[str, object] | None:
    """The get_state reply's data; None when the output ends first or it failed."""
    async for line in lines_of(stdout):
        with contextlib.suppress(ValueError, RecursionError):
            reply = json.loads(line)
            if isinstance(reply, dict) and reply.get("command") == "get_state":
                data = reply.get("data")
                ok = reply.get("success") and isinstance(data, dict)
                return data if ok and isinstance(data, dict) else None
    return None


async def claude_dry_start(
    argv: list[str], env: Mapping[str, str], cwd: str, *, bound: float = VERSION_BOUND
) -> StartProbe:
    """`argv` (a claude command) in stream-json mode, asked `initialize` only."""
    full = [*argv]
    if not has_option(full, "-p", "--print"):
        full.append("-p")
    if not has_option(full, "--input-format"):
        full += list(_CLAUDE_FLAGS)
    full += ["--verbose", "--no-session-persistence"]
    proc = await _spawn(full, env, cwd)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    request = {"type": "control_request", "request_id": _REQUEST_ID,
               "request": {"subtype": "initialize"}}  # fmt: skip
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    errors = asyncio.ensure_future(proc.stderr.read())
    answer: dict[str, Any] | None = None
    why: str | None = None
    try:
        answer = await within(_control_response(proc.stdout), bound)
        if answer is None:
            why = "exited before it answered"
    except TimeoutError:
        why = f"no answer to initialize within {bound:g} s"
    finally:
        await _end(proc)
    stderr = await errors
    if why is not None or answer is None:
        return _failure(why or "no answer", proc, stderr)
    model = option_value(argv, "--model") or _default_model(answer)
    account = answer.get("account")
    if isinstance(account, dict) and {account.get("apiKeySource"), account.get("tokenSource")} <= {
        "none",
        None,
    }:
        return StartProbe(
            "starts, but has no API key and no login: every turn would fail", model, ()
        )
    return StartProbe(None, model, ())


async def _control_response(stdout: asyncio.StreamReader) -> dict[str, Any] | None:
    async for line in lines_of(stdout):
        with contextlib.suppress(ValueError, RecursionError):
            obj = json.loads(line)
            response = obj.get("response") if isinstance(obj, dict) else None
            if isinstance(response, dict) and response.get("request_id") == _REQUEST_ID:
                inner = response.get("response")
                return inner if isinstance(inner, dict) else {}
    return None


def _default_model(answer: dict[str, Any]) -> str | None:
    for model in answer.get("models") or ():
        if isinstance(model, dict) and model.get("value") == "default":
            resolved = model.get("resolvedModel")
            return resolved if isinstance(resolved, str) else None
    return None


async def codex_dry_start(
    argv: list[str], env: Mapping[str, str], cwd: str, *, bound: float = VERSION_BOUND
) -> StartProbe:
    """`argv` (a codex command) as `codex app-server`, asked `initialize` and
    `config/read` only (no thread is started, so no rollout is written)."""
    full = [*argv] if "app-server" in argv else [*argv, "app-server"]
    proc = await _spawn(full, env, cwd)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(proc.stderr.read())
    client = JsonRpcClient(proc.stdin, proc.stdout)
    config: dict[str, Any] | None = None
    why: str | None = None
    try:
        info = {"name": "legion-doctor", "title": "legion doctor", "version": "0"}
        await client.request("initialize", {"clientInfo": info}, bound=bound)
        client.notify("initialized")
        answer = await client.request("config/read", {"cwd": cwd}, bound=bound)
        found = answer.get("config")
        config = found if isinstance(found, dict) else {}
    except TimeoutError:
        why = f"no answer within {bound:g} s"
    except RequestError as err:
        why = err.message
    finally:
        await client.close()
        await _end(proc)
    stderr = await errors
    if why is not None or config is None:
        return _failure(why or "no answer", proc, stderr)
    model = config.get("model") if isinstance(config.get("model"), str) else None
    provider = config.get("model_provider")
    provider = provider if isinstance(provider, str) else "openai"
    shown = f"{provider}/{model}" if model else provider
    providers = config.get("model_providers")
    declared = providers.get(provider) if isinstance(providers, dict) else None
    key = declared.get("env_key") if isinstance(declared, dict) else None
    if isinstance(key, str) and key and not env.get(key):
        return StartProbe(
            f"starts, but its provider {provider!r} reads its key from ${key}, which is not "
            "set: every turn would fail",
            shown,
            (),
        )
    return StartProbe(None, shown, ())
