"""SPEC §5/§10: the socket server answers bad requests with errors and keeps serving."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import hosted, stuck_worker, until

from legion_tui.wire.client import LegionClient
from legion_tui.wire.lines import MAX_LINE_BYTES
from legion_tui.wire.names import ROOT_ID, RequestError

pytestmark = pytest.mark.host


async def _ask(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes
) -> dict[str, Any]:
    writer.write(raw)
    await writer.drain()
    line = await asyncio.wait_for(reader.readline(), 10)
    assert line, "the server closed the connection"
    reply: dict[str, Any] = json.loads(line)
    return reply


async def test_malformed_requests_get_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        reader, writer = await asyncio.open_unix_connection(
            sup.socket_path, limit=MAX_LINE_BYTES * 2
        )
        try:
            cases: list[tuple[bytes, str]] = [
                (b"{not json\n", "BAD_JSON"),
                (b"[1, 2, 3]\n", "BAD_REQUEST"),
                (b'"a string"\n', "BAD_REQUEST"),
                (b"\xff\xfe\n", "BAD_JSON"),
                (json.dumps({"id": 1, "from": "root"}).encode() + b"\n", "MISSING_FIELD"),
                (
                    json.dumps({"id": 2, "op": "launch", "from": "root"}).encode() + b"\n",
                    "UNKNOWN_OP",
                ),
                (json.dumps({"id": 3, "op": "status"}).encode() + b"\n", "MISSING_FIELD"),
                (
                    json.dumps({"id": 4, "op": "stop", "from": "root"}).encode() + b"\n",
                    "MISSING_FIELD",
                ),
                (
                    json.dumps({"id": 5, "op": "spawn", "from": "root", "children": []}).encode()
                    + b"\n",
                    "MISSING_FIELD",
                ),
                (
                    json.dumps({"id": 6, "op": "spawn", "from": "root", "children": [7]}).encode()
                    + b"\n",
                    "BAD_REQUEST",
                ),
                (
                    json.dumps({"id": 7, "op": "wait", "from": "root", "timeout": "soon"}).encode()
                    + b"\n",
                    "BAD_REQUEST",
                ),
                (
                    json.dumps({"id": 8, "op": "status", "from": "nobody"}).encode() + b"\n",
                    "UNKNOWN_CALLER",
                ),
                (b"x" * (MAX_LINE_BYTES + 10) + b"\n", "TOO_LONG"),
            ]
            for raw, code in cases:
                reply = await _ask(reader, writer, raw)
                assert reply["ok"] is False, raw[:40]
                assert reply["error"]["code"] == code, (raw[:40], reply)
                assert reply["error"]["message"]
                # ... and the same connection still answers a good request.
                ok = await _ask(reader, writer, b'{"id": 99, "op": "status", "from": "root"}\n')
                assert ok["ok"] is True and ok["id"] == 99
                assert ok["result"]["run_id"] == sup.run.run_id
        finally:
            writer.close()
            await writer.wait_closed()


async def test_ids_are_echoed_and_callers_are_identified(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        w = await stuck_worker(sup, "w")
        reader, writer = await asyncio.open_unix_connection(sup.socket_path)
        try:
            mine = await _ask(
                reader,
                writer,
                json.dumps({"id": "abc", "op": "status", "from": w.id}).encode() + b"\n",
            )
            assert mine["id"] == "abc"
            # A worker sees itself (and its own subtree), not the root's tree.
            assert [n["path"] for n in mine["result"]["nodes"]] == ["root/w"]
            tree = await _ask(reader, writer, b'{"id": 2, "op": "tree", "from": "root"}\n')
            assert "w (worker, sim)" in tree["result"]["text"]
        finally:
            writer.close()
            await writer.wait_closed()


async def test_a_dropped_connection_does_not_hurt_the_server(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        _r, w = await asyncio.open_unix_connection(sup.socket_path)
        w.write(b'{"id": 1, "op": "stat')  # half a request, then gone
        await w.drain()
        w.close()
        await w.wait_closed()
        reader, writer = await asyncio.open_unix_connection(sup.socket_path)
        try:
            ok = await _ask(reader, writer, b'{"id": 1, "op": "status", "from": "root"}\n')
            assert ok["ok"] is True
        finally:
            writer.close()
            await writer.wait_closed()


async def test_mail_travels_and_a_wait_returns_early_with_it(tmp_path: Path) -> None:
    """The `mail` op is served (routes and text checked by the mail service), and a
    blocking `wait` returns as soon as mail for its caller arrives."""
    async with hosted(tmp_path) as sup:
        w = await stuck_worker(sup, "w")
        await stuck_worker(sup, "v")
        waiting = asyncio.create_task(sup.queries.wait(ROOT_ID, ["w"], 60))
        await until(lambda: sup.mail.postman.held(ROOT_ID), what="the wait to hold root's mail")
        async with LegionClient(sup.socket_path, caller=w.id) as client:
            sent = await client.request(
                "mail", to="parent", subject="Question", body="Which branch?", kind="question"
            )
            assert sent["to"] == ROOT_ID
            result = await asyncio.wait_for(waiting, 30)
            assert result["state"] == "mail"
            assert result["message_ids"] == [sent["message_id"]]
            assert "Which branch?" in result["text"] and f"#{sent['message_id']}" in result["text"]
            assert sup.names.node(w.id).live  # the wait ended; nothing was stopped
            with pytest.raises(RequestError) as bad:
                await client.request("mail", to="parent", subject="x", body="a\x00b")
            assert bad.value.code == "MAIL_INVALID_TEXT"
            # Siblings may write to each other.
            ok = await client.request("mail", to="v", subject="Heads-up", body="config.py")
            assert ok["to_path"] == "root/v"
        letters = await sup.ledger.get_messages(ROOT_ID)
        assert [m.subject for m in letters if m.to_node == ROOT_ID] == ["Question"]
