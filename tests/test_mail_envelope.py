"""The envelope text (frozen: it is the delivery evidence), routes and addresses."""

from __future__ import annotations

import pytest
from mail_helpers import make_node

from legion_tui.ledger.errors import MailInvalidText
from legion_tui.ledger.mailtext import BODY_MAX_BYTES
from legion_tui.mail.envelope import (
    AddressError,
    check_mail_text,
    format_envelope,
    resolve_address,
    route_allowed,
)
from legion_tui.model import MailKind, MailState, Urgency
from legion_tui.model_records import Message

pytestmark = pytest.mark.unit


def _message(**overrides: object) -> Message:
    fields: dict[str, object] = {
        "id": 12,
        "from_node": "n-lead",
        "to_node": "root",
        "kind": MailKind.REPORT,
        "urgency": Urgency.ACTION_NEEDED,
        "subject": "contract frozen",
        "body": "Line one.\nLine two.",
        "delivered": MailState.PENDING,
        "delivered_at": None,
        "created_at": 0.0,
    }
    fields.update(overrides)
    return Message(**fields)  # type: ignore[arg-type]


def test_envelope_layout_is_pinned() -> None:
    assert format_envelope(_message(), sender="root/lead-api") == (
        "[legion mail #12]\n"
        "From: root/lead-api\n"
        "Subject: contract frozen\n"
        "Urgency: action-needed\n"
        "\n"
        "Line one.\nLine two."
    )


def test_envelope_without_sender_label_uses_the_node_id() -> None:
    text = format_envelope(_message(urgency=Urgency.NORMAL, body=""))
    assert text == "[legion mail #12]\nFrom: n-lead\nSubject: contract frozen\nUrgency: normal\n\n"


def test_two_letters_with_the_same_body_have_different_envelopes() -> None:
    assert format_envelope(_message(id=1)) != format_envelope(_message(id=2))


# ----- routes --------------------------------------------------------------------------
#            root
#         /        \
#      lead-a      lead-b
#      /    \         |
#    w0      w1       w2
PARENT = {
    "root": None,
    "lead-a": "root",
    "lead-b": "root",
    "w0": "lead-a",
    "w1": "lead-a",
    "w2": "lead-b",
}


@pytest.mark.parametrize(
    ("sender", "recipient"),
    [
        ("root", "lead-a"),  # parent → child
        ("lead-a", "root"),  # child → parent
        ("w0", "lead-a"),
        ("lead-a", "w1"),
        ("w0", "w1"),  # siblings
        ("lead-a", "lead-b"),  # siblings under root
    ],
)
def test_parent_child_and_sibling_routes_are_open(sender: str, recipient: str) -> None:
    assert route_allowed(sender, recipient, PARENT) is None


def test_grandparent_is_refused_with_a_hint_through_the_parent() -> None:
    hint = route_allowed("w0", "root", PARENT)
    assert hint == (
        "no mail route from w0 to root: mail travels parent↔child and between siblings; "
        "write to lead-a and ask it to forward"
    )


def test_cousin_is_refused_with_a_hint() -> None:
    hint = route_allowed("w0", "w2", PARENT)
    assert hint is not None
    assert "parent↔child and between siblings" in hint
    assert "write to lead-a and ask it to forward" in hint


def test_grandchild_is_refused_and_the_hint_names_the_child_on_the_way_down() -> None:
    hint = route_allowed("root", "w2", PARENT, name_of=lambda n: f"<{n}>")
    assert hint is not None
    assert "write to <lead-b> and ask it to forward" in hint


def test_mail_to_oneself_is_refused() -> None:
    hint = route_allowed("w0", "w0", PARENT)
    assert hint is not None and "yourself" in hint


def test_routes_accept_a_callable_parent_lookup() -> None:
    assert route_allowed("w0", "w1", PARENT.get) is None
    assert route_allowed("w0", "root", PARENT.get) is not None


# ----- text ---------------------------------------------------------------------------


def test_nul_in_body_is_refused_with_field_and_offset() -> None:
    with pytest.raises(MailInvalidText) as err:
        check_mail_text("hello", "abc\x00def")
    assert err.value.code == "MAIL_INVALID_TEXT"
    assert (err.value.field, err.value.offset) == ("body", 3)
    assert str(err.value) == (
        "MAIL_INVALID_TEXT: body contains U+0000 at offset 3 (NUL is not supported)"
    )


def test_nul_in_subject_is_refused() -> None:
    with pytest.raises(MailInvalidText) as err:
        check_mail_text("\x00x", "body")
    assert (err.value.field, err.value.offset) == ("subject", 0)


def test_over_long_body_and_multiline_subject_are_refused() -> None:
    with pytest.raises(MailInvalidText) as err:
        check_mail_text("s", "x" * (BODY_MAX_BYTES + 1))
    assert err.value.field == "body"
    with pytest.raises(MailInvalidText) as err:
        check_mail_text("a\nUrgency: normal", "b")
    assert err.value.field == "subject"
    check_mail_text("fine", "x" * BODY_MAX_BYTES)  # the limit itself is allowed
    with pytest.raises(MailInvalidText) as err:
        check_mail_text("  ", "b")
    assert err.value.field == "subject"


# ----- addresses ----------------------------------------------------------------------


NODES = {
    n.id: n
    for n in [
        make_node("root", None, "root"),
        make_node("a", "root", "root/lead-a"),
        make_node("b", "root", "root/lead-b"),
        make_node("a0", "a", "root/lead-a/worker-0"),
        make_node("a1", "a", "root/lead-a/worker-1"),
        make_node("b0", "b", "root/lead-b/worker-0"),
    ]
}


def test_parent_resolves_to_the_parent() -> None:
    assert resolve_address(NODES["a0"], "parent", NODES).id == "a"


def test_root_has_no_parent() -> None:
    with pytest.raises(AddressError):
        resolve_address(NODES["root"], "parent", NODES)


def test_name_resolves_among_siblings_and_children_only() -> None:
    assert resolve_address(NODES["a0"], "worker-1", NODES).id == "a1"
    assert resolve_address(NODES["a"], "worker-0", NODES).id == "a0"  # a child, not b's
    assert resolve_address(NODES["a"], "lead-b", NODES).id == "b"
    with pytest.raises(AddressError, match="several nodes"):
        resolve_address(NODES["root"], "worker-0", NODES)  # two grandchildren: ambiguous
    assert resolve_address(NODES["a0"], "root", NODES).id == "root"  # far, for the route
    assert resolve_address(NODES["a0"], "lead-b", NODES).id == "b"  # unique in the tree
    with pytest.raises(AddressError, match="no child or sibling"):
        resolve_address(NODES["a0"], "nobody", NODES)


def test_an_address_that_fits_several_nodes_lists_their_paths() -> None:
    # lead-a has a child named like its sibling lead-b, with a worker-0 of its own.
    nodes = {
        **NODES,
        "ax": make_node("ax", "a", "root/lead-a/lead-b"),
        "axw": make_node("axw", "ax", "root/lead-a/lead-b/worker-0"),
    }
    with pytest.raises(AddressError) as err:
        resolve_address(nodes["a"], "lead-b", nodes)
    assert err.value.message == (
        "'lead-b' is both a child and a sibling of lead-a: "
        "root/lead-a/lead-b, root/lead-b; write the full path"
    )
    with pytest.raises(AddressError) as err:
        resolve_address(nodes["a"], "lead-b/worker-0", nodes)  # below root, or below me
    assert err.value.message == (
        "'lead-b/worker-0' is ambiguous: "
        "root/lead-a/lead-b/worker-0, root/lead-b/worker-0; write the full path"
    )
    assert resolve_address(nodes["a"], "root/lead-b/worker-0", nodes).id == "b0"


def test_paths_full_and_relative_to_root() -> None:
    assert resolve_address(NODES["a0"], "root/lead-b/worker-0", NODES).id == "b0"
    assert resolve_address(NODES["a0"], "lead-b/worker-0", NODES).id == "b0"
    with pytest.raises(AddressError):
        resolve_address(NODES["a0"], "lead-c/worker-0", NODES)
