"""Names: the one place a name a caller typed becomes a node of this legion.

`resolve` (a caller's descendants only), `resolve_any` (root may also name itself) and
`child_names` (the names a spawn batch gets) all read the model; nothing here writes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from legion_tui.wire.names import NAME_PATTERN, ROOT_ID, OpError, shortest_refs

if TYPE_CHECKING:
    from legion_tui.model_records import Node
    from legion_tui.state import LegionModel
    from legion_tui.wire.spawn_request import ChildRequest

__all__ = ["NAME_RE", "RESERVED_NAMES", "Names"]

log = logging.getLogger(__name__)

NAME_RE = re.compile(NAME_PATTERN)
# `stop all` and the host's `root` already mean something wherever a name is read.
RESERVED_NAMES = frozenset({"all", ROOT_ID})


class Names:
    """Lookups, permissions by ancestry and the naming of new children, over one model."""

    def __init__(self, model: LegionModel) -> None:
        self._model = model

    def node(self, node_id: str) -> Node:
        view = self._model.nodes.get(node_id)
        if view is None:
            raise OpError("NOT_FOUND", f"no node {node_id!r} in this legion")
        return view.node

    def caller(self, caller_id: str) -> Node:
        view = self._model.nodes.get(caller_id)
        if view is None:
            raise OpError("UNKNOWN_CALLER", f"caller {caller_id!r} is not a node of this legion")
        return view.node

    def is_descendant(self, node_id: str, ancestor_id: str) -> bool:
        view = self._model.nodes.get(node_id)
        while view is not None and view.node.parent_id is not None:
            if view.node.parent_id == ancestor_id:
                return True
            view = self._model.nodes.get(view.node.parent_id)
        return False

    def depth(self, node_id: str) -> int:
        depth, view = 0, self._model.nodes.get(node_id)
        while view is not None and view.node.parent_id is not None:
            depth += 1
            view = self._model.nodes.get(view.node.parent_id)
        return depth

    def ref(self, node: Node) -> str:
        """The shortest name a hint can print for `node` (see `shortest_refs`)."""
        return shortest_refs(v.node for v in self._model.nodes.values())[node.id]

    def resolve(self, caller_id: str, name: str) -> Node:
        """`name`, `parent/name` (relative to the caller), a full `root/...` path or a node
        id, restricted to the caller's descendants (root: everything but itself)."""
        caller = self.caller(caller_id)
        target = self.find(caller, name)
        if target is None:
            raise OpError("NOT_FOUND", f"no node named {name!r} below {caller.path}")
        if target.id == caller.id or not self.is_descendant(target.id, caller.id):
            raise OpError(
                "FORBIDDEN",
                f"{caller.name} may control only its own descendants; {target.path} is not one",
            )
        return target

    def resolve_any(self, name: str) -> Node:
        """As root resolves it, but `root` itself is a valid answer (`legion status root`)."""
        if name == ROOT_ID:
            return self.node(ROOT_ID)
        return self.resolve(ROOT_ID, name)

    def find(self, caller: Node, name: str) -> Node | None:
        """An id, a path relative to the caller, a full path, or an unambiguous bare name
        below the caller (AMBIGUOUS when several match); None when nothing does."""
        name = name.strip().strip("/")
        if not name:
            return None
        if name in self._model.nodes:
            return self._model.nodes[name].node
        by_path = {v.node.path: v.node for v in self._model.nodes.values()}
        for candidate in (f"{caller.path}/{name}", name):
            if candidate in by_path:
                return by_path[candidate]
        if "/" in name:
            return None
        # A bare name anywhere below the caller, when it is unambiguous.
        matches = [v.node for v, _ in self._model.walk(caller.id) if v.node.name == name]
        if len(matches) > 1:
            paths = ", ".join(m.path for m in matches)
            raise OpError("AMBIGUOUS", f"{name!r} names several nodes ({paths}); use a path")
        return matches[0] if matches else None

    def child_names(
        self, caller: Node, requests: Sequence[ChildRequest], kinds: Sequence[str] = ()
    ) -> list[str]:
        """Given names must be valid and unique (among siblings and in the batch);
        missing ones are numbered `<role>-N` with the lowest free N. The attempts of a
        fan-out (`group`) are named `<group>.<kind>-<i>` (`kinds`: what each runs)."""
        siblings = [self._model.nodes[c].node for c in self._model.children(caller.id)]
        taken = {n.name for n in siblings}
        self._name_groups(caller, requests, taken, {n.attempt_group for n in siblings})
        numbers: dict[str, int] = {}
        for req, kind in zip(requests, kinds or [""] * len(requests), strict=True):
            if req.group is not None and req.name is None:
                numbers[req.group] = numbers.get(req.group, 0) + 1
                req.name = f"{req.group}.{kind or req.role}-{numbers[req.group]}"
        given = [r.name for r in requests if r.name is not None]
        for name in given:
            if not NAME_RE.fullmatch(name):
                raise OpError(
                    "BAD_NAME",
                    f"invalid name {name!r}: use [a-z0-9][a-z0-9._-]{{0,63}}; nothing was spawned",
                )
        reserved = sorted(set(given) & RESERVED_NAMES)
        if reserved:
            raise OpError(
                "BAD_NAME",
                f"{', '.join(repr(n) for n in reserved)} is reserved (it already names "
                "something: `stop all`, the host's root); nothing was spawned",
            )
        dupes = sorted({n for n in given if given.count(n) > 1})
        if dupes:
            raise OpError(
                "BAD_NAME",
                f"duplicate name(s) in the batch: {', '.join(dupes)}; nothing was spawned",
            )
        clash = sorted(set(given) & taken)
        if clash:
            raise OpError(
                "NAME_CONFLICT",
                f"{caller.path} already has a child named {', '.join(clash)}; nothing was spawned",
            )
        used = taken | set(given)
        out: list[str] = []
        for req in requests:
            if req.name is not None:
                out.append(req.name)
                continue
            n = 0
            while f"{req.role}-{n}" in used:
                n += 1
            name = f"{req.role}-{n}"
            if not NAME_RE.fullmatch(name):
                raise OpError("BAD_NAME", f"role {req.role!r} cannot make a valid name")
            used.add(name)
            out.append(name)
        return out

    def _name_groups(
        self, caller: Node, requests: Sequence[ChildRequest], taken: set[str],
        groups: set[str | None],
    ) -> None:
        """Each fan-out's group name: given (valid, new under the caller) or, for
        `NEW_GROUP`, `<role>-N` with the lowest N free among names and groups. Set on the
        requests, so the nodes record it."""
        from legion_tui.wire.spawn_request import NEW_GROUP

        for req in requests:
            if req.group is None or req.group == NEW_GROUP:
                continue
            if not NAME_RE.fullmatch(req.group) or req.group in RESERVED_NAMES:
                raise OpError("BAD_NAME", f"invalid group name {req.group!r}: use "
                              "[a-z0-9][a-z0-9._-]{0,63}; nothing was spawned")  # fmt: skip
            if req.group in taken or req.group in groups:
                raise OpError("NAME_CONFLICT", f"{caller.path} already has an agent or an "
                              f"attempt group named {req.group}; nothing was spawned")  # fmt: skip
        fresh = [req for req in requests if req.group == NEW_GROUP]
        if fresh:
            used = taken | {g for g in groups if g} | {r.group for r in requests if r.group}
            n = 0
            while f"{fresh[0].role}-{n}" in used:
                n += 1
            for req in fresh:  # one batch is one fan-out: its unnamed attempts share one
                req.group = f"{fresh[0].role}-{n}"
