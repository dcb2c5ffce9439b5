"""What travels between the host and an agent's Ray node besides the mirrored bytes
(issue 15): out with the launch, a resume's session as the host mirrored it and the
team's branch as a git bundle (through Ray's object store); back, at every turn's end
and at the stop, the branch's new commits as a bundle, fetched into the host's worktree
(fast-forward only).
"""

from __future__ import annotations

import logging
from typing import Any

from legion_tui.git.process import run_tool
from legion_tui.git.worktree import WorktreeError, _git
from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.ray.actor import Shipment

__all__ = ["TEAM_BRANCH_PREFIX", "TeamBranch"]

log = logging.getLogger(__name__)

TEAM_BRANCH_PREFIX = "legion/"  # only a team's own branch travels; a user's never does


class TeamBranch:
    """One agent's branch on its trips to and from its node."""

    def __init__(self, spec: LaunchSpec) -> None:
        self.spec = spec
        self._branch: str | None = None  # the team's branch, when it travelled
        self._head = ""  # the branch's HEAD the host holds

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
        self._head = await _git(spec.cwd, "rev-parse", "HEAD")
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
        """The node's new commits on the team's branch → the host's worktree (ff only)."""
        if self._branch is None:
            return
        back: tuple[str, bytes] | None = await actor.commits.remote(self._head)
        if back is None:
            return
        head, data = back
        bundle = self.spec.run_dir / "bundles" / f"{self.spec.node_id}.in.bundle"
        bundle.parent.mkdir(parents=True, exist_ok=True)
        bundle.write_bytes(data)
        try:
            await _git(self.spec.cwd, "fetch", "--quiet", str(bundle), self._branch)
            await _git(self.spec.cwd, "merge", "--quiet", "--ff-only", "FETCH_HEAD")
            self._head = head
        except WorktreeError as err:  # the host's copy moved too: kept, and said so
            log.warning("%s: the node's commits did not come back: %s", self.spec.name, err)
        finally:
            bundle.unlink(missing_ok=True)
