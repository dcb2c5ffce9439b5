"""The simulated agent's scenario: what it says and does, drawn from one seeded RNG.

A plan is a list of `Step`s; each step is one assistant message (one LLM call) with its
output size and decode rate, followed by the tool calls it makes. A step without tools
is the final answer. Orchestration steps (centurion/root) carry an `action` that the
agent performs for real through the supervisor's socket while the tool "runs".

Everything random comes from the `random.Random` passed in, so a seed fixes the whole
scenario (SPEC §9). Durations are at speed 1; the agent divides them by its speed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EDIT_NEW",
    "EDIT_OLD",
    "MODEL",
    "PROVIDER",
    "SANDBOX_FILES",
    "Step",
    "ToolStep",
    "continuation",
    "plan_for",
    "price",
]

PROVIDER = "anthropic"
MODEL = "claude-sonnet-4-5"

# USD per million tokens (Sonnet list prices): input, output, cache read, cache write.
_PRICES = (3.0, 15.0, 0.30, 3.75)

_FILES = (
    "src/app/config.py",
    "src/app/server.py",
    "src/app/models/user.py",
    "src/app/routes/orders.py",
    "src/app/utils/retry.py",
    "tests/test_orders.py",
    "tests/test_retry.py",
    "README.md",
    "pyproject.toml",
)
EDIT_OLD, EDIT_NEW = "timeout=None", "timeout=30.0"  # what every scripted edit changes


def _module(name: str) -> str:
    return (
        f'"""{name}: part of the demo project the simulated legion works on."""\n\n'
        "import requests\n\n\n"
        f"def call(url):\n    return requests.get(url, {EDIT_OLD})\n"
    )


# The small project a sandbox repository (the demo's) starts with: the files the sim's
# reads and edits name, plus one (db.py) that no scripted edit touches — a contract that
# checks "every call has a timeout" finds it, honestly.
SANDBOX_FILES: dict[str, str] = {
    **{f: _module(f) for f in _FILES if f.endswith(".py")},
    "src/app/db.py": _module("src/app/db.py"),
    "README.md": "# app\n\nThe demo project of `legion demo`.\n",
    "pyproject.toml": '[project]\nname = "app"\nversion = "0.3.1"\n',
}
_PATTERNS = ("TODO", "def retry", "class Order", "timeout=", "import requests", "raise ")
_BASH = (
    ("pytest -q tests/test_orders.py", "12 passed in 3.41s"),
    ("ruff check src", "All checks passed!"),
    ("mypy --strict src", "Success: no issues found in 24 source files"),
    ("pytest -q", "87 passed, 2 skipped in 41.20s"),
    ("python -m build", "Successfully built app-0.3.1.tar.gz and app-0.3.1-py3-none-any.whl"),
)
_THOUGHTS = (
    "Let me look at how this is wired before changing anything.",
    "I'll check where this is used.",
    "The retry logic swallows the timeout; fixing that next.",
    "Now I'll run the tests to see where we stand.",
    "That narrows it down. One more look at the call sites.",
    "Applying the change and re-running the checks.",
)


@dataclass(frozen=True)
class ToolStep:
    name: str  # read | grep | edit | bash
    args: dict[str, Any]
    duration: float  # seconds at speed 1
    result: str
    is_error: bool = False
    action: str | None = None  # orchestration: contract, spawn, wait, collect:<n>, phase:<p>, mail
    letter: tuple[str, str, str, str] | None = None  # mail: (to, kind, subject, body)
    until: str | None = None  # a file: the call lasts until it exists (`duration` unused)


@dataclass(frozen=True)
class Step:
    text: str  # what the assistant says before its tool calls (or the final answer)
    output_tokens: int
    rate: float  # decode rate in tok/s at speed 1
    tools: tuple[ToolStep, ...] = ()
    final: bool = False
    fail: bool = False  # the provider returns an empty generation with stopReason "error"
    extra: dict[str, Any] = field(default_factory=dict)


def price(input_tokens: int, output: int, cache_read: int, cache_write: int) -> dict[str, float]:
    p_in, p_out, p_cr, p_cw = _PRICES
    cost = {
        "input": input_tokens * p_in / 1e6,
        "output": output * p_out / 1e6,
        "cacheRead": cache_read * p_cr / 1e6,
        "cacheWrite": cache_write * p_cw / 1e6,
    }
    cost["total"] = sum(cost.values())
    return {k: round(v, 8) for k, v in cost.items()}


def _rate(rng: random.Random, base: float) -> float:
    # Bursts: now and then a message decodes much faster (cached prefix, short answer).
    if rng.random() < 0.15:
        return round(rng.uniform(120.0, 150.0), 1)
    return round(min(150.0, max(40.0, rng.gauss(base, 12.0))), 1)


def _read(rng: random.Random) -> ToolStep:
    path = rng.choice(_FILES)
    lines = rng.randint(40, 400)
    return ToolStep(
        "read",
        {"path": path},
        round(rng.uniform(0.3, 2.0), 2),
        f"{path}: {lines} lines\n" + "\n".join(f"{i:>4}  ..." for i in range(1, 4)),
    )


def _grep(rng: random.Random) -> ToolStep:
    pattern = rng.choice(_PATTERNS)
    hits = rng.randint(0, 9)
    body = "\n".join(f"{rng.choice(_FILES)}:{rng.randint(1, 300)}: {pattern}" for _ in range(hits))
    return ToolStep(
        "grep",
        {"pattern": pattern, "path": "src"},
        round(rng.uniform(0.5, 4.0), 2),
        body or "No matches found",
    )


def _edit(rng: random.Random) -> ToolStep:
    path = rng.choice(_FILES[:6])
    return ToolStep(
        "edit",
        {"path": path, "oldText": EDIT_OLD, "newText": EDIT_NEW},
        round(rng.uniform(0.2, 1.5), 2),
        f"Successfully replaced text in {path}.",
    )


def _bash(rng: random.Random, long: bool = False) -> ToolStep:
    command, output = rng.choice(_BASH)
    # Seconds to minutes: most commands are quick, test suites take a while.
    duration = rng.uniform(20.0, 150.0) if long else rng.uniform(2.0, 25.0)
    return ToolStep("bash", {"command": command}, round(duration, 2), output)


def _stall(seconds: float, until: str | None = None) -> ToolStep:
    return ToolStep(
        "bash",
        {"command": "pytest -q tests/integration --maxfail=1"},
        float(seconds),
        f"1 failed, 140 passed in {seconds:.1f}s",
        is_error=True,
        until=until,
    )


def _step(rng: random.Random, base: float, tools: list[ToolStep]) -> Step:
    return Step(rng.choice(_THOUGHTS), rng.randint(60, 700), _rate(rng, base), tuple(tools))


def _final(rng: random.Random, base: float, role: str, fail: bool, quick: bool = False) -> Step:
    if fail:
        return Step("", 0, _rate(rng, base), final=True, fail=True)
    summary = {
        "scout": "Mapped the code paths the task touches; findings above.",
        "worker": "Implemented the change; tests and linters pass.",
        "centurion": "The team delivered; contract checks pass.",
        "root": "All teams delivered.",
    }.get(role, "Done.")
    tokens = rng.randint(80, 240) if quick else rng.randint(150, 900)
    return Step(summary, tokens, _rate(rng, base), final=True)


def plan_for(role: str, rng: random.Random, behaviour: dict[str, Any]) -> list[Step]:
    """The whole first run of an agent of `role` (SPEC §9)."""
    base = rng.uniform(55.0, 110.0)
    stall = float(behaviour.get("stall_seconds") or 0.0)
    until = behaviour.get("stall_until")
    fail = bool(behaviour.get("fail"))
    steps: list[Step] = []
    if role == "scout":
        for _ in range(rng.randint(2, 4)):
            steps.append(_step(rng, base, [rng.choice((_read, _grep))(rng)]))
    elif role in ("centurion", "root"):
        steps.extend(_orchestration(rng, base, role, behaviour))
    elif behaviour.get("quick"):
        # A short task: look, change one thing, check it — no long test run.
        steps.append(_step(rng, base, [_read(rng), _grep(rng)]))
        steps.append(_step(rng, base, [_edit(rng)]))
        steps.append(_step(rng, base, [rng.choice((_edit, _bash))(rng)]))
    else:
        steps.append(_step(rng, base, [_read(rng), _grep(rng)]))
        for _ in range(rng.randint(2, 4)):
            kind = rng.choice((_read, _edit, _edit, _bash))
            steps.append(_step(rng, base, [kind(rng)]))
        steps.append(_step(rng, base, [_bash(rng, long=True)]))
    if stall > 0 or until:
        # Early in the run, so that `history_seconds` can put "now" inside the stall.
        steps.insert(1, _step(rng, base, [_stall(stall, str(until) if until else None)]))
    letters = [_letter(raw) for raw in behaviour.get("mail") or [] if isinstance(raw, dict)]
    if letters:
        # Reports and questions go out once the work is done, before the final answer.
        steps.append(_step(rng, base, [_mail_tool(letter) for letter in letters]))
    steps.append(_final(rng, base, role, fail, bool(behaviour.get("quick"))))
    return steps


def _letter(raw: dict[str, Any]) -> tuple[str, str, str, str]:
    """(to, kind, subject, body) of a `mail` knob item; `to` may be `parent`."""
    return (
        str(raw.get("to", "parent")),
        str(raw.get("kind", "report")),
        str(raw.get("subject", "Report")),
        str(raw.get("body", "")),
    )


def _mail_tool(letter: tuple[str, str, str, str]) -> ToolStep:
    to, kind, subject, _body = letter
    command = f"legion mail {to} --kind {kind} --subject {subject!r}"
    return ToolStep("bash", {"command": command}, 0.2, "", action="mail", letter=letter)


def continuation(
    rng: random.Random, role: str, fail: bool = False, quick: bool = False
) -> list[Step]:
    """What the agent does after a steer, a mail or a resume once its plan is done
    (`quick`: one short look and a short answer)."""
    base = rng.uniform(55.0, 110.0)
    if quick:
        tool = rng.choice((_read, _grep))(rng)
        look = Step(rng.choice(_THOUGHTS), rng.randint(40, 160), _rate(rng, base), (tool,))
        return [look, _final(rng, base, role, fail, quick=True)]
    steps = [_step(rng, base, [rng.choice((_read, _grep, _edit))(rng)])]
    if rng.random() < 0.5:
        steps.append(_step(rng, base, [_bash(rng)]))
    steps.append(_final(rng, base, role, fail))
    return steps


def _children(rng: random.Random, behaviour: dict[str, Any]) -> list[dict[str, Any]]:
    given = behaviour.get("children")
    if isinstance(given, list) and given:
        return [dict(c) for c in given if isinstance(c, dict)]
    counts: dict[str, int] = {}
    children: list[dict[str, Any]] = []
    for _ in range(rng.randint(2, 4)):
        role = rng.choice(("worker", "worker", "scout"))
        n = counts.get(role, 0)
        counts[role] = n + 1
        what = rng.choice(("the retry path", "order validation", "config loading", "the CLI"))
        verb = "Survey" if role == "scout" else "Fix"
        children.append({"role": role, "name": f"{role}-{n}", "task": f"{verb} {what}."})
    return children


def _orchestration(
    rng: random.Random, base: float, role: str, behaviour: dict[str, Any]
) -> list[Step]:
    children = _children(rng, behaviour)
    names = [str(c.get("name", "")) for c in children]
    phased = role == "centurion"
    quick = bool(behaviour.get("quick"))

    def brief(tools: list[ToolStep]) -> Step:
        # A quick lead says little between its moves once the team is back.
        if quick:
            return Step(rng.choice(_THOUGHTS), rng.randint(40, 120), _rate(rng, base), tuple(tools))
        return _step(rng, base, tools)

    def act(command: str, action: str, duration: float = 0.2) -> ToolStep:
        return ToolStep("bash", {"command": command}, duration, "", action=action)

    steps = [_step(rng, base, [_read(rng)])]
    if phased:
        steps.append(
            _step(
                rng,
                base,
                [ToolStep("edit", {"path": "contract.md"}, 0.5, "", action="contract")],
            )
        )
        steps.append(
            _step(rng, base, [act("legion phase --to implementing", "phase:implementing")])
        )
    spawn = Step(
        "Dispatching the team.",
        rng.randint(120, 400),
        _rate(rng, base),
        (act(f"legion spawn {' '.join(names)}", "spawn", 0.5),),
        extra={"children": children},
    )
    steps.append(spawn)
    # A handoff to each member: its part of the contract.
    handoffs = [
        _mail_tool(
            (
                str(c["name"]),
                "handoff",
                f"Handoff: {c['name']}",
                f"Your part: {c.get('task', '')} The contract is contracts/{{me}}.md; "
                "report to me when it is done.",
            )
        )
        for c in children
        if c.get("name") and c.get("handoff", True)  # False: it will have ended by then
    ]
    if handoffs:
        steps.append(_step(rng, base, handoffs))
    steps.append(_step(rng, base, [act("legion wait", "wait")]))
    if phased:
        steps.append(brief([act("legion phase --to reviewing", "phase:reviewing")]))
    steps.append(brief([act(f"legion collect {n}", f"collect:{n}") for n in names if n]))
    if phased:
        steps.append(brief([act("legion phase --to verifying", "phase:verifying")]))
        if not quick:
            steps.append(_step(rng, base, [_bash(rng)]))
        steps.append(brief([act("legion phase --to done", "phase:done")]))
    return steps
