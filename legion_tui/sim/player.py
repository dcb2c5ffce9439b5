"""The simulated agent's tools that act on the world (SPEC §9): the legion verbs a
centurion or root plays through the host's socket (spawn, wait, collect, phase, mail),
its contract in the run folder, and — in a worktree the supervisor named — an `edit`
that really changes a file and commits it on the team's branch. A refused request is
the tool's error result, and the agent carries on, as a real agent would; what the
team's verdict then says comes from here (`verdict`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from legion_tui.sim.config import SimConfig, contract_path
from legion_tui.sim.script import EDIT_NEW, EDIT_OLD, Step, ToolStep
from legion_tui.timeouts import within
from legion_tui.wire.client import LegionClient
from legion_tui.wire.names import RequestError

__all__ = ["SocketPlayer"]


class SocketPlayer:
    def __init__(self, cfg: SimConfig, *, speed: float, caught_up: Callable[[], None]) -> None:
        self.cfg = cfg
        self._speed = speed
        self._caught_up = caught_up  # a replayed history ends at the first real wait
        tree = cfg.behaviour.get("worktree")
        self.worktree: Path | None = Path(str(tree)) if tree else None
        self._client: LegionClient | None = None
        self._collected: dict[str, dict[str, Any]] = {}
        self._dispatch_error: str | None = None  # a refused spawn: the team never existed
        self._declared_failure: str | None = None  # the team moved itself to `failed`

    def acts(self, tool: ToolStep) -> bool:
        """Whether the tool call is played here (else its scripted result stands)."""
        return tool.action is not None or (tool.name == "edit" and self.worktree is not None)

    async def play(self, tool: ToolStep, step: Step) -> tuple[str, bool]:
        """The tool call's result text and whether it is an error."""
        if tool.action is None:
            return await self._edit_for_real(tool)
        try:
            return await self._act(tool.action, tool, step), False
        except (RequestError, OSError) as err:
            # A refused request (e.g. a phase the machine does not allow) is logged in the
            # transcript and the agent carries on, as a real agent would.
            if isinstance(err, RequestError):
                text = f"{err.code}: {err.message}"
            else:
                text = f"{type(err).__name__}: {err}"
            if tool.action == "spawn":
                self._dispatch_error = text
            return text, True

    def verdict(self, reason: str) -> tuple[bool, str]:
        """(ok, reason) of the final answer: `reason` unless the team could not be
        dispatched, declared itself failed, or a child it collected was not ok."""
        if self._dispatch_error is not None:
            return False, f"could not dispatch the team: {self._dispatch_error}"
        if self._declared_failure is not None:
            return False, self._declared_failure
        if self._collected:
            failed = [n for n, v in self._collected.items() if not v.get("ok")]
            if failed:
                return False, f"children not ok: {', '.join(failed)}"
            return True, f"{len(self._collected)} children delivered"
        return True, reason

    async def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                await within(self._client.close(), 0.3)
            self._client = None

    async def _request(self, op: str, **fields: Any) -> dict[str, Any]:
        if self.cfg.socket_path is None:
            raise RequestError("NO_SOCKET", "no supervisor socket in this run")
        if self._client is None:
            self._client = LegionClient(self.cfg.socket_path, self.cfg.node_id)
        return await self._client.request(op, **fields)

    async def _edit_for_real(self, tool: ToolStep) -> tuple[str, bool]:
        """An `edit` in a worktree changes the file and commits it on the team's branch.

        Only ever under the `worktree` the supervisor named, and only a path inside it."""
        from legion_tui.git.worktree import WorktreeError, commit_paths

        tree = self.worktree
        assert tree is not None
        rel = str(tool.args.get("path", ""))
        target = (tree / rel).resolve()
        if not rel or not target.is_relative_to(tree.resolve()):
            return f"refused: {rel!r} is outside the worktree", True
        # Read, change and write with no await in between: teammates in this process
        # edit the same checkout, and this keeps each edit whole.
        text = target.read_text(encoding="utf-8") if target.exists() else ""
        if EDIT_OLD in text:
            text = text.replace(EDIT_OLD, EDIT_NEW, 1)
            said = f"Successfully replaced text in {rel}."
        else:
            text += f"# {self.cfg.name}: checked, {EDIT_NEW} already set\n"
            said = f"{EDIT_OLD} not found in {rel}; noted the check at its end."
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        message = f"{self.cfg.name}: {EDIT_NEW} in {rel}"
        author = f"{self.cfg.name} <{self.cfg.name}@legion.invalid>"
        try:
            sha = await commit_paths(tree, [rel], message, author=author)
        except WorktreeError as err:
            return f"{said} Commit failed: {err}", True
        return f"{said} Committed {sha[:7]} on the team branch.", False

    async def _act(self, action: str, tool: ToolStep, step: Step) -> str:
        kind, _, arg = action.partition(":")
        if kind == "contract":
            return self._write_contract()
        if kind == "spawn":
            children = step.extra.get("children", [])
            return json.dumps(await self._request("spawn", children=children))
        if kind == "wait":
            bound = float(self.cfg.behaviour.get("wait_timeout", 3600.0)) / self._speed
            replies: list[str] = []
            # A wait that returns early with mail is read and the wait resumed (bounded).
            for _ in range(20):
                reply = await self._request("wait", names=None, timeout=bound)
                replies.append(json.dumps(reply))
                if reply.get("state") != "mail":
                    break
            # A real wait brings the agent to the present: what follows it happens now,
            # not as replayed history (a team's phases must not flash past).
            self._caught_up()
            return "\n".join(replies)
        if kind == "collect":
            result = await self._request("collect", name=arg)
            verdict = result.get("verdict")
            self._collected[arg] = verdict if isinstance(verdict, dict) else {"ok": False}
            return json.dumps(result)
        if kind == "phase":
            return await self._phase(arg)
        if kind == "mail":
            letter = tool.letter
            if letter is None:
                raise RequestError("BAD_REQUEST", "a mail step without a letter")
            to, mail_kind, subject, body = letter
            result = await self._request(
                "mail",
                to=to,
                subject=subject,
                body=body.replace("{me}", self.cfg.name),
                kind=mail_kind,
                urgency="normal",
            )
            return json.dumps(result)
        raise RequestError("UNKNOWN_ACTION", action)

    async def _phase(self, to: str) -> str:
        """`legion phase --to <to>`. When `done` is refused and the machine leaves only
        `failed`, the team says so itself, with the refusal as its reason — as a lead
        whose verification failed and whose rework is spent would."""
        try:
            result = await self._request("phase", to=to, note=f"{self.cfg.name} → {to}")
        except RequestError as err:
            legal = err.message.rpartition("Legal next phases")[2]
            if to != "done" or err.code != "PHASE_REFUSED" or "failed" not in legal:
                raise
            reason = f"done refused: {err.message}"
            failed = await self._request(
                "phase", to="failed", note=f"{self.cfg.name} → failed", reason=reason
            )
            self._declared_failure = reason
            return f"{err.code}: {err.message}\n{json.dumps(failed)}"
        return json.dumps(result)

    def _write_contract(self) -> str:
        path = contract_path(self.cfg.run_dir, self.cfg.name)
        path.parent.mkdir(exist_ok=True)  # not the run folder: one removed stays so
        commands = self.cfg.behaviour.get("verify") or ["true"]
        text = (
            f"# Contract: {self.cfg.name}\n\n"
            "Deliver the change with tests; no public API breaks.\n\n"
            "```legion-verify\n" + "".join(f"{c}\n" for c in commands) + "```\n"
        )
        path.write_text(text, encoding="utf-8")
        return f"Wrote {path} ({len(text.encode())} bytes)"
