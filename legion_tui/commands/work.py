"""The end of an agent's unit of work from a shell (issue 28, SPEC §6.8): `legion diff |
commit | land | discard | gc`.

The dashboard's `L` `c` `P` `D` keys and these verbs call the same `legion_tui.git`
functions, so they refuse alike. They need no live host: the run's ledger (newest run of
`./.legion/`, or `--session`) is read read-only for the agent's node and the worktree its
launch recorded, and git is asked directly. Each verb that changes anything says first
what it would do, then asks `y` on a terminal or takes `--yes` in a script; with neither
it only says what it would do (exit 0). A refusal is `legion VERB: why` and exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from legion_tui.commands import Command
from legion_tui.commands.arg_types import session_name
from legion_tui.commands.invocation import legion_command
from legion_tui.inert import inert
from legion_tui.receipts import plural

if TYPE_CHECKING:
    from legion_tui.git.cleanup import Leftover
    from legion_tui.git.land import LandPlan
    from legion_tui.git.review import FileChange, Review
    from legion_tui.git.worktree import Worktree
    from legion_tui.model_records import Node
    from legion_tui.runs.folder import RunInfo
    from legion_tui.settings import LandMode

__all__ = ["COMMANDS", "handle_of", "work_summary"]


class Refused(Exception):
    """A verb's refusal: `legion VERB: message`, exit 1 (`code` for `--json`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Target(NamedTuple):
    """The agent a verb acts on, found in its run's ledger."""

    project: Path
    run: RunInfo
    node: Node
    holder: Node  # the node whose worktree it is (the node itself, or its lead for diff)
    handle: str  # how to name the holder on a command line (its name, or its path)
    tree: Worktree


# ----- text ------------------------------------------------------------------------------
# An agent writes file names, subjects and diffs: on a terminal, a control sequence in them
# must not reach the screen as one (SPEC §10). Piped, the bytes go through as git gave them.


def _say(text: str = "", *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    if stream.isatty():
        text = inert(text)
    print(text, file=stream)


def _shown(path: Path | None) -> str:
    """A path relative to where the user is, when it is below it."""
    if path is None:
        return "(no worktree)"
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _command(verb: str, handle: str, session: str | None, *extra: str) -> str:
    """A command line the user can run as printed."""
    words = [verb, handle, *extra]
    if session:
        words += ["--session", session]
    return " ".join([legion_command(), *(shlex.quote(word) for word in words)])


def _counts(change: FileChange) -> str:
    return change.counts + ("  ⚠ ignored in your checkout" if change.ignored else "")


# ----- finding the agent -----------------------------------------------------------------
def handle_of(node: Node, nodes: Sequence[Node]) -> str:
    """The node's name on a command line: its name, or its path where the name is shared."""
    return node.name if sum(1 for n in nodes if n.name == node.name) == 1 else node.path


def _read_run(
    run: RunInfo,
) -> tuple[list[Node], dict[str, dict[str, Any]]]:
    from legion_tui.ledger.errors import LedgerError
    from legion_tui.ledger.snapshot import read_launches, read_snapshot

    try:
        nodes, _usage = read_snapshot(run.ledger_path)
        return nodes, read_launches(run.ledger_path)
    except LedgerError as err:
        raise Refused("LEDGER", str(err)) from err


def _holder(
    node: Node, by_id: dict[str, Node], launches: dict[str, dict[str, Any]]
) -> Node | None:
    """The node whose worktree `node` works in: itself or its nearest ancestor holding one."""
    at: Node | None = node
    while at is not None and not launches.get(at.id, {}).get("worktree"):
        at = by_id.get(at.parent_id or "")
    return at


def find_target(name: str, session: str | None, verb: str, *, settled: bool = True) -> Target:
    """The agent `name` (a name, a path like `root/lead/worker-1`, or an id) of the run,
    and the worktree it holds. Refused: no run, no such agent, several of that name, one
    that works in the project itself or in its lead's worktree, and — when `settled` —
    one still at work in it while its host runs."""
    from legion_tui.runs.catalog import find_project_dir, newest_run
    from legion_tui.runs.socket_link import owner_alive

    project = find_project_dir(Path.cwd())
    run = newest_run(project, session)
    if run is None:
        where = f"session {session!r} in {project / '.legion'}" if session else "./.legion"
        raise Refused("NO_RUN", f"no legion run of {where}")
    nodes, launches = _read_run(run)
    found = [n for n in nodes if name in (n.name, n.path, n.id)]
    of_run = f"run {run.run_id} (session {run.session_name})"
    if not found:
        raise Refused("NOT_FOUND", f"no agent named {name!r} in {of_run}")
    if len(found) > 1:
        paths = ", ".join(n.path for n in found)
        raise Refused(
            "AMBIGUOUS", f"{name!r} names {len(found)} agents in {of_run}: {paths} — name one "
            "by its path"
        )  # fmt: skip
    node = found[0]
    alive = owner_alive(run) if settled else False
    if alive and node.live:
        raise Refused(
            "LIVE", f"{node.name} is still {node.status.value}: {verb} it once it has settled."
        )
    by_id = {n.id: n for n in nodes}
    holder = _holder(node, by_id, launches)
    if holder is None:
        raise Refused(
            "NO_WORKTREE", f"{node.name} works in the project itself: it has no branch to {verb}."
        )
    handle = handle_of(holder, nodes)
    if holder.id != node.id and verb != "diff":
        raise Refused(
            "NOT_HOLDER", f"{node.name} works in {holder.name}'s worktree: {verb} {handle}."
        )
    # A lead's members work in its worktree: not while one of them is still at it.
    busy = [n for n in nodes if alive and n.live and _holder(n, by_id, launches) is holder]
    if busy:
        raise Refused(
            "LIVE",
            f"{busy[0].name} still works in {holder.name}'s worktree "
            f"({busy[0].status.value}): {verb} {handle} once it has settled.",
        )
    from legion_tui.git.worktree import recorded_worktree

    tree = recorded_worktree(launches[holder.id])
    assert tree is not None  # `_holder` found it holding one
    return Target(project, run, node, holder, handle, tree)


# ----- asking ----------------------------------------------------------------------------
def _confirm(args: argparse.Namespace, question: str) -> bool | None:
    """True: go on (`--yes`, or `y` on a terminal). False: the user said no. None: no
    terminal to ask on and no `--yes` — say what would be done, do nothing."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        return None
    if sys.stderr.isatty():
        question = inert(question)
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _not_asked(args: argparse.Namespace, what: str, plan: dict[str, Any]) -> int:
    if args.json:
        print(json.dumps({"ok": True, "done": False, **plan}, ensure_ascii=False))
    else:
        _say(f"nothing done: pass --yes to {what} (or run this on a terminal to be asked)")
    return 0


def _cancelled(args: argparse.Namespace, verb: str, done: str) -> int:
    return _fail(args, verb, "CANCELLED", f"cancelled — nothing {done}.")


def _fail(args: argparse.Namespace, verb: str, code: str, message: str) -> int:
    from legion_tui.commands.agent import fail

    return fail(verb, code, message, bool(getattr(args, "json", False)))


def _acting(
    verb: str, body: Callable[[argparse.Namespace], Coroutine[Any, Any, int]]
) -> Callable[[argparse.Namespace], int]:
    """Run `body` in a loop of its own; a refusal (ours or git's) is exit 1."""

    def run(args: argparse.Namespace) -> int:
        from legion_tui.git.process import GitRefused

        try:
            return asyncio.run(body(args))
        except Refused as err:
            return _fail(args, verb, err.code, err.message)
        except GitRefused as err:
            return _fail(args, verb, "GIT", err.message)

    return run


def _add_common(p: argparse.ArgumentParser, *, name: bool = True, yes: bool = True) -> None:
    if name:
        p.add_argument("name", metavar="NAME", help="the agent: its name, or its path (root/…)")
    p.add_argument(
        "--session",
        metavar="NAME",
        type=session_name,
        help="the run of this session (default: the newest run of ./.legion)",
    )
    if yes:
        p.add_argument(
            "--yes", action="store_true", help="do it without asking (a script: needed to act)"
        )
    p.add_argument("--json", action="store_true", help="print one JSON object")


# ----- diff ------------------------------------------------------------------------------
def _review_dict(review: Review) -> dict[str, Any]:
    return {
        "branch": review.branch,
        "head": review.head_sha,
        "base": review.base_sha,
        "commits": [{"sha": sha, "subject": subject} for sha, subject in review.commits],
        "files": [
            {
                "status": f.status,
                "path": f.path,
                "added": f.added,
                "removed": f.removed,
                "ignored": f.ignored,
            }
            for f in review.files
        ],
        "uncommitted": review.uncommitted,
        "truncated": review.truncated,
        "diff": review.diff,
    }


async def _diff(args: argparse.Namespace) -> int:
    from legion_tui.git.review import MAX_DIFF_BYTES, review

    target = find_target(args.name, args.session, "diff", settled=False)
    found = await review(target.tree)
    if args.json:
        doc = {"ok": True, "name": target.node.name, "path": target.node.path,
               **_review_dict(found)}  # fmt: skip
        print(json.dumps(doc, ensure_ascii=False))
        return 0
    tally = [plural(len(found.commits), "commit"), plural(len(found.files), "file")]
    if found.uncommitted:
        tally.append("uncommitted changes (shown, not landed)")
    _say(f"{found.branch} @ {found.head_sha[:7]} · cut from {found.base_sha[:7]}")
    _say(" · ".join(tally))
    if target.holder.id != target.node.id:
        _say(f"{target.node.name} works in {target.holder.name}'s worktree: land "
             f"{target.handle} to land it")  # fmt: skip
    _say("Commits")
    for sha, subject in found.commits:
        _say(f"  {sha} {subject}")
    if not found.commits:
        _say("  none yet")
    _say("Files")
    for change in found.files:
        _say(f"  {change.status} {change.path}  {_counts(change)}")
    if not found.files:
        _say("  no changes")
    if found.ignored:
        _say(f"⚠ it adds paths your checkout ignores: {', '.join(found.ignored)} — land "
             "refuses them where you have such a file")  # fmt: skip
    _say()
    sys.stdout.write(inert(found.diff) if sys.stdout.isatty() else found.diff)
    if found.truncated:
        _say(f"… the diff is cut at {MAX_DIFF_BYTES // (1024 * 1024)} MiB")
    return 0


# ----- commit ----------------------------------------------------------------------------
def _commit_args(p: argparse.ArgumentParser) -> None:
    _add_common(p)
    p.add_argument(
        "-m", "--message", metavar="MSG",
        help="the commit message (default: the task's first line, then the verdict)",
    )  # fmt: skip


async def _commit(args: argparse.Namespace) -> int:
    from legion_tui.git.share import commit_message, commit_work, uncommitted
    from legion_tui.git.worktree import is_folder

    target = find_target(args.name, args.session, "commit")
    tree = target.tree
    if not is_folder(tree.path):
        raise Refused("GONE", f"{tree.path} is gone: the worktree was discarded")
    status = await uncommitted(tree)
    if not status:
        raise Refused("NOTHING", f"{tree.branch} has no uncommitted work: nothing to commit.")
    message = (
        args.message
        if args.message is not None
        else commit_message(target.node.task, target.node.verdict_data)
    )
    subject = (message.strip().splitlines() or [""])[0]
    plan = {"branch": tree.branch, "worktree": str(tree.path), "message": message,
            "files": [entry[3:] for entry in status]}  # fmt: skip
    if not args.json:
        _say(f"Commit {plural(len(status), 'file')} in {tree.branch} ({_shown(tree.path)}) "
             f"as “{subject}”:")  # fmt: skip
        for entry in status:
            _say(f"  {entry}")
    answer = _confirm(args, f"Commit them on {tree.branch}?")
    if answer is None:
        return _not_asked(args, "commit", plan)
    if not answer:
        return _cancelled(args, "commit", "committed")
    receipt = await commit_work(tree, message)
    land = _command("land", target.handle, args.session)
    if args.json:
        print(json.dumps({"ok": True, "done": True, **plan, "receipt": receipt}))
    else:
        _say(receipt)
        _say(f"`{land}` lands it.")
    return 0


# ----- land ------------------------------------------------------------------------------
def _land_args(p: argparse.ArgumentParser) -> None:
    from legion_tui.settings import LAND_MODES

    _add_common(p)
    p.add_argument(
        "--mode",
        choices=LAND_MODES,
        help="how it lands (default: [land] mode in .legion/settings.toml, else merge)",
    )
    p.add_argument(
        "--stash-untracked",
        action="store_true",
        help="stash your untracked files too while it lands (your changes to tracked files "
        "always are), and put them back",
    )
    p.add_argument("--push", action="store_true",
                   help="then push your branch to its remote")  # fmt: skip
    p.add_argument(
        "--pr",
        action="store_true",
        help="then push the agent's branch to your remote and open a PR (gh or glab, "
        "logged in)",
    )


def _land_mode(args: argparse.Namespace, project: Path) -> LandMode:
    if args.mode:
        return cast("LandMode", args.mode)  # argparse's choices are LAND_MODES
    from legion_tui.settings import load_settings

    result = load_settings(project)
    for problem in result.problems:
        if problem.key is not None and problem.key.split(".")[0] == "land":
            _say(f"warning: {problem} (landing with {result.settings.land_mode})", err=True)
    return result.settings.land_mode


def _plan_dict(plan: LandPlan) -> dict[str, Any]:
    return {
        "checkout": str(plan.checkout),
        "branch": plan.branch,
        "head": plan.head,
        "base": plan.base,
        "base_head": plan.base_head,
        "mode": plan.mode,
        "commits": [{"sha": sha, "subject": subject} for sha, subject in plan.commits],
        "files": [
            {"status": f.status, "path": f.path, "added": f.added, "removed": f.removed}
            for f in plan.files
        ],
        "effect": plan.effect(),
        "stashed": [*plan.dirty, *plan.untracked],
        "left_behind": plan.left_behind,
        "warnings": list(plan.warnings),
    }


def _plan_lines(plan: LandPlan, target: Target, session: str | None) -> list[str]:
    said = [
        f"Land {plan.branch} @ {plan.short} → {plan.base} in {plan.checkout} ({plan.mode})",
        f"  {plural(len(plan.commits), 'commit')}:",
        *(f"    {sha} {subject}" for sha, subject in plan.commits),
        f"  {plural(len(plan.files), 'file')}:",
        *(f"    {f.status} {f.path}  {_counts(f)}" for f in plan.files),
        f"  it makes {plan.effect()}",
    ]
    said += [f"  ⚠ {warning}" for warning in plan.warnings]
    if plan.left_behind:
        commit = _command("commit", target.handle, session)
        said.append(
            f"  {target.holder.name}'s worktree holds uncommitted work: it stays behind, not "
            f"landed (`{commit}` first takes it)"
        )
    return said


async def _land(args: argparse.Namespace) -> int:
    from legion_tui.git.land import land, plan_land
    from legion_tui.git.process import GitRefused
    from legion_tui.git.share import push, remote_of

    target = find_target(args.name, args.session, "land")
    mode = _land_mode(args, target.project)
    plan = await plan_land(target.tree, mode, stash_untracked=args.stash_untracked)
    # Where the pushes would go, asked now: a push that cannot happen refuses before the
    # land, not after it.
    ours = await remote_of(plan.checkout, plan.base) if args.push or args.pr else None
    if args.push and ours is None:
        raise Refused("NO_REMOTE", f"--push: {plan.checkout} has no remote to push "
                      f"{plan.base} to; nothing was landed")  # fmt: skip
    theirs = await remote_of(plan.checkout, plan.branch) if args.pr else None
    if args.pr and theirs is None:
        raise Refused("NO_REMOTE", f"--pr: {plan.checkout} has no remote to push "
                      f"{plan.branch} to; nothing was landed")  # fmt: skip
    doc = {"plan": _plan_dict(plan)}
    if not args.json:
        for line in _plan_lines(plan, target, args.session):
            _say(line)
        if ours is not None and args.push:
            _say(f"  then pushes {plan.base} → {ours[0]}/{ours[1]}")
        if theirs is not None:
            _say(f"  then pushes {plan.branch} → {theirs[0]}/{theirs[1]} and opens a PR "
                 "(gh or glab, where logged in)")  # fmt: skip
    answer = _confirm(args, f"Land {plan.branch} @ {plan.short} → {plan.base} ({plan.mode})?")
    if answer is None:
        return _not_asked(args, f"land {plan.short}", doc)
    if not answer:
        return _cancelled(args, "land", "landed")
    landed = await land(target.tree, plan)
    result: dict[str, Any] = {"head": landed.head, "text": landed.text,
                              "stash_kept": landed.stash_kept}  # fmt: skip
    if not args.json:
        _say(landed.text)
    try:
        if args.push and ours is not None:
            pushed = await push(plan.checkout, plan.base, *ours)
            result["pushed"] = {"remote": pushed.remote, "ref": pushed.ref, "said": pushed.said}
            if not args.json:
                _say(f"Pushed {plan.base} → {pushed.remote}/{pushed.ref}.")
                if pushed.said:
                    _say(pushed.said)
        if args.pr and theirs is not None:
            result["pr"] = await _open_pr(args, target, plan, theirs, ours)
    except GitRefused as err:  # the land stands: say so with why the rest did not happen
        raise Refused("GIT", f"landed, but {err.message}") from err
    if args.json:
        print(json.dumps({"ok": True, "done": True, **doc, "landed": result}, ensure_ascii=False))
    else:
        discard = _command("discard", target.handle, args.session)
        _say(f"`{discard}` removes its worktree and branch.")
    return 0


async def _open_pr(
    args: argparse.Namespace,
    target: Target,
    plan: LandPlan,
    theirs: tuple[str, str],
    ours: tuple[str, str] | None,
) -> dict[str, Any]:
    """Push the agent's branch, open a PR of it into the user's branch; what was said."""
    from legion_tui.git.share import push_for_review

    node = target.holder
    base = ours[1] if ours is not None and ours[0] == theirs[0] else plan.base
    pushed, url = await push_for_review(
        plan.checkout, plan.branch, theirs, base, node.task, node.verdict_data
    )
    if not args.json:
        _say(f"Pushed {plan.branch} → {pushed.remote}/{pushed.ref}.")
        if url is not None:
            _say(f"PR: {url}")
        elif pushed.said:
            _say(pushed.said)
        else:
            _say("No PR opened: no gh or glab logged in here, and the remote said nothing.")
    return {"remote": pushed.remote, "ref": pushed.ref, "said": pushed.said, "url": url}


# ----- discard ---------------------------------------------------------------------------
def _discard_args(p: argparse.ArgumentParser) -> None:
    _add_common(p)
    p.add_argument(
        "--force",
        action="store_true",
        help="with --yes: discard it even when that loses work that exists nowhere else",
    )


async def _discard(args: argparse.Namespace) -> int:
    from legion_tui.git.cleanup import discard, human_size, loss_of, size_on_disk
    from legion_tui.git.land import checkout_of
    from legion_tui.git.worktree import on_disk

    target = find_target(args.name, args.session, "discard")
    tree = target.tree
    path = on_disk(tree)
    checkout = await checkout_of(tree)
    loss = await loss_of(checkout, tree.branch, path)
    size = human_size(size_on_disk(path))
    doc = {"branch": tree.branch, "worktree": str(path) if path else None, "size": size,
           "loses": loss.says() if loss else None}  # fmt: skip
    if not args.json:
        where = f"its worktree {_shown(path)} ({size})" if path else "no worktree left"
        _say(f"Discard {tree.branch}: {where} and its branch.")
        if loss:
            _say(f"It LOSES {loss.says()}:")
            for commit in loss.commits:
                _say(f"  commit {commit}")
            for entry in loss.files:
                _say(f"  {entry}")
        else:
            _say("Nothing in it exists only there.")
    if args.yes and loss and not args.force:
        raise Refused(
            "UNIQUE_WORK",
            f"{tree.branch} holds work that exists nowhere else: {loss.says()}; nothing was "
            f"discarded — land it first (`{_command('land', target.handle, args.session)}`),"
            " or pass --force with --yes to lose it",
        )
    question = (
        f"Discard {tree.branch} and LOSE {loss.says()}?" if loss else f"Discard {tree.branch}?"
    )
    answer = _confirm(args, question)
    if answer is None:
        return _not_asked(args, "discard it" + (" (and --force: it loses work)" if loss else ""),
                          doc)  # fmt: skip
    if not answer:
        return _cancelled(args, "discard", "discarded")
    receipt = await discard(checkout, tree.branch, path, accept=loss if loss else None)
    if args.json:
        print(json.dumps({"ok": True, "done": True, **doc, "receipt": receipt}))
    else:
        _say(receipt)
    return 0


# ----- gc --------------------------------------------------------------------------------
def _gc_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--yes", action="store_true", help="remove the landed ones without asking (a script)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _busy_branches(project: Path) -> frozenset[str]:
    """The branches live agents hold (or work in) in every run whose host is alive."""
    from legion_tui.runs.catalog import list_runs
    from legion_tui.runs.socket_link import owner_alive

    busy: set[str] = set()
    for run in list_runs(project):
        if not owner_alive(run):
            continue
        nodes, launches = _read_run(run)
        by_id = {n.id: n for n in nodes}
        for node in nodes:
            holder = _holder(node, by_id, launches) if node.live else None
            if holder is not None:
                busy.add(str(launches[holder.id].get("branch", "")))
    return frozenset(busy)


def _leftover_dict(item: Leftover) -> dict[str, Any]:
    return {"branch": item.branch, "worktree": str(item.path) if item.path else None,
            "head": item.head, "size": item.size, "state": item.state,
            "loses": item.loss.says() if item.loss else None}  # fmt: skip


async def _gc(args: argparse.Namespace) -> int:
    from legion_tui.git.cleanup import discard, human_size, inventory
    from legion_tui.git.process import GitRefused, git
    from legion_tui.runs.catalog import find_project_dir

    project = find_project_dir(Path.cwd())
    busy = _busy_branches(project)
    found = await inventory(project, busy=busy)
    safe = [item for item in found if item.state == "landed" and not item.loss]
    doc: dict[str, Any] = {"leftovers": [_leftover_dict(item) for item in found],
                           "busy": sorted(busy)}  # fmt: skip
    if not args.json:
        if not found:
            _say("No agent worktrees or branches left" + (" (but those live agents hold)."
                 if busy else "."))  # fmt: skip
        else:
            _say(f"{plural(len(found), 'agent branch')} (worktrees under "
                 f"{_shown(project / '.legion' / 'worktrees')}):")  # fmt: skip
        width = max((len(item.branch) for item in found), default=0)
        for item in found:
            loses = f"  — would lose {item.loss.says()}" if item.loss else ""
            _say(f"  {item.branch:<{width}}  {item.state:<8}  {human_size(item.size):>9}  "
                 f"{_shown(item.path)}{loses}")  # fmt: skip
        if busy:
            held = ", ".join(sorted(busy))
            _say(f"({plural(len(busy), 'branch')} held by live agents not listed: {held})")
        kept = len(found) - len(safe)
        if kept:
            _say(f"gc keeps the {kept} that hold work existing nowhere else (`legion land NAME`"
                 " or `legion discard NAME` each)")  # fmt: skip
    if not safe:
        if args.json:
            print(json.dumps({"ok": True, "done": False, **doc, "removed": []}))
        elif found:
            _say("Nothing to remove: none of them is landed.")
        return 0
    them = "the landed one" if len(safe) == 1 else f"the {len(safe)} landed ones"
    answer = _confirm(args, f"Remove {them} (worktree and branch)?")
    if answer is None:
        return _not_asked(args, f"remove {them}", doc)
    if not answer:
        return _cancelled(args, "gc", "removed")
    checkout = Path((await git(project, "rev-parse", "--show-toplevel")).strip())
    removed: list[str] = []
    failed: list[str] = []
    for item in safe:
        try:
            receipt = await discard(checkout, item.branch, item.path, accept=None)
        except GitRefused as err:
            failed.append(err.message)
            if not args.json:
                _say(f"legion gc: {err.message}", err=True)
            continue
        removed.append(item.branch)
        if not args.json:
            _say(receipt)
    if args.json:
        print(json.dumps({"ok": not failed, "done": True, **doc, "removed": removed,
                          "failed": failed}, ensure_ascii=False))  # fmt: skip
    return 1 if failed else 0


# ----- `legion run`'s last words -----------------------------------------------------------
async def work_summary(
    tree: Worktree, handle: str, session: str | None
) -> tuple[list[str], dict[str, Any]]:
    """Where an agent's work is once `legion run` ends: its worktree, branch, commits and
    uncommitted files, and the commands (runnable as printed) that review, commit and
    land it. ([], {}) when the worktree is gone."""
    from legion_tui.git.process import GitRefused, git, lines
    from legion_tui.git.share import uncommitted
    from legion_tui.git.worktree import is_folder

    if not is_folder(tree.path):
        return [], {}
    try:
        head = (await git(tree.path, "rev-parse", "HEAD")).strip()
        count = len(lines(await git(tree.path, "rev-list", f"{tree.base_sha}..HEAD")))
        status = await uncommitted(tree)
    except GitRefused as err:
        return [f"its worktree {_shown(tree.path)} could not be read: {err.message}"], {}
    files = [entry[3:] for entry in status]
    diff = _command("diff", handle, session)
    commit = _command("commit", handle, session)
    land = _command("land", handle, session)
    discard = _command("discard", handle, session)
    tally = [plural(count, "commit")]
    if files:
        named = ", ".join(files[:3]) + (" …" if len(files) > 3 else "")
        tally.append(f"{plural(len(files), 'uncommitted file')} ({named})")
    said = [
        f"The work of {handle} is in {_shown(tree.path)}, not in your checkout:",
        f"  branch {tree.branch} @ {head[:7]} · {' · '.join(tally)}",
    ]
    if count or files:
        said.append(f"  review it:  {diff}")
    if files:
        said.append(f"  commit it:  {commit}")
    if count or files:
        said.append(f"  land it:    {land}")
    else:
        said.append(f"  it changed nothing; remove it:  {discard}")
    data = {"worktree": str(tree.path), "branch": tree.branch, "head": head, "commits": count,
            "uncommitted": files, "land": land}  # fmt: skip
    return said, data


COMMANDS: dict[str, Command] = {
    "diff": Command(
        "What an agent's worktree changed: its branch, commits, files (+/-, ⚠ ignored "
        "paths) and the diff.",
        lambda p: _add_common(p, yes=False),
        _acting("diff", _diff),
    ),
    "commit": Command(
        "Commit what an agent left uncommitted in its worktree (asks y; --yes in a script).",
        _commit_args,
        _acting("commit", _commit),
    ),
    "land": Command(
        "Land an agent's branch in your checkout: the sha shown, in the mode shown (asks y; "
        "--yes in a script).",
        _land_args,
        _acting("land", _land),
    ),
    "discard": Command(
        "Remove an agent's worktree and branch; refused when it loses work unless named "
        "(asks y; --yes --force in a script).",
        _discard_args,
        _acting("discard", _discard),
    ),
    "gc": Command(
        "List agents' worktrees and branches (size, landed/unlanded/dirty); remove the "
        "landed ones (asks y; --yes in a script).",
        _gc_args,
        _acting("gc", _gc),
    ),
}
