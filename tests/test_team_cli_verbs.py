"""`legion mail` / `legion phase` as real processes against a socket that answers like the
supervisor (the client side is what these verbs own; the ops are the server's)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from legion_tui import receipts
from legion_tui.ledger.errors import MailInvalidText
from legion_tui.ledger.mailtext import check_mail_text

pytestmark = pytest.mark.host


@dataclass
class FakeSupervisor:
    """Records every request; answers from `replies[op]` (a result, or an error dict)."""

    path: Path
    requests: list[dict[str, Any]] = field(default_factory=list)
    replies: dict[str, dict[str, Any]] = field(default_factory=dict)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            req = json.loads(line)
            self.requests.append(req)
            reply = self.replies.get(req["op"], {})
            if "error" in reply:
                out = {"id": req["id"], "ok": False, "error": reply["error"]}
            else:
                out = {"id": req["id"], "ok": True, "result": reply}
            writer.write(json.dumps(out).encode() + b"\n")
            await writer.drain()
        writer.close()


@pytest.fixture
async def supervisor(tmp_path: Path) -> AsyncIterator[FakeSupervisor]:
    fake = FakeSupervisor(tmp_path / "supervisor.sock")
    server = await asyncio.start_unix_server(fake.serve, path=str(fake.path))
    try:
        yield fake
    finally:
        server.close()
        await server.wait_closed()


@dataclass
class Ran:
    code: int
    out: str
    err: str


async def legion(*argv: str, socket: Path | None, cwd: Path, stdin: str | None = None) -> Ran:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEGION_")}
    if socket is not None:
        env.update(LEGION_SOCKET=str(socket), LEGION_NODE_ID="n-worker-0")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "legion_tui.cli",
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=env,
    )
    out, err = await asyncio.wait_for(
        proc.communicate(stdin.encode() if stdin is not None else b""), 30
    )
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode())


async def test_mail_sends_one_request_as_the_calling_node(
    supervisor: FakeSupervisor, tmp_path: Path
) -> None:
    supervisor.replies["mail"] = {
        "message_id": 7,
        "to": "n-lead",
        "to_path": "root/lead",
        "state": "pending",
    }
    ran = await legion(
        "mail",
        "--to",
        "parent",
        "--subject",
        "done with parsing",
        "--body",
        "see out.md",
        "--kind",
        "report",
        "--urgency",
        "action-needed",
        socket=supervisor.path,
        cwd=tmp_path,
    )
    assert ran.code == 0, ran.err
    assert ran.out.strip() == "Mail #7 to root/lead queued (pending delivery)."
    (req,) = supervisor.requests
    assert {k: v for k, v in req.items() if k != "id"} == {
        "op": "mail",
        "from": "n-worker-0",
        "to": "parent",
        "subject": "done with parsing",
        "body": "see out.md",
        "kind": "report",
        "urgency": "action-needed",
    }


async def test_mail_reports_a_hand_over_and_a_bounce(
    supervisor: FakeSupervisor, tmp_path: Path
) -> None:
    argv = ("mail", "--to", "w1", "--subject", "s", "--body", "b")
    supervisor.replies["mail"] = {"message_id": 3, "to_path": "root/w1", "state": "accepted"}
    ran = await legion(*argv, socket=supervisor.path, cwd=tmp_path)
    assert ran.code == 0
    assert ran.out.strip() == "Mail #3 to root/w1 handed over (accepted; read at its next turn)."
    supervisor.replies["mail"] = {"message_id": 4, "to_path": "root/w1", "state": "bounced"}
    ran = await legion(*argv, socket=supervisor.path, cwd=tmp_path)
    assert ran.code == 1
    assert ran.out.strip() == "Mail #4 to root/w1 bounced: root/w1 has ended."


async def test_mail_json_and_body_from_stdin(supervisor: FakeSupervisor, tmp_path: Path) -> None:
    supervisor.replies["mail"] = {"message_id": 9}
    ran = await legion(
        "mail",
        "--to",
        "worker-1",
        "--subject",
        "s",
        "--body",
        "-",
        "--json",
        socket=supervisor.path,
        cwd=tmp_path,
        stdin="line one\nline two\n",
    )
    assert ran.code == 0, ran.err
    assert json.loads(ran.out) == {"message_id": 9}
    assert supervisor.requests[0]["body"] == "line one\nline two\n"
    assert supervisor.requests[0]["kind"] == "report"  # the defaults
    assert supervisor.requests[0]["urgency"] == "normal"


async def test_nul_is_refused_client_side_with_the_ledgers_words(
    supervisor: FakeSupervisor, tmp_path: Path
) -> None:
    body = "half\x00of it"
    ran = await legion(
        "mail",
        "--to",
        "parent",
        "--subject",
        "s",
        "--body",
        "-",
        socket=supervisor.path,
        cwd=tmp_path,
        stdin=body,
    )
    assert ran.code == 1
    with pytest.raises(MailInvalidText) as expected:
        check_mail_text("s", body)
    assert ran.err.strip() == f"legion mail: {expected.value}"
    assert "MAIL_INVALID_TEXT" in ran.err and "offset 4" in ran.err
    assert supervisor.requests == []  # nothing was sent, so nothing can be half-stored

    ran = await legion(
        "mail",
        "--to",
        "parent",
        "--subject",
        "s",
        "--body",
        "-",
        "--json",
        socket=supervisor.path,
        cwd=tmp_path,
        stdin=body,
    )
    assert ran.code == 1
    assert json.loads(ran.out)["error"]["code"] == "MAIL_INVALID_TEXT"


async def test_over_long_and_multiline_subjects_are_refused(
    supervisor: FakeSupervisor, tmp_path: Path
) -> None:
    for subject in ("x" * 201, "two\nlines"):
        ran = await legion(
            "mail",
            "--to",
            "parent",
            "--subject",
            subject,
            "--body",
            "b",
            socket=supervisor.path,
            cwd=tmp_path,
        )
        assert ran.code == 1 and "MAIL_INVALID_TEXT: subject" in ran.err
    assert supervisor.requests == []


async def test_a_refused_route_exits_1_with_the_hint(
    supervisor: FakeSupervisor, tmp_path: Path
) -> None:
    hint = (
        "no mail route from worker-0 to root: mail travels parent↔child and between "
        "siblings; write to lead and ask it to forward"
    )
    supervisor.replies["mail"] = {"error": {"code": "MAIL_ROUTE", "message": hint}}
    ran = await legion(
        "mail",
        "--to",
        "root",
        "--subject",
        "s",
        "--body",
        "b",
        socket=supervisor.path,
        cwd=tmp_path,
    )
    assert ran.code == 1
    assert ran.err.strip() == f"legion mail: {hint}"


async def test_usage_errors_exit_2(supervisor: FakeSupervisor, tmp_path: Path) -> None:
    missing = await legion(
        "mail", "--subject", "s", "--body", "b", socket=supervisor.path, cwd=tmp_path
    )
    bad_kind = await legion(
        "mail",
        "--to",
        "parent",
        "--subject",
        "s",
        "--body",
        "b",
        "--kind",
        "instruction",
        socket=supervisor.path,
        cwd=tmp_path,
    )
    no_reason = await legion("phase", "--to", "failed", socket=supervisor.path, cwd=tmp_path)
    empty_list = await legion(
        "phase", "--to", "reviewing", "--supersedes", " , ", socket=supervisor.path, cwd=tmp_path
    )
    assert [r.code for r in (missing, bad_kind, no_reason, empty_list)] == [2, 2, 2, 2]
    assert no_reason.err.strip() == f"legion phase: {receipts.PHASE_FAILED_NEEDS_REASON}"
    assert supervisor.requests == []


async def test_phase_sends_its_fields_and_prints_the_move(
    supervisor: FakeSupervisor, tmp_path: Path
) -> None:
    supervisor.replies["phase"] = {"phase": "reviewing", "from": "implementing"}
    ran = await legion(
        "phase",
        "--to",
        "reviewing",
        "--note",
        "two workers settled",
        "--evidence",
        "outputs/worker-0.output.md",
        "--supersedes",
        "worker-1, worker-2",
        socket=supervisor.path,
        cwd=tmp_path,
    )
    assert ran.code == 0, ran.err
    assert ran.out.strip() == "Phase implementing → reviewing."
    (req,) = supervisor.requests
    assert {k: v for k, v in req.items() if k != "id"} == {
        "op": "phase",
        "from": "n-worker-0",
        "to": "reviewing",
        "note": "two workers settled",
        "evidence": "outputs/worker-0.output.md",
        "supersedes": ["worker-1", "worker-2"],
    }


async def test_phase_failed_with_a_reason_and_a_refusal(
    supervisor: FakeSupervisor, tmp_path: Path
) -> None:
    refusal = "cannot move implementing → done; legal next phases: reviewing, failed"
    supervisor.replies["phase"] = {"error": {"code": "PHASE_REFUSED", "message": refusal}}
    ran = await legion("phase", "--to", "done", "--json", socket=supervisor.path, cwd=tmp_path)
    assert ran.code == 1
    assert json.loads(ran.out) == {
        "ok": False,
        "error": {"code": "PHASE_REFUSED", "message": refusal},
    }

    supervisor.replies["phase"] = {"phase": "failed", "receipt": "Team lead failed."}
    ran = await legion(
        "phase",
        "--to",
        "failed",
        "--reason",
        "all workers failed",
        socket=supervisor.path,
        cwd=tmp_path,
    )
    assert ran.code == 0 and ran.out.strip() == "Team lead failed."
    assert supervisor.requests[-1]["reason"] == "all workers failed"


async def test_without_a_supervisor_the_verbs_fail_cleanly(tmp_path: Path) -> None:
    ran = await legion(
        "mail", "--to", "parent", "--subject", "s", "--body", "b", socket=None, cwd=tmp_path
    )
    assert ran.code == 1
    assert "no live legion supervisor" in ran.err
    assert "Traceback" not in ran.err
