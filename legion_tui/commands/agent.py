"""The agent tool surface (SPEC §1, §5): spawn wait collect stop abort steer status tree
resume.

Identity: inside a legion the env gives `LEGION_SOCKET` + `LEGION_NODE_ID`; from a user's
own shell the verbs act as root on the newest live run of `./.legion/`. Human text by
default, `--json` for machines. Exit codes: 0 ok, 1 refused or failed, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui.commands import Command
from legion_tui.commands.arg_types import (
    add_fanout_options,
    add_kind_option,
    add_task_options,
    child_name,
    fanout_kinds,
    seconds,
    session_name,
    task_text,
)

if TYPE_CHECKING:
    from legion_tui.wire.client import BlockingClient

# A verb is one blocking request (`BlockingClient`): no event loop to start, no asyncio
# to import — the verbs' wall time is held to 2.5× a bare interpreter's (SPEC §8).
Handler = Callable[[argparse.Namespace, "BlockingClient"], int]


# add_client_options, emit, fail and run_client are the client side every socket verb
# shares (these and `commands.team`'s mail/phase).
def add_client_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--session",
        metavar="NAME",
        type=session_name,
        help="act on the live run of this session (default: $LEGION_SOCKET, else the newest)",
    )


def emit(args: argparse.Namespace, result: dict[str, Any], text: str) -> None:
    """The answer as one JSON object (`--json`), else the human text."""
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(text)


def fail(verb: str, code: str, message: str, as_json: bool) -> int:
    """A refusal: JSON on stdout or `legion VERB: message` on stderr; exit status 1."""
    if as_json:
        print(json.dumps({"ok": False, "error": {"code": code, "message": message}}))
    else:
        from legion_tui.commands.invocation import hints_as_typed

        print(f"legion {verb}: {hints_as_typed(message)}", file=sys.stderr)
    return 1


def run_client(verb: str, handler: Handler) -> Callable[[argparse.Namespace], int]:
    """Connect (env or the live run of ./.legion), run `handler`, map refusals to exit 1."""

    def run(args: argparse.Namespace) -> int:
        from legion_tui.wire.names import RequestError

        try:
            with verb_client(args.session) as client:
                return handler(args, client)
        except RequestError as err:
            return fail(verb, err.code, err.message, args.json)

    return run


def verb_client(session: str | None) -> BlockingClient:
    """The blocking client of `runs.client_for`'s choice: the env's socket inside a
    legion, else the live run of ./.legion. The env's case is decided here too, so an
    agent's verb never imports `runs` (psutil, tempfile, secrets: a third of its time)."""
    from legion_tui.wire.client import BlockingClient
    from legion_tui.wire.names import ENV_SOCKET

    if os.environ.get(ENV_SOCKET) and session is None:
        return BlockingClient.from_env()
    from legion_tui.runs.catalog import client_for

    return BlockingClient.like(client_for(session_name=session))


# ----- spawn ---------------------------------------------------------------------------
def phases_payload(path: str) -> dict[str, Any]:
    """`--phases FILE` is read here, where the file is, and sent inline: problems are
    reported with the file's own lines before the supervisor is asked anything."""
    from legion_tui.phases import MachineError, load_machine_file
    from legion_tui.wire.names import RequestError

    try:
        return load_machine_file(path).to_dict()
    except MachineError as err:
        raise RequestError("PHASES", str(err)) from err


def _spawn_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("role", help="role card name (worker, scout, centurion, …)")
    add_task_options(p, "what the agent should do")
    p.add_argument("--name", type=child_name,
                   help="the child's name (default: <role>-N); with --fanout, the group's")
    p.add_argument("--phases", metavar="FILE", help="declared phase machine (root → centurion)")
    p.add_argument("--budget-usd", type=float, metavar="USD",
                   help="stop the child and its subtree once they spend more than this")
    add_kind_option(p)
    add_fanout_options(p)
    add_client_options(p)


def _spawn(args: argparse.Namespace, client: BlockingClient) -> int:
    from legion_tui.wire.names import RequestError

    try:
        task = task_text(args)
        attempts = fanout_kinds(args)
    except ValueError as err:
        raise RequestError("BAD_REQUEST", str(err)) from err
    child: dict[str, Any] = {"role": args.role, "task": task}
    if args.phases:
        child["phases"] = phases_payload(args.phases)
    if args.budget_usd is not None:
        child["budgetUsd"] = args.budget_usd  # checked by the supervisor (> 0, finite)
    if attempts is None:
        if args.name:
            child["name"] = args.name
        if args.kind:
            child["kind"] = args.kind
        children = [child]
    else:  # the attempts of one group: the host names it unless --name did
        group = args.name or True
        children = []
        for spec in attempts:
            # `kind` or `kind:model` (as `wire.spawn_request.split_attempt` reads it; not
            # imported: a control verb does not load dataclasses for it)
            kind, _, model = (spec or "").partition(":")
            children.append({**child, "group": group} | ({"kind": kind} if kind else {})
                            | ({"model": model} if model else {}))  # fmt: skip
    result = client.request("spawn", children=children)
    # The kind each child resolved to is said when it is the simulated agent: a user who
    # spawned `worker` must not take a pretend run for a real one.
    lines = [_spawned_line(n) for n in result["nodes"]]
    lines += [f"warning: {w}" for w in result.get("warnings", [])]
    emit(args, result, "\n".join(lines))
    # A child whose agent did not start is a failed spawn, not a success to read past.
    return 1 if any(n.get("status") == "failed" for n in result["nodes"]) else 0


def _spawn_verb(args: argparse.Namespace) -> int:
    """A fan-out that cannot be is refused before anything connects."""
    try:
        fanout_kinds(args)
    except ValueError as err:
        return fail("spawn", "BAD_REQUEST", str(err), args.json)
    return run_client("spawn", _spawn)(args)


def _spawned_line(n: dict[str, Any]) -> str:
    if n.get("status") == "failed":
        return f"Failed to start {n['path']} ({n['id']}): {n.get('error') or 'no reason given'}"
    return f"Spawned {n['path']} ({n['id']})" + (" — simulated" if n.get("simulated") else "")


# ----- wait ----------------------------------------------------------------------------
def _wait_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", help="children to wait for (default: all of yours)")
    p.add_argument(
        "--timeout", type=seconds, metavar="S", help="stop WAITING after S seconds"
    )
    add_client_options(p)


def _node_line(n: dict[str, Any]) -> str:
    verdict = n.get("verdict")
    if isinstance(verdict, dict):
        mark = "✓" if verdict.get("ok") else "✗"
        tail = f" verdict {mark} {verdict.get('reason') or ''}".rstrip()
    elif n.get("error"):
        tail = f" error: {n['error']}"
    else:
        tail = ""
    return f"{n['path']}: {n['status']}{tail}"


def _wait(args: argparse.Namespace, client: BlockingClient) -> int:
    result = client.request("wait", names=args.names or None, timeout=args.timeout)
    if result["state"] == "mail":  # mail for you ended the wait early: read it first
        emit(args, result, result["text"])
        return 0
    lines = [_node_line(n) for n in result["nodes"]]
    if result["state"] == "timeout":
        lines.append(result.get("message", "timed out; nothing was stopped"))
    emit(args, result, "\n".join(lines) if lines else "No children to wait for.")
    return 0 if result["state"] != "timeout" else 1


# ----- collect -------------------------------------------------------------------------
def _name_args(help_text: str) -> Callable[[argparse.ArgumentParser], None]:
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("name", help=help_text)
        add_client_options(p)

    return add


def _resume_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", help="NAME or parent/name")
    p.add_argument("--all", action="store_true",
                   help="every interrupted node you control, leads before their members")
    p.add_argument("--parallel", type=int, metavar="N",
                   help="with --all: how many start at once (default 2)")
    p.add_argument("--with-parents", action="store_true",
                   help="with NAME: resume its ended lead(s) first, then it")
    add_client_options(p)


def _resume(args: argparse.Namespace, client: BlockingClient) -> int:
    from legion_tui.wire.names import RequestError

    if args.all == (args.name is not None):
        raise RequestError("BAD_REQUEST", "give a NAME or --all (one of them)")
    if args.parallel is not None and not args.all:
        raise RequestError("BAD_REQUEST", "--parallel goes with --all")
    if args.with_parents and args.all:
        raise RequestError("BAD_REQUEST", "--with-parents goes with a NAME (--all resumes "
                           "leads first already)")  # fmt: skip
    fields: dict[str, object] = {"name": "all" if args.all else args.name}
    if args.parallel is not None:
        fields["parallel"] = args.parallel
    if args.with_parents:
        fields["with_parents"] = True
    result = client.request("resume", **fields)
    emit(args, result, result["receipt"])
    return 0


def _collect_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="NAME or parent/name")
    p.add_argument(
        "--again",
        action="store_true",
        help="print a result that was already reported to you (a notice, a collect)",
    )
    add_client_options(p)


def _collect(args: argparse.Namespace, client: BlockingClient) -> int:
    result = client.request("collect", name=args.name, again=args.again)
    verdict = result.get("verdict")
    lines = [f"── {result['path']} ({result['status']}) ──"]
    # Reported already: the verdict and the file, not the text a second time.
    lines.append(result.get("message") or result["text"].rstrip())
    lines += [f"note: {note}" for note in result.get("notes", ())]
    if isinstance(verdict, dict):
        lines.append(f"verdict: {json.dumps(verdict, ensure_ascii=False)}")
    else:
        lines.append("verdict: none")
    delivery = result.get("delivery")
    if isinstance(delivery, dict):  # a centurion delivers a branch + HEAD sha (SPEC §6.7)
        line = f"delivery: branch {delivery['branch']} @ {delivery['head_sha'][:12]}"
        if delivery.get("link"):
            line += f" · {delivery['link']}"
        if delivery.get("dirty"):
            line += " (uncommitted changes left in the worktree)"
        lines.append(line)
    lines.append(f"written to {result['output_file']}")
    emit(args, result, "\n".join(lines))
    return 0


# ----- stop / abort / steer / resume ----------------------------------------------------
def _receipt_verb(verb: str, *fields: str) -> Callable[[argparse.Namespace], int]:
    """stop, abort, steer, resume: send the named arguments, print the receipt.

    The supervisor writes every receipt (SPEC §6.3's frozen words live in `receipts`);
    the verb only carries them to the terminal.
    """

    def handler(args: argparse.Namespace, client: BlockingClient) -> int:
        result = client.request(verb, **{f: getattr(args, f) for f in fields})
        emit(args, result, result["receipt"])
        return 0

    return run_client(verb, handler)


def _stop_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="NAME, parent/name, or `all` (your children)")
    p.add_argument("--force", action="store_true", help="skip the SIGTERM grace")
    add_client_options(p)


def _abort_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="NAME or parent/name")
    p.add_argument(
        "--keep-queue", action="store_true", help="keep queued steering (default: drop it first)"
    )
    add_client_options(p)


def _steer_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="NAME or parent/name")
    p.add_argument("text", help="the message for its next turn")
    add_client_options(p)


# ----- status / tree (also without a live supervisor) ------------------------------------
def _status_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", help="one node (default: the whole tree you can see)")
    add_client_options(p)


def _offline_doc(session: str | None) -> dict[str, Any] | None:
    """The newest run's status from its ledger + session files, read-only."""
    from legion_tui.runs.catalog import find_project_dir, newest_run
    from legion_tui.runs.socket_link import owner_alive
    from legion_tui.supervisor.hearing.status import offline_status

    project = find_project_dir(Path.cwd())
    info = newest_run(project, session)
    if info is None:
        return None
    from legion_tui.settings import load_settings

    gone = None if owner_alive(info) else info.owner_pid
    limit = load_settings(project).settings.budget_usd
    return offline_status(
        info.dir, info.run_id, info.session_name, time.time(), owner_gone_pid=gone,
        budget_usd=limit,
    )


def _status_or_tree(verb: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from legion_tui.wire.names import RequestError

        name = getattr(args, "name", None)

        def live() -> dict[str, Any]:
            with verb_client(args.session) as client:
                if verb == "tree" and not args.json:
                    return {"text": client.request("tree")["text"]}
                return client.request("status", name=name)

        try:
            doc = live()
        except RequestError as err:
            if err.code not in ("NO_SUPERVISOR", "NO_SOCKET", "DISCONNECTED"):
                return fail(verb, err.code, err.message, args.json)
            try:
                offline = _offline_doc(args.session)
            except Exception as read_err:  # LedgerError: a broken ledger is reported
                return fail(verb, "LEDGER", str(read_err), args.json)
            if offline is None:
                return fail(verb, "NO_RUN", "no legion run in ./.legion", args.json)
            doc = offline
            if name:
                doc["nodes"] = [n for n in doc["nodes"] if name in (n["name"], n["path"], n["id"])]
                if not doc["nodes"]:
                    return fail(verb, "NOT_FOUND", f"no node named {name!r}", args.json)
        if "text" in doc:
            print(doc["text"])
        elif args.json:
            print(json.dumps(doc, ensure_ascii=False))
        else:  # the model's words and glyphs: imported only to print them
            from legion_tui.supervisor.hearing.status import render_status, tree_rows_from_doc

            print(tree_rows_from_doc(doc) if verb == "tree" else render_status(doc))
        return 0

    return run


def _tree_args(p: argparse.ArgumentParser) -> None:
    add_client_options(p)


COMMANDS: dict[str, Command] = {
    "spawn": Command("Start a child agent from a role card.", _spawn_args, _spawn_verb),
    "wait": Command(
        "Wait for children to settle (a timeout never stops anything).",
        _wait_args,
        run_client("wait", _wait),
    ),
    "collect": Command(
        "Print a child's final text and verdict (outputs/<name>.output.md holds the text).",
        _collect_args,
        run_client("collect", _collect),
    ),
    "stop": Command(
        "Retire a node and its subtree (children first).",
        _stop_args,
        _receipt_verb("stop", "name", "force"),
    ),
    "abort": Command(
        "Interrupt a node's current turn; its context is kept.",
        _abort_args,
        _receipt_verb("abort", "name", "keep_queue"),
    ),
    "steer": Command(
        "Queue a message for a node's next turn boundary.",
        _steer_args,
        _receipt_verb("steer", "name", "text"),
    ),
    "resume": Command(
        "Resume an interrupted node on its old session file (--all: every one, a few at "
        "a time, leads first).",
        _resume_args,
        run_client("resume", _resume),
    ),
    "status": Command(
        "What every node is doing (works without a live supervisor, from the ledger).",
        _status_args,
        _status_or_tree("status"),
    ),
    "tree": Command("The legion as a tree.", _tree_args, _status_or_tree("tree")),
}
