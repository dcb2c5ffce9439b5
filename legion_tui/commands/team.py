"""`legion mail` and `legion phase`: the team verbs of the agent tool surface (SPEC §5, §6.4).

Both go through the supervisor's socket like the other verbs (`commands.agent`: the env's
`LEGION_SOCKET` inside a legion, else root on the live run of `./.legion/`). Mail text is
checked here first with the ledger's own rules and words (`MAIL_INVALID_TEXT`), so a NUL
is refused before any round trip — and the supervisor refuses it again, for callers that
do not use this CLI. Exit codes: 0 ok, 1 refused or failed, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from legion_tui.commands import Command
from legion_tui.commands.agent import add_client_options, emit, fail, run_client
from legion_tui.model import MailKind, Urgency

if TYPE_CHECKING:
    from legion_tui.wire.client import BlockingClient

__all__ = ["COMMANDS"]

USAGE = 2


# ----- mail ------------------------------------------------------------------------------
def _mail_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--to",
        required=True,
        metavar="ADDRESS",
        help="`parent`, a child's or sibling's NAME, or a PATH like lead-api/worker-0 "
        "(mail travels parent↔child and between siblings)",
    )
    p.add_argument("--subject", required=True, help="one line")
    p.add_argument("--body", required=True, help="the letter; `-` reads it from stdin")
    p.add_argument(
        "--kind",
        choices=[k.value for k in MailKind],
        default=MailKind.REPORT.value,
        help="default: report",
    )
    p.add_argument(
        "--urgency",
        choices=[u.value for u in Urgency],
        default=Urgency.NORMAL.value,
        help="default: normal",
    )
    add_client_options(p)


def _mail(args: argparse.Namespace) -> int:
    from legion_tui.ledger.errors import MailInvalidText
    from legion_tui.mail.envelope import check_mail_text

    if args.body == "-":
        args.body = sys.stdin.read()
    try:
        check_mail_text(args.subject, args.body)
    except MailInvalidText as err:
        return fail("mail", err.code, str(err), args.json)
    return run_client("mail", _send_mail)(args)


def _send_mail(args: argparse.Namespace, client: BlockingClient) -> int:
    result = client.request(
        "mail",
        to=args.to,
        subject=args.subject,
        body=args.body,
        kind=args.kind,
        urgency=args.urgency,
    )
    to = result.get("to_path") or result.get("to") or args.to
    letter = f"Mail #{result['message_id']} to {to}"
    state = result.get("state", "pending")
    if state == "bounced":
        # Stored, but it will never arrive: that is a failure for the sender.
        emit(args, result, f"{letter} bounced: {to} has ended.")
        return 1
    if state == "accepted":
        emit(args, result, f"{letter} handed over (accepted; read at its next turn).")
    else:
        emit(args, result, f"{letter} queued (pending delivery).")
    return 0


# ----- phase -----------------------------------------------------------------------------
def _phase_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--to", required=True, metavar="PHASE", help="the phase to move to")
    p.add_argument("--note", help="what was done in the phase being left")
    p.add_argument("--evidence", help="where the proof is (files, commands, links)")
    p.add_argument("--reason", help="why; required for --to failed")
    p.add_argument(
        "--supersedes",
        metavar="A,B",
        help="failed children whose work a settled sibling has taken over",
    )
    add_client_options(p)


def _split_names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [name.strip() for name in value.split(",") if name.strip()]


def _phase(args: argparse.Namespace) -> int:
    from legion_tui import receipts
    from legion_tui.phases.machine import NEEDS_REASON

    if args.to in NEEDS_REASON and not (args.reason or "").strip():
        # the machine's own rule and words, answered before any round trip
        print(f"legion phase: {receipts.PHASE_FAILED_NEEDS_REASON}", file=sys.stderr)
        return USAGE
    if args.supersedes is not None and not _split_names(args.supersedes):
        print("legion phase: --supersedes needs at least one name (a,b)", file=sys.stderr)
        return USAGE
    return run_client("phase", _move_phase)(args)


def _move_phase(args: argparse.Namespace, client: BlockingClient) -> int:
    fields: dict[str, Any] = {"to": args.to}
    for key in ("note", "evidence", "reason"):
        value = getattr(args, key)
        if value is not None:
            fields[key] = value
    supersedes = _split_names(args.supersedes)
    if supersedes:
        fields["supersedes"] = supersedes
    result = client.request("phase", **fields)
    text = result.get("receipt")
    if not text:
        before = result.get("from")
        text = f"Phase {before} → {result['phase']}." if before else f"Phase {result['phase']}."
    emit(args, result, text)
    return 0


COMMANDS: dict[str, Command] = {
    "mail": Command(
        "Send a letter to your parent, a child or a sibling (delivered at a turn boundary).",
        _mail_args,
        _mail,
    ),
    "phase": Command(
        "Move your team to its next declared phase (refusals list the legal next phases).",
        _phase_args,
        _phase,
    ),
}
