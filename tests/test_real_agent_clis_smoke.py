"""The real, pinned Claude Code and Codex CLIs run one headless turn against the scripted server.

Proves the rig for issue 10 end to end, with nothing of legion in between: `make agents`
installed the CLIs, each runs in its own scratch HOME / `CLAUDE_CONFIG_DIR` / `CODEX_HOME`
with its offline switches on and a dummy key, the server's script decides what the model
says (a tool call that writes a file, then a final text with a verdict line), and what the
CLI did (the file), sent (its system prompt, its tools) and wrote (its own session or
rollout file, with the output tokens the server streamed) can be checked.

Claude Code: `claude -p … --output-format stream-json --verbose --session-id <uuid>`,
`ANTHROPIC_BASE_URL` = the server's origin, `DISABLE_TELEMETRY=1
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`; its Bash tool pre-approved with
`--allowedTools Bash`, or every permission bypassed with `--dangerously-skip-permissions`
(which as root needs `IS_SANDBOX=1`). Session file:
`$CLAUDE_CONFIG_DIR/projects/<cwd, every non-alphanumeric char → '-'>/<session-id>.jsonl`.

Codex: `codex exec --json -s workspace-write --skip-git-repo-check`, `$CODEX_HOME/config.toml`
declaring the `scripted` provider (`wire_api = "responses"`, `base_url` = the server's
`/v1`), `features.plugins = false`, `analytics.enabled = false`. Rollout file:
`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`.

Every wait is bounded and on a condition; the CLI runs in its own session (process
group) with a marker in its environment, and the test checks no process of it is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from agent_bins import codex_install
from claude_env import claude_vars, claude_world
from codex_env import codex_config
from model_server import ModelServer, RecordedRequest, Reply, Text, ToolCall
from process_helpers import by_env

from legion_tui.costs import cost_text
from legion_tui.model_records import Verdict
from legion_tui.session.reader import read_session
from legion_tui.session.verdict import extract_verdict

pytestmark = pytest.mark.real

RUN_TIMEOUT = 120.0  # one cold CLI start plus a two-call turn, on 2 loaded cores
LEFTOVER_TIMEOUT = 10.0
MARK = "LEGION_SMOKE_MARK"  # every process of one CLI run carries MARK=<its own value>
DUMMY_KEY = "sk-scripted-dummy-000"
PROVIDER = "scripted"
MODEL = "scripted-model"

# Kept from the parent environment; everything else is dropped (API keys, proxies, npm).
_INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "LEGION_AGENTS_DIR")
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

Event = dict[str, Any]

VERDICT = {"ok": True, "reason": "wrote hi.txt"}
FINAL = f"I wrote hi.txt and checked it.\n{json.dumps(VERDICT)}"
TOOL_TOKENS = 3 + 6  # the text part's pieces plus the call's argument pieces
FINAL_TOKENS = 15


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(model_ids=(MODEL,)) as s:
        yield s
        assert s.errors() == []


class ProxyLog:
    """A refusing proxy on 127.0.0.1 that records the first line of every connection made to
    it: with HTTP(S)_PROXY pointed here (and NO_PROXY for 127.0.0.1), any outbound attempt
    of a CLI shows up as a `CONNECT host:443` (or a plain GET) in `attempts()`."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="proxy-log", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    line = conn.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
                    with self._lock:
                        self._lines.append(line)
                    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")

    def attempts(self) -> list[str]:
        with self._lock:
            return list(self._lines)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


@pytest.fixture
def proxy_log() -> Iterator[ProxyLog]:
    proxy = ProxyLog()
    try:
        yield proxy
    finally:
        proxy.close()


def proxy_env(proxy: ProxyLog) -> dict[str, str]:
    """Every outbound request through the logging proxy; the model server reached directly."""
    env = {}
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[key] = env[key.lower()] = proxy.url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def until(predicate: Callable[[], bool], timeout: float, what: str,
          left: Callable[[], str] = str) -> None:
    """Poll `predicate` until it holds; fail the test after `timeout` s (never a blind sleep),
    saying what `left` finds still there."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}{left()}", pytrace=False)
        time.sleep(0.02)


def _described(pids: list[int]) -> str:
    """The processes left behind, by pid, state and command line (what a flake needs)."""
    rows = []
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        rows.append(f"{pid} ({state}) {cmdline.strip()[:200]}")
    return ("; still there: " + " | ".join(rows)) if rows else ""


def base_env(home: Path, bin_dir: Path, mark: str, extra: Mapping[str, str]) -> dict[str, str]:
    """An environment from scratch: the CLI's bin dir first on PATH, a scratch HOME, the mark."""
    env = {k: os.environ[k] for k in _INHERITED if k in os.environ}
    env.update({"PATH": f"{bin_dir}:{_SYSTEM_PATH}", "HOME": str(home), MARK: mark})
    env.update(extra)
    return env


def _group_alive(pgid: int) -> bool:
    """A process of the group still runs. A zombie does not: an in-process host of an
    earlier test made this worker a child subreaper (process-wide, for good), so the
    CLI's orphaned helpers re-parent here once it exits and, ended, wait to be reaped —
    `killpg(pgid, 0)` counted them alive (the Claude flake seen under load). Ours are
    reaped on the way."""
    alive = False
    for proc in psutil.process_iter(["pid", "status", "ppid"]):
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(proc.pid) != pgid:
                continue
            if proc.info["status"] != psutil.STATUS_ZOMBIE:
                alive = True
            elif proc.info["ppid"] == os.getpid():
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(proc.pid, os.WNOHANG)
    return alive


@dataclass
class CliRun:
    """One finished headless run of a CLI."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def events(self) -> list[Event]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


def run_headless(argv: Sequence[str], *, cwd: Path, env: dict[str, str], logs: Path,
                 label: str) -> CliRun:
    """Run `argv` to its end (stdin at EOF), bounded; then check it left no process."""
    mark = env[MARK]
    out_path, err_path = logs / f"{label}.stdout", logs / f"{label}.stderr"
    began = time.monotonic()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)
        try:
            returncode = proc.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            pytest.fail(f"{label}: did not finish within {RUN_TIMEOUT} s; stdout tail: "
                        f"{out_path.read_text(errors='replace')[-2000:]}; stderr tail: "
                        f"{err_path.read_text(errors='replace')[-2000:]}", pytrace=False)
    seconds = time.monotonic() - began
    try:
        until(lambda: not _group_alive(proc.pid) and not by_env(MARK, mark),
              LEFTOVER_TIMEOUT, f"{label}'s processes to end",
              lambda: _described(by_env(MARK, mark)))
    finally:
        if _group_alive(proc.pid):  # never leave them behind, even when failing
            os.killpg(proc.pid, signal.SIGKILL)
    return CliRun(returncode, out_path.read_text(errors="replace"),
                  err_path.read_text(errors="replace"), seconds)


def the_verdict(text: str) -> Verdict:
    verdict = extract_verdict(text)
    assert verdict is not None, text
    return verdict


def tool_then_final(call: ToolCall) -> tuple[Reply, Text]:
    """The script: a short text then the tool call (9 tokens), then the final text (15)."""
    return (Reply([Text("I'll write it.", tokens=3), call]),
            Text(FINAL, tokens=FINAL_TOKENS, tokens_per_second=300))


def check_two_calls(server: ModelServer, dialect: str) -> tuple[RecordedRequest, ...]:
    requests = tuple(server.wait_for_finished(2, timeout=5))
    assert len(requests) == 2, [(r.index, r.dialect, r.state) for r in requests]
    assert [r.state for r in requests] == ["completed", "completed"]
    assert server.unscripted() == []
    assert [r.dialect for r in requests] == [dialect, dialect]
    assert [r.output_tokens for r in requests] == [TOOL_TOKENS, FINAL_TOKENS]
    for request in requests:
        assert request.body.get("stream") is True
    return requests


# --------------------------------------------------------------------------- Claude Code


CLAUDE_PERMISSIONS = {
    # the one tool pre-approved: what a card's `tools` maps to
    "allowed-tools": (["--allowedTools", "Bash"], {}),
    # every permission bypassed: refused as root unless IS_SANDBOX=1
    "bypass": (["--dangerously-skip-permissions"], {"IS_SANDBOX": "1"}),
}


@pytest.mark.parametrize("permissions", sorted(CLAUDE_PERMISSIONS))
def test_claude_code_runs_a_tool_then_answers(permissions: str, server: ModelServer,
                                              proxy_log: ProxyLog, tmp_path: Path) -> None:
    world = claude_world(tmp_path)
    flags, extra_env = CLAUDE_PERMISSIONS[permissions]
    target = world.workdir / "hi.txt"
    call = (ToolCall("Bash", {"command": "printf hi > hi.txt", "description": "write hi.txt"},
                     id="toolu_smoke_1", tokens=6)
            if permissions == "allowed-tools" else
            ToolCall("Write", {"file_path": str(target), "content": "hi"},
                     id="toolu_smoke_1", tokens=6))
    server.script(*tool_then_final(call))
    session_id = str(uuid.uuid4())
    env = base_env(world.home, world.install.bin_dir, session_id, {
        **claude_vars(world, server.origin),
        **proxy_env(proxy_log),
        **extra_env,
    })
    prompt = "Create hi.txt containing hi, then give a verdict."
    run = run_headless(
        [str(world.install.exe), "-p", prompt, "--output-format", "stream-json", "--verbose",
         "--session-id", session_id, *flags],
        cwd=world.workdir, env=env, logs=world.logs, label=f"claude-{permissions}")
    assert run.returncode == 0, run.stderr[-2000:]

    # the tool ran
    assert target.read_text() == "hi"

    # its stdout: init, the tool's result, the final `result` line with the verdict
    events = run.events()
    init = events[0]
    assert (init["type"], init["subtype"]) == ("system", "init")
    assert init["session_id"] == session_id
    assert init["apiKeySource"] == "ANTHROPIC_API_KEY"
    assert init["claude_code_version"] == world.install.version
    results = [b for e in events if e["type"] == "user"
               for b in e["message"]["content"] if isinstance(b, dict)
               and b.get("type") == "tool_result"]
    # (the Write tool's result has no `is_error` at all; Bash's says false)
    assert [(r["tool_use_id"], r.get("is_error", False)) for r in results] == [
        ("toolu_smoke_1", False)]
    result = events[-1]
    assert result["type"] == "result"
    assert result["is_error"] is False
    assert result["terminal_reason"] == "completed"
    assert result["permission_denials"] == []
    assert result["result"] == FINAL
    assert the_verdict(result["result"]) == Verdict(True, "wrote hi.txt")
    assert result["usage"]["output_tokens"] == TOOL_TOKENS + FINAL_TOKENS

    # what the server saw: only the Messages API, Claude Code's own prompt and tools
    first, second = check_two_calls(server, "anthropic-messages")
    assert {(c.method, c.path) for c in server.log()} == {("POST", "/v1/messages?beta=true")}
    assert proxy_log.attempts() == []  # nothing else went out
    for request in (first, second):
        assert request.headers["user-agent"].startswith(
            f"claude-cli/{world.install.version} ")
        assert request.system_prompt is not None
        assert "Claude Agent SDK" in request.system_prompt
        assert {"Bash", "Write", "Read", "Edit"} <= set(request.tool_names)
    assert first.last_user_text().endswith(prompt)
    tool_results = [b for m in second.messages if m.get("role") == "user"
                    and isinstance(m.get("content"), list)
                    for b in m["content"] if b.get("type") == "tool_result"]
    assert [b["tool_use_id"] for b in tool_results] == ["toolu_smoke_1"]

    # its session file: one usage per message.id, exactly the tokens the server streamed
    path = world.session_file(session_id)
    assert path.is_file(), sorted(str(p) for p in world.config_dir.rglob("*.jsonl"))
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert all(line.get("sessionId", session_id) == session_id for line in lines)
    calls: dict[str, Event] = {}
    for line in lines:
        if line.get("type") == "assistant" and line["message"].get("model") != "<synthetic>":
            calls.setdefault(line["message"]["id"], line["message"])
    assert list(calls) == ["scripted-1", "scripted-2"]
    assert [m["usage"]["output_tokens"] for m in calls.values()] == [
        first.output_tokens, second.output_tokens]
    assert [m["stop_reason"] for m in calls.values()] == ["tool_use", "end_turn"]
    assert sum(line.get("type") == "api-request" for line in lines) == 2
    assert calls["scripted-2"]["content"][-1]["text"] == FINAL


# --------------------------------------------------------------------------------- Codex


def test_codex_exec_runs_a_tool_then_answers(server: ModelServer, proxy_log: ProxyLog,
                                             tmp_path: Path) -> None:
    install = codex_install()
    home, codex_home, workdir, logs = (tmp_path / "home", tmp_path / "codex-home",
                                       tmp_path / "work", tmp_path / "logs")
    for d in (home, codex_home, workdir, logs):
        d.mkdir()
    (codex_home / "config.toml").write_text(codex_config(server.base_url))
    server.script(*tool_then_final(
        ToolCall("exec_command", {"cmd": "printf hi > hi.txt"}, id="call_smoke_1", tokens=6)))
    env = base_env(home, install.bin_dir, str(uuid.uuid4()), {
        "CODEX_HOME": str(codex_home), "SCRIPTED_API_KEY": DUMMY_KEY, **proxy_env(proxy_log),
    })
    prompt = "Create hi.txt containing hi, then give a verdict."
    run = run_headless(
        [str(install.exe), "exec", "--json", "-s", "workspace-write", "--skip-git-repo-check",
         prompt],
        cwd=workdir, env=env, logs=logs, label="codex-exec")
    assert run.returncode == 0, run.stderr[-2000:]

    # the tool ran (inside the workspace-write sandbox)
    assert (workdir / "hi.txt").read_text() == "hi"

    # its stdout: the thread, the command, the final message with the verdict
    events = run.events()
    assert events[0]["type"] == "thread.started"
    thread_id = events[0]["thread_id"]
    items = [e["item"] for e in events if e["type"] == "item.completed"]
    commands = [i for i in items if i["type"] == "command_execution"]
    assert [(c["exit_code"], c["status"]) for c in commands] == [(0, "completed")]
    assert "printf hi > hi.txt" in commands[0]["command"]
    messages = [i["text"] for i in items if i["type"] == "agent_message"]
    assert messages[-1] == FINAL
    assert the_verdict(messages[-1]) == Verdict(True, "wrote hi.txt")
    assert events[-1]["type"] == "turn.completed"
    assert events[-1]["usage"]["output_tokens"] == TOOL_TOKENS + FINAL_TOKENS  # thread total

    # what the server saw: only the Responses API, Codex's own prompt and tools
    first, second = check_two_calls(server, "openai-responses")
    assert {(c.method, c.path) for c in server.log()} == {("POST", "/v1/responses")}
    assert proxy_log.attempts() == []  # nothing else went out
    for request in (first, second):
        assert request.model == MODEL
        assert request.headers["user-agent"].startswith(f"codex_exec/{install.version} ")
        assert request.headers["authorization"] == f"Bearer {DUMMY_KEY}"
        assert request.body.get("store") is False
        assert request.system_prompt is not None
        assert "You are a coding agent running in the Codex CLI" in request.system_prompt
        assert "exec_command" in request.tool_names
    outputs = [i for i in second.body["input"] if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["call_smoke_1"]

    # its rollout file: one token_usage_record per response, the tokens the server streamed
    rollouts = sorted((codex_home / "sessions").glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    assert len(rollouts) == 1, sorted(str(p) for p in codex_home.rglob("*.jsonl"))
    lines = [json.loads(line) for line in rollouts[0].read_text().splitlines() if line.strip()]
    meta = next(line["payload"] for line in lines if line["type"] == "session_meta")
    assert meta["cli_version"] == install.version
    assert meta["model_provider"] == PROVIDER
    records = [line["payload"] for line in lines if line["type"] == "token_usage_record"]
    assert [r["usage"]["output_tokens"] for r in records] == [first.output_tokens,
                                                              second.output_tokens]
    done = [line["payload"] for line in lines if line["type"] == "event_msg"
            and line["payload"].get("type") == "task_complete"]
    assert [d["last_agent_message"] for d in done] == [FINAL]


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", MODEL])
def test_claude_codes_own_cost_is_legions_estimate(model: str, server: ModelServer,
                                                    proxy_log: ProxyLog, tmp_path: Path) -> None:
    """Issue 32 item 1. Claude's session file carries each call's tokens, no cost: legion
    prices each call from the price table. For a model Claude prices itself, its own
    `total_cost_usd` and legion's estimate are the same figure, and the total Claude
    writes as it exits is taken as its own; for a model no table knows, legion says the
    cost is unknown (`$?`), never $0 — nor Claude's guess at it."""
    world = claude_world(tmp_path)
    server.script(*tool_then_final(
        ToolCall("Bash", {"command": "printf hi > hi.txt", "description": "write hi.txt"},
                 id="toolu_cost_1", tokens=6)))
    session_id = str(uuid.uuid4())
    env = base_env(world.home, world.install.bin_dir, session_id,
                   {**claude_vars(world, server.origin), **proxy_env(proxy_log)})
    run = run_headless(
        [str(world.install.exe), "-p", "Create hi.txt containing hi, then give a verdict.",
         "--output-format", "stream-json", "--verbose", "--session-id", session_id,
         "--allowedTools", "Bash", "--model", model],
        cwd=world.workdir, env=env, logs=world.logs, label=f"claude-cost-{model}")
    assert run.returncode == 0, run.stderr[-2000:]
    own = run.events()[-1]
    assert own["type"] == "result"
    progress = read_session(world.session_file(session_id))
    assert progress.tokens.output == own["usage"]["output_tokens"] == TOOL_TOKENS + FINAL_TOKENS
    print(f"{model}: Claude's total_cost_usd {own['total_cost_usd']}, legion's "
          f"{progress.cost} ({progress.cost_basis})")
    if model == MODEL:
        assert (progress.cost, progress.cost_basis, progress.unpriced_calls) == (0, "unknown", 2)
        assert cost_text(progress.cost, progress.cost_basis, long=True) == "$? tokens only"
    else:
        assert own["total_cost_usd"] > 0
        # legion's estimate is Claude's figure; and Claude's own, from the `cost-state`
        # it wrote as it exited, is the session's cost.
        assert progress.tokens.cost == pytest.approx(own["total_cost_usd"], rel=1e-9)
        assert progress.reported_cost == pytest.approx(own["total_cost_usd"], rel=1e-9)
        assert (progress.cost_basis, progress.estimated_calls) == ("reported", 2)
