"""The mail envelope, the mail routes and address resolution (SPEC §5, §6.5).

Everything here is pure: no ledger, no sockets. The envelope text is frozen because it
is the delivery *evidence* — the postman marks a letter DELIVERED only when this exact
string shows up as a user message in the recipient's session (mailbox-delivery-v1 D3),
so any drift between what is injected and what is compared would silently stop every
confirmation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from legion_tui.ledger.errors import MailInvalidText
from legion_tui.ledger.mailtext import check_mail_text as ledger_check

if TYPE_CHECKING:  # annotations only: `legion mail` checks its text without the records
    from legion_tui.model_records import Message, Node

__all__ = [
    "AddressError",
    "check_mail_text",
    "envelope_header",
    "format_envelope",
    "next_hop",
    "resolve_address",
    "route_allowed",
]


def envelope_header(message_id: int) -> str:
    return f"[legion mail #{message_id}]"


def format_envelope(message: Message, sender: str | None = None) -> str:
    """The exact text handed to the recipient (and later searched for as evidence).

    `sender` is how the From line names the sender — the supervisor passes the node's
    path (stable for the life of the run); without it the node id is used. Layout::

        [legion mail #12]
        From: root/lead-api
        Subject: contract frozen
        Urgency: action-needed

        <body>
    """
    return (
        f"{envelope_header(message.id)}\n"
        f"From: {sender if sender is not None else message.from_node}\n"
        f"Subject: {message.subject}\n"
        f"Urgency: {message.urgency.value}\n"
        f"\n"
        f"{message.body}"
    )


def check_mail_text(subject: str, body: str) -> None:
    """The ledger's checks (NUL, unpaired surrogates, length — one wording, one place)
    plus two of the envelope's own: a subject is one header line, so a line break in it
    would forge a header (`Urgency: ...`), and an empty subject says nothing. Raises the
    ledger's MailInvalidText (code MAIL_INVALID_TEXT) naming the field and offset.

    Checking before any socket round trip lets the CLI refuse client-side with the exact
    words the supervisor would use.
    """
    from legion_tui import receipts

    ledger_check(subject, body)
    for ch in ("\n", "\r"):
        offset = subject.find(ch)
        if offset >= 0:
            raise MailInvalidText("subject", offset, receipts.mail_subject_multiline(offset))
    if not subject.strip():
        raise MailInvalidText("subject", 0, receipts.mail_empty_subject())


# ----- routes -------------------------------------------------------------------------

ParentOf = Callable[[str], str | None] | Mapping[str, str | None]


def _parent_fn(parent_of: ParentOf) -> Callable[[str], str | None]:
    if isinstance(parent_of, Mapping):
        return parent_of.get
    return parent_of


def _ancestors(node: str, parent: Callable[[str], str | None]) -> list[str]:
    """`node`'s ancestors, nearest first (bounded: a cycle in bad data cannot hang us)."""
    chain: list[str] = []
    current = parent(node)
    while current is not None and current not in chain and len(chain) < 1024:
        chain.append(current)
        current = parent(current)
    return chain


def next_hop(sender: str, recipient: str, parent_of: ParentOf) -> str | None:
    """Who `sender` should write to instead: its child on the way down to a descendant,
    else its own parent. None when the sender is the top of the tree and the recipient is
    not below it (nothing to forward through)."""
    parent = _parent_fn(parent_of)
    up = _ancestors(recipient, parent)
    if sender in up:
        # the recipient is below the sender: forward through the child on the path
        index = up.index(sender)
        return up[index - 1] if index > 0 else recipient
    return parent(sender)


def route_allowed(
    sender: str,
    recipient: str,
    parent_of: ParentOf,
    name_of: Callable[[str], str] | None = None,
) -> str | None:
    """None when `sender` may write to `recipient`, else a hint naming the route.

    Mail travels parent↔child and sibling↔sibling only (SPEC §5): a team talks through
    its lead, so a letter to a grandparent or a cousin has to be forwarded by someone who
    can see both sides.
    """
    label = name_of or (lambda node_id: node_id)
    parent = _parent_fn(parent_of)
    if sender == recipient:
        from legion_tui import receipts

        return receipts.mail_to_self()
    sender_parent = parent(sender)
    recipient_parent = parent(recipient)
    if recipient_parent == sender or sender_parent == recipient:
        return None
    if sender_parent is not None and sender_parent == recipient_parent:
        return None
    from legion_tui import receipts

    hop = next_hop(sender, recipient, parent)
    return receipts.mail_route_refused(
        label(sender), label(recipient), label(hop) if hop is not None else None
    )


# ----- addresses ----------------------------------------------------------------------


class AddressError(LookupError):
    """An address that names no node, or more than one (code MAIL_UNKNOWN_RECIPIENT)."""

    code = "MAIL_UNKNOWN_RECIPIENT"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _ambiguous(address: str, what: str, nodes: Iterable[Node]) -> AddressError:
    """The one refusal for an address that fits several nodes: it lists their paths."""
    paths = ", ".join(sorted(node.path for node in nodes))
    return AddressError(f"'{address}' {what}: {paths}; write the full path")


def resolve_address(sender: Node, address: str, nodes: Mapping[str, Node]) -> Node:
    """Resolve `parent`, a `NAME` (a child or sibling of the sender) or a `PATH`.

    A PATH contains `/`: the full path (`root/lead-api/worker-0`), a path below the root
    (`lead-api/worker-0`, SPEC §5 "nested agents are addressed as parent/name") or a path
    below the sender. A NAME that is no neighbour still resolves when it is unique in the
    tree (or is a one-segment path such as `root`). Whether the route is allowed is a
    separate question (`route_allowed`); this only says which node the address means.
    """
    address = address.strip()
    if not address:
        raise AddressError("mail needs a recipient: parent, a NAME or a PATH")
    if address == "parent":
        if sender.parent_id is None or sender.parent_id not in nodes:
            raise AddressError(f"{sender.name} has no parent to write to")
        return nodes[sender.parent_id]
    if "/" in address:
        wanted = address.strip("/")
        root_prefix = sender.path.split("/", 1)[0]
        forms = {wanted, f"{root_prefix}/{wanted}", f"{sender.path}/{wanted}"}
        hits = [node for node in nodes.values() if node.path in forms]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            # the full form wins over the relative readings
            full = [node for node in hits if node.path == wanted]
            if len(full) == 1:
                return full[0]
            raise _ambiguous(address, "is ambiguous", hits)
        raise AddressError(f"no node at path '{address}'")
    near = [
        node
        for node in nodes.values()
        if node.name == address
        and node.id != sender.id
        and (
            node.parent_id == sender.id
            or (sender.parent_id is not None and node.parent_id == sender.parent_id)
        )
    ]
    if len(near) == 1:
        return near[0]
    if len(near) > 1:
        raise _ambiguous(address, f"is both a child and a sibling of {sender.name}", near)
    # Not a neighbour: still say which node it means (a path of one segment like `root`,
    # or a name that is unique in the tree), so the route check can answer with the way
    # to reach it instead of "no such node".
    far = [node for node in nodes.values() if node.path == address] or [
        node for node in nodes.values() if node.name == address and node.id != sender.id
    ]
    if len(far) == 1:
        return far[0]
    if len(far) > 1:
        raise _ambiguous(address, "names several nodes", far)
    raise AddressError(
        f"no child or sibling of {sender.name} is named '{address}' "
        "(write parent, a child's or sibling's NAME, or a PATH like lead-api/worker-0)"
    )
