"""What travels between the host and an agent's Ray node besides the mirrored bytes
(issue 15): out with the launch, a resume's session as the host mirrored it and the
team's branch as a git bundle (through Ray's object store); back, at every turn's end
and at the stop, the branch's new commits as a bundle, fetched into the host's worktree.

Each agent works on a clone of its own, cut when it started: two members of one team
that both commit diverge, where in one shared worktree (a local team) the second would
have committed on top of the first. The first to come back fast-forwards the branch; a
later one's commits are replayed on top (`git cherry-pick`: the history a shared
worktree would have made, the authors kept). Ones that cannot be replayed (a sibling
changed the same lines) are never dropped: they stay on a branch of their own, named in
a warning.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from legion_tui.git.process import run_tool
from legion_tui.git.worktree import WorktreeError, _git
from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.ray.actor import Shipment

__all__ = ["TEAM_BRANCH_PREFIX", "TeamBranch"]

log = logging.getLogger(__name__)

TEAM_BRANCH_PREFIX = "legion/"  # only a team's own branch travels; a user's never does

# One lock per team branch (run folder, branch): its members' commits come back into one
# worktree — one FETCH_HEAD, one index — so one bring-back at a time.
_taking: dict[tuple[str, str], asyncio.Lock] = {}


class TeamBranch:
    """One agent's branch on its trips to and from its node."""

    def __init__(self, spec: LaunchSpec) -> None:
        self.spec = spec
        self._branch: str | None = None  # the team's branch, when it travelled
        # The node's HEAD whose commits the host has taken (at first: the HEAD shipped).
        # Not the host's HEAD: replayed commits have other shas there.
        self._taken = ""

    async def shipment(self) -> Shipment:
        """The launch's cargo: the session a resume continues, the team's branch."""
        spec = self.spec
        resumed = spec.resume and spec.session_file.is_file()
        session = spec.session_file.read_bytes() if resumed else b""
        # pi's file is the link's target, named by pi: the node puts it back under that name.
        linked = session and spec.session_file.is_symlink()
        name = spec.session_file.resolve().name if linked else ""
        code, branch, _ = await run_tool(["git", "rev-parse", "--abbrev-ref", "HEAD"], spec.cwd)
        branch = branch.strip()
        if code != 0 or not branch.startswith(TEAM_BRANCH_PREFIX):
            return Shipment(session=session, session_name=name)  # no team branch: as it is
        prefix = await _git(spec.cwd, "rev-parse", "--show-prefix")
        self._taken = await _git(spec.cwd, "rev-parse", "HEAD")
        bundle = spec.run_dir / "bundles" / f"{spec.node_id}.out.bundle"
        bundle.parent.mkdir(parents=True, exist_ok=True)
        try:
            await _git(spec.cwd, "bundle", "create", "--quiet", str(bundle), branch)
            data = bundle.read_bytes()
        finally:
            bundle.unlink(missing_ok=True)
        self._branch = branch
        identity = [
            (await run_tool(["git", "config", key], spec.cwd))[1].strip()
            for key in ("user.name", "user.email")
        ]
        return Shipment(
            bundle=data,
            branch=branch,
            prefix=prefix,
            session=session,
            session_name=name,
            identity=(identity[0], identity[1]),
        )

    async def bring_back(self, actor: Any) -> None:
        """The node's new commits on the team's branch → the host's worktree: a
        fast-forward, else replayed on top of what its siblings brought back, else kept
        on a branch of their own (said)."""
        if self._branch is None:
            return
        back: tuple[str, bytes] | None = await actor.commits.remote(self._taken)
        if back is None:
            return
        head, data = back
        bundle = self.spec.run_dir / "bundles" / f"{self.spec.node_id}.in.bundle"
        bundle.parent.mkdir(parents=True, exist_ok=True)
        bundle.write_bytes(data)
        lock = _taking.setdefault((str(self.spec.run_dir), self._branch), asyncio.Lock())
        try:
            async with lock:
                await self._take(self._branch, bundle)
            self._taken = head
        except WorktreeError as err:  # not even fetched: the node still has them
            log.warning("%s: the node's commits did not come back: %s", self.spec.name, err)
        finally:
            bundle.unlink(missing_ok=True)

    async def _take(self, branch: str, bundle: Path) -> None:
        cwd = self.spec.cwd
        await _git(cwd, "fetch", "--quiet", str(bundle), branch)
        try:
            await _git(cwd, "merge", "--quiet", "--ff-only", "FETCH_HEAD")
            return
        except WorktreeError:
            pass  # a sibling's commits came back first: the branch moved under this clone
        try:
            await _git(cwd, "cherry-pick", f"{self._taken}..FETCH_HEAD")
            return
        except WorktreeError as err:
            refused = str(err)
        await run_tool(["git", "cherry-pick", "--abort"], cwd)  # the branch as it was
        kept = f"{branch}-{self.spec.node_id}"
        await _git(cwd, "branch", "--force", kept, "FETCH_HEAD")
        log.warning("%s: its commits do not go onto %s (%s): kept on branch %s",
                    self.spec.name, branch, refused.splitlines()[0], kept)  # fmt: skip
