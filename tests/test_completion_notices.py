"""How results reach the parent (issue 11), end to end: a real pi lead that dispatches two
members and ends its turn is woken once, by one notice, when both finish; a lead whose
in-turn `legion wait` took the results gets no notice; `collect` after a notice says it
was reported (`--again` prints it); a member stopped by root is told to its lead, one the
lead stopped itself is not; the root (the user) gets a toast; a lost `wait` reply hands
its claim back; an empty generation is retried once; a partly failed team settles not ok
and `legion run` exits 1 with who failed. The claim logic's duplicate windows, one by
one, are in test_notices_claims.py.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from model_server import Text, ToolCall
from real_pi_helpers import PiWorld, agent_host, settle, spawn_pi, until, verdict_line, write_card
from supervisor_helpers import LEGION, STUCK, hosted, read_text, settled, spawn_one
from test_real_pi_legion import legion

from legion_tui.agents.cards import load_cards
from legion_tui.model import MailKind, MailState, NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.real

NOTICE_MARK = "Subject: Finished: "


def spawn_command(*names: str) -> str:
    """One bash call that spawns simulated members (`--kind sim`: asked for, labelled)."""
    return " && ".join(
        f"{LEGION} spawn worker --kind sim --name {n} --task 'part {n} of the job'"
        for n in names
    )


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user messages of one chat-completions request, as text."""
    out = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.append(str(content))
    return out


async def notices_to(sup: Supervisor, node_id: str) -> list[Any]:
    letters = await sup.ledger.get_pending_mail(node_id, tuple(MailState))
    return [m for m in letters if m.kind is MailKind.NOTICE]


async def test_a_real_pi_lead_is_woken_once_when_both_members_finish(world: PiWorld) -> None:
    write_card(world.project, "lead", depth=1)
    world.server.script(
        ToolCall("bash", {"command": spawn_command("a", "b")}),
        Text("Dispatched a and b; I will read their results when they finish.", tokens=8),
        Text(f"Both members finished.\n{verdict_line('a and b done')}", tokens=8),
    )
    async with agent_host(world.project) as sup:
        sup.notices.join_seconds = 120.0  # the two must be told together, never apart
        lead = await spawn_pi(sup, "lead", "Split the job between two members.", role="lead")
        node = await settle(sup, lead.id, limit=120.0)
        assert node.status is NodeStatus.SETTLED, node.error
        assert node.verdict_data == {"ok": True, "reason": "a and b done"}
        members = [sup.names.node(c) for c in sup.model.children(lead.id)]
        assert sorted(m.name for m in members) == ["a", "b"]
        assert all(m.status is NodeStatus.SETTLED and m.simulated for m in members)
        requests = world.server.requests()
        assert [r.state for r in requests] == ["completed"] * 3, requests
        assert world.server.unscripted() == []
        # The third request is the turn the notice started: one letter, both results.
        told = [t for t in user_texts(requests[2].body) if NOTICE_MARK in t]
        assert len(told) == 1, told
        assert "a ✓ ok" in told[0] and "b ✓ ok" in told[0] and "2 of 2 members" in told[0]
        assert "output file:" in told[0]
        letters = await notices_to(sup, lead.id)
        assert len(letters) == 1 and letters[0].from_node in {m.id for m in members}


async def test_an_in_turn_wait_takes_the_results_and_no_notice_follows(
    server: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    from real_pi_helpers import make_world

    world = make_world("1.6", server, tmp_path, monkeypatch)
    write_card(world.project, "lead", depth=1)
    world.server.script(
        ToolCall("bash", {"command": spawn_command("a", "b")}),
        ToolCall("bash", {"command": f"{LEGION} wait && {LEGION} collect a && {LEGION} collect b"}),
        Text(f"Collected both.\n{verdict_line('collected a and b')}", tokens=6),
    )
    async with agent_host(world.project) as sup:
        lead = await spawn_pi(sup, "lead", "Split the job, wait for it, collect it.", role="lead")
        node = await settle(sup, lead.id, limit=120.0)
        assert node.status is NodeStatus.SETTLED, node.error
        assert [r.state for r in world.server.requests()] == ["completed"] * 3
        # The wait claimed both endings inside the turn: the outbox dropped them at the
        # turn's end, so no fourth (unscripted) request was ever made.
        assert world.server.unscripted() == []
        assert await notices_to(sup, lead.id) == []
        for name in ("a", "b"):
            member = sup.names.resolve(lead.id, name)
            claim = sup.notices.claimed(member.id)
            assert claim is not None and claim.via == "collect"


async def test_a_lead_waits_live_for_its_member_and_hears_roots_stop(
    server: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """A real pi lead whose turn ends while its member works stays live, says it waits,
    and is woken by the notice when root (the user) stops that member."""
    from real_pi_helpers import make_world

    world = make_world("1.6", server, tmp_path, monkeypatch)
    write_card(world.project, "lead", depth=1)
    write_card(world.project, "sleeper", kind="exec", command=["sleep", "infinity"], tools=())
    world.server.script(
        ToolCall("bash", {"command": f"{LEGION} spawn sleeper --name s --task 'sleep'"}),
        Text("Dispatched s; waiting for it.", tokens=5),
        Text(f"s was stopped.\n{verdict_line('s was stopped by the user', ok=False)}", tokens=6),
    )
    async with agent_host(world.project) as sup:
        lead = await spawn_pi(sup, "lead", "Start a sleeper.", role="lead")
        view = sup.model.nodes[lead.id]
        await until(
            lambda: (view.note or "").startswith("waiting for 1 member"),
            60.0,
            "the lead to wait for its member",
        )
        assert sup.names.node(lead.id).status is NodeStatus.RUNNING  # not settled under its team
        assert len(world.server.requests()) == 2
        await sup.stops.stop(ROOT_ID, "lead/s")
        node = await settle(sup, lead.id, limit=120.0)
        assert node.verdict_data == {"ok": False, "reason": "s was stopped by the user"}
        assert view.note is None
        told = [t for t in user_texts(world.server.requests()[2].body) if NOTICE_MARK in t]
        assert len(told) == 1 and "Finished: s ◌ retired" in told[0], told
        assert world.server.unscripted() == []


async def busy_lead(sup: Supervisor) -> Any:
    """A simulated lead (a project card with no depth cap) inside one endless tool call:
    its turn is running, so notices to it wait for the turn's end (its outbox)."""
    write_card(sup.project_dir, "lead", kind="sim", command=None, tools=("bash",), depth=1)
    sup.ctx.cards.cards = load_cards(sup.project_dir)
    return await spawn_one(sup, "lead", name="lead", sim=dict(STUCK))


async def told_after_abort(sup: Supervisor, lead_id: str) -> list[Any]:
    """End the busy lead's turn (abort): the notices it held go out; its letters."""
    await until(lambda: sup.notices.owed(lead_id), what="a notice held for the turn")
    await sup.control.abort(ROOT_ID, sup.names.node(lead_id).name)
    await until(lambda: not sup.notices.owed(lead_id), what="the notice to leave")
    return await notices_to(sup, lead_id)


async def test_collect_after_a_notice_says_it_was_reported_and_again_prints_it(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        lead = await busy_lead(sup)  # busy in one long call
        member = await spawn_one(sup, name="m", caller=lead.id)
        await settled(sup, member.id)
        letters = await told_after_abort(sup, lead.id)
        assert len(letters) == 1 and "m ✓ ok" in letters[0].subject
        reply = await sup.queries.collect(lead.id, "m")
        assert reply["text"] == "" and reply["reported"]["via"] == "notice"
        assert f"notice #{letters[0].id}" in reply["message"] and "--again" in reply["message"]
        assert read_text(Path(reply["output_file"])).strip()  # the file has it all
        again = await sup.queries.collect(lead.id, "m", again=True)
        assert again["text"].strip() and again["text"].strip() in letters[0].body
        # The user (root) asking about the member claims nothing and is answered in full.
        assert (await sup.queries.collect(ROOT_ID, "lead/m"))["text"].strip()


async def test_a_member_stopped_by_root_is_told_to_its_lead_not_one_it_stopped(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        lead = await busy_lead(sup)
        x = await spawn_one(sup, name="x", caller=lead.id, sim=dict(STUCK))
        y = await spawn_one(sup, name="y", caller=lead.id, sim=dict(STUCK))
        await sup.stops.stop(lead.id, "x")  # the lead's own stop: its receipt told it
        claim = sup.notices.claimed(x.id)
        assert claim is not None and claim.via == "stop"
        await sup.stops.stop(ROOT_ID, "lead/y")  # the user's: the lead must hear of it
        letters = await told_after_abort(sup, lead.id)
        assert [m.subject for m in letters] == ["Finished: y ◌ retired"]
        claim = sup.notices.claimed(y.id)
        assert claim is not None and claim.via == "notice"


async def test_the_root_hears_of_its_childs_end_as_a_toast(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        before = sup.model.announced
        worker = await spawn_one(sup, name="w")
        await settled(sup, worker.id)
        await until(lambda: sup.model.announced > before, what="the root's announcement")
        assert sup.model.announcements[-1].startswith("Finished: w ✓ ok")
        assert sup.model.nodes[ROOT_ID].note == sup.model.announcements[-1]


async def test_a_wait_reply_that_never_reached_its_caller_hands_the_result_back(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        lead = await busy_lead(sup)
        member = await spawn_one(sup, name="m", caller=lead.id)
        await settled(sup, member.id)
        await until(lambda: sup.notices.owed(lead.id), what="the notice held for the turn")
        # The lead waits for m over the socket and goes away before the answer: the
        # socket is closed before the host's loop runs again, so the reply cannot land.
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(sup.socket_path))
        request = {"id": 1, "op": "wait", "from": lead.id, "names": ["m"]}
        client.sendall(json.dumps(request).encode() + b"\n")
        client.close()
        await until(lambda: sup.notices.handed_back == 1, what="the lost reply's hand-back")
        assert sup.notices.claimed(member.id) is None
        assert len(await told_after_abort(sup, lead.id)) == 1


async def test_an_empty_generation_is_retried_once_and_the_parent_is_told(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        lead = await busy_lead(sup)
        flaky = await spawn_one(sup, name="flaky", caller=lead.id, sim={"fail": "once"})
        node = await settled(sup, flaky.id)
        assert node.status is NodeStatus.SETTLED and node.verdict_data["ok"] is True
        (letter,) = await told_after_abort(sup, lead.id)
        assert "retried once, and the retry answered" in letter.body


async def test_a_partly_failed_team_settles_not_ok_and_legion_run_exits_1(
    world: PiWorld,
) -> None:
    write_card(world.project, "lead", depth=1)
    write_card(world.project, "broken", kind="exec", command=["sh", "-c", "'exit 3'"], tools=())
    world.server.script(
        ToolCall(
            "bash",
            {
                "command": f"{LEGION} spawn worker --kind sim --name good --task 'do it' ; "
                f"{LEGION} spawn broken --name bad --task 'fail' ; {LEGION} wait ; true"
            },
        ),
        Text(f"Done.\n{verdict_line('all good')}", tokens=4),
    )
    code, out, err = await legion(
        world, "run", "lead", "--name", "lead", "--speed", "200", "--task", "Run a team of two."
    )
    assert code == 1, f"exit {code}\nstdout:\n{out}\nstderr:\n{err}"
    assert "root/lead: settled · ✗ not ok — members failed: bad (exited with status 3)" in out
    assert "the lead said: all good" in out
    assert world.server.unscripted() == []


async def test_a_member_failure_a_sibling_superseded_keeps_the_team_ok(tmp_path: Path) -> None:
    from legion_tui.supervisor.hearing.results import team_verdict

    said = {"ok": True, "reason": "shipped"}
    verdict = team_verdict(said, [("w1", "exited with status 1")], ["w1"])
    assert verdict is not None and verdict["ok"] is True
    assert verdict["reason"] == "superseded by a sibling: w1; the lead said: shipped"
    open_failure = team_verdict(said, [("w1", "boom"), ("w2", "")], ["w2"])
    assert open_failure is not None and open_failure["ok"] is False
    assert open_failure["members_failed"] == ["w1"]
    assert open_failure["members_superseded"] == ["w2"]
    assert open_failure["lead_verdict"] == said
    assert team_verdict(said, [], []) is said
