"""The `mail` op and the early return of a wait, on a real ledger (and a real socket)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from ledger_helpers import ledger_fixture  # noqa: F401 (a fixture)
from mail_helpers import Handle, mail_record, make_node

from legion_tui.ledger.ledger import Ledger
from legion_tui.mail.postman import MailTake
from legion_tui.mail.service import MailService, race_mail
from legion_tui.model import EventType, MailState, NodeStatus
from legion_tui.state import LegionModel
from legion_tui.supervisor.hearing.notices import Answer
from legion_tui.supervisor.socket.server import SupervisorServer
from legion_tui.wire.names import OpError

pytestmark = pytest.mark.host


@pytest.fixture
def model() -> LegionModel:
    #        root
    #       /    \
    #    lead-a  lead-b
    #    /   \      \
    #  w0    w1      w2
    m = LegionModel("run-1", "main")
    m.upsert(make_node("root", None, "root", role="root"))
    m.upsert(make_node("a", "root", "root/lead-a", role="centurion"))
    m.upsert(make_node("b", "root", "root/lead-b", role="centurion"))
    m.upsert(make_node("a0", "a", "root/lead-a/w0"))
    m.upsert(make_node("a1", "a", "root/lead-a/w1"))
    m.upsert(make_node("b0", "b", "root/lead-b/w2"))
    return m


@pytest.fixture
def handles(model: LegionModel) -> dict[str, Handle]:
    return {nid: Handle() for nid in model.nodes if nid != "root"}


@pytest.fixture
def service(ledger: Ledger, model: LegionModel, handles: dict[str, Handle]) -> MailService:
    return MailService(mail_record(ledger, model), model, handles.get, tick=0.01)


async def test_child_to_parent_is_stored_and_handed_over_at_once(
    service: MailService, ledger: Ledger, handles: dict[str, Handle], model: LegionModel
) -> None:
    reply = await service.send("a0", "parent", "status", "half done")
    assert reply["to"] == "a" and reply["to_path"] == "root/lead-a"
    assert reply["state"] == "accepted"
    (envelope,) = handles["a"].inbox
    assert envelope.startswith(f"[legion mail #{reply['message_id']}]\nFrom: root/lead-a/w0\n")
    assert model.nodes["a"].mail.accepted == 1
    sent = await ledger.get_events("a0", types=[EventType.MAIL_SENT])
    assert sent[-1].data["message_id"] == reply["message_id"]


async def test_siblings_and_parent_to_child_by_name_and_path(service: MailService) -> None:
    assert (await service.send("a0", "w1", "s", "b"))["to"] == "a1"
    assert (await service.send("a", "w0", "s", "b"))["to"] == "a0"
    assert (await service.send("root", "lead-b", "s", "b"))["to"] == "b"
    assert (await service.send("b", "lead-a", "s", "b"))["to"] == "a"
    assert (await service.send("a", "root/lead-b", "s", "b"))["to"] == "b"


async def test_a_non_edge_is_refused_with_the_route_and_nothing_is_stored(
    service: MailService, ledger: Ledger
) -> None:
    with pytest.raises(OpError) as err:
        await service.send("a0", "lead-b/w2", "s", "b")  # a cousin
    assert err.value.code == "MAIL_ROUTE"
    assert err.value.message == (
        "no mail route from root/lead-a/w0 to root/lead-b/w2: mail travels parent↔child "
        "and between siblings; write to root/lead-a and ask it to forward"
    )
    with pytest.raises(OpError) as err:
        await service.send("a0", "root", "s", "b")  # a grandparent
    assert "write to root/lead-a and ask it to forward" in err.value.message
    assert await ledger.get_messages("b0") == [] and await ledger.get_messages("root") == []
    assert await ledger.get_events("a0") == []


async def test_nul_and_unknown_recipients_are_refused_before_anything_is_stored(
    service: MailService, ledger: Ledger
) -> None:
    with pytest.raises(OpError) as err:
        await service.send("a0", "parent", "s", "x\x00y")
    assert err.value.code == "MAIL_INVALID_TEXT" and "offset 1" in err.value.message
    with pytest.raises(OpError) as err:
        await service.send("a0", "nobody", "s", "b")
    assert err.value.code == "MAIL_UNKNOWN_RECIPIENT"
    with pytest.raises(OpError) as err:
        await service.send("a0", "parent", "s", "b", kind="instruction")
    assert err.value.code == "BAD_REQUEST"
    assert await ledger.get_messages("a0") == [] and await ledger.get_events("a0") == []


async def test_mail_to_an_ended_node_bounces_in_the_reply(
    service: MailService, model: LegionModel, ledger: Ledger
) -> None:
    model.upsert(replace(model.nodes["a1"].node, status=NodeStatus.FAILED))
    reply = await service.send("a0", "w1", "s", "b")
    assert reply["state"] == "bounced"
    (letter,) = await ledger.get_messages("a1", direction="in")
    assert letter.delivered is MailState.BOUNCED


async def test_mail_to_the_host_root_is_accepted_for_the_dashboard(
    service: MailService, model: LegionModel
) -> None:
    reply = await service.send("a", "parent", "s", "b")
    assert reply["state"] == "accepted"
    assert [m.id for m in model.nodes["root"].messages] == [reply["message_id"]]


async def test_op_checks_its_fields(service: MailService) -> None:
    with pytest.raises(OpError) as err:
        await service.op("a0", {"op": "mail", "to": "parent", "subject": "s"})
    assert err.value.code == "MISSING_FIELD"
    reply = await service.op("a0", {"to": "parent", "subject": "s", "body": "b"})
    assert reply["state"] == "accepted"


# ----- wait returns early with mail ------------------------------------------------------


async def test_a_blocking_wait_returns_with_the_callers_mail_exactly_once(
    service: MailService, handles: dict[str, Handle], ledger: Ledger
) -> None:
    never = asyncio.Event()
    waiting = asyncio.ensure_future(race_mail(service.postman, "a", never.wait(), poll=0.01))
    await asyncio.sleep(0)
    reply = await service.send("a0", "parent", "question", "which schema?")
    assert reply["state"] == "pending"  # held for the wait, not handed over
    result = await asyncio.wait_for(waiting, 10)
    assert isinstance(result, MailTake)
    assert [m.id for m in result.messages] == [reply["message_id"]]
    assert result.details()["state"] == "mail"
    assert "which schema?" in result.text
    assert handles["a"].inbox == []
    (letter,) = await ledger.get_messages("a", direction="in")
    assert letter.delivered is MailState.ACCEPTED
    assert (await service.postman.tick("a")).accepted == []  # not handed over again


async def test_a_wait_that_finishes_first_leaves_the_mail_to_the_postman(
    service: MailService, handles: dict[str, Handle]
) -> None:
    async def settled() -> str:
        return "settled"

    assert await race_mail(service.postman, "a", settled(), poll=0.01) == "settled"
    reply = await service.send("a0", "parent", "s", "b")
    assert reply["state"] == "accepted" and len(handles["a"].inbox) == 1


async def test_the_loop_hands_over_mail_for_a_node_that_starts_later(
    service: MailService, ledger: Ledger, handles: dict[str, Handle], model: LegionModel
) -> None:
    late = handles.pop("a1")
    reply = await service.send("a0", "w1", "s", "b")
    assert reply["state"] == "pending"  # w1 has no handle yet
    assert await service.round() == len(model.nodes)  # the first round sweeps everyone
    assert late.inbox == []
    # the launch: a handle appears and the node's row changes (what the core does)
    handles["a1"] = late
    model.upsert(replace(model.nodes["a1"].node, status=NodeStatus.STARTING))
    service.start()
    try:
        for _ in range(500):
            if late.inbox:
                break
            await asyncio.sleep(0.01)
    finally:
        await service.close()
    assert len(late.inbox) == 1


async def test_an_idle_legion_costs_no_ticks_between_sweeps(
    service: MailService, ledger: Ledger, model: LegionModel
) -> None:
    from legion_tui.mail.service import FULL_SWEEP_ROUNDS
    from legion_tui.model import MailKind, Urgency

    assert await service.round() == len(model.nodes)  # round 1: a full sweep
    assert await service.round() == 0  # nothing open, nothing changed
    # mail written behind the service's back (another writer) is found by the next sweep…
    await ledger.send_mail("a0", "a1", MailKind.NOTICE, Urgency.NORMAL, "s", "b")
    await ledger.flush()
    idle = [await service.round() for _ in range(FULL_SWEEP_ROUNDS - 2)]
    assert idle == [0] * (FULL_SWEEP_ROUNDS - 2)
    assert await service.round() == len(model.nodes)
    # …or at once when someone says so
    await ledger.send_mail("a0", "a1", MailKind.NOTICE, Urgency.NORMAL, "s2", "b")
    service.notify("a1")
    assert await service.round() == 1


# ----- end to end: the CLI, the real socket server, the ledger --------------------------


async def test_legion_mail_through_the_real_socket_server(
    service: MailService, ledger: Ledger, handles: dict[str, Handle], tmp_path: Path
) -> None:
    # The mail op needs no core but the service; the server asks only who is calling (no
    # live agents).
    no_core = SimpleNamespace(
        ctx=SimpleNamespace(
            mail=service,
            run=SimpleNamespace(run_id="r1"),
            roster=SimpleNamespace(handles=dict),
            model=SimpleNamespace(nodes={}),
        ),
        # no wait or collect here: nothing is claimed, nothing to hand back
        notices=SimpleNamespace(answering=lambda: contextlib.nullcontext(Answer())),
    )
    server = SupervisorServer(no_core)  # type: ignore[arg-type]
    sock = tmp_path / "s.sock"
    await server.start(sock)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEGION_")}
        env.update(LEGION_SOCKET=str(sock), LEGION_NODE_ID="a0")
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "legion_tui.cli",
            "mail",
            "--to",
            "w1",
            "--subject",
            "fixture ready",
            "--body",
            "tests/data/x.json",
            cwd=tmp_path,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0, err.decode()
        (letter,) = await ledger.get_messages("a1", direction="in")
        expected = (
            f"Mail #{letter.id} to root/lead-a/w1 handed over (accepted; read at its next turn)."
        )
        assert out.decode().strip() == expected
        assert letter.subject == "fixture ready" and letter.from_node == "a0"
        assert len(handles["a1"].inbox) == 1
    finally:
        await server.close()


CLEAR_SCREEN = "\x1b[2J"


async def test_a_letter_with_control_sequences_reaches_nobody_raw(
    service: MailService, ledger: Ledger
) -> None:
    # SPEC §10: OSC 0 retitled the user's terminal, OSC 52 wrote its clipboard, and 3 000
    # of them reached the parent's next prompt raw (6 001 ESC bytes). Now made visible,
    # with the count said; the letter itself is kept.
    hostile = "\x1b]0;pwned\x07\x1b]52;c;SEVJTA==\x07" + CLEAR_SCREEN
    await service.send("a0", "parent", f"status {hostile}", "done\n\tok " + hostile * 2000)
    (letter,) = await ledger.get_messages("a", direction="in")
    for text in (letter.subject, letter.body):
        assert not any(c in text for c in "\x1b\x07\x9b"), repr(text[:80])
    assert letter.subject == "status ␛]0;pwned␇␛]52;c;SEVJTA==␇␛[2J"
    # 10 000 stand-ins of three bytes would pass the size limit: removed, and said so.
    assert letter.body.startswith("done\n\tok ]0;pwned]52;c;SEVJTA==[2J]0;pwned")
    assert letter.body.endswith("\n[legion: 10005 control character(s) in this letter were "
                                "removed]")  # fmt: skip
    await service.send("a0", "parent", "short", f"one {CLEAR_SCREEN}\nand\ttab")
    short = next(m for m in await ledger.get_messages("a", direction="in") if m.subject == "short")
    assert short.body == ("one ␛[2J\nand\ttab\n[legion: 1 control character(s) in this letter "
                          "were made visible]")  # fmt: skip
