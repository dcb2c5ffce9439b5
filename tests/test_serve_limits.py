"""SPEC §10 'an anonymous `legion serve` client, or a huge resize': capped with a clear
refusal, clamped; views end with their client and with `serve` (issue 30, items 1 and 3).

Before: 12 anonymous websockets ran 12 views (764 MB); a 30000×30000 resize took a view to
2.1 GB; views outlived their page by 10–40 s and `legion serve` by its SIGKILL; a
non-ASCII token was an HTTP 500; `--host 0.0.0.0 --control` said nothing of plain HTTP;
on 0.0.0.0 any Host name got a live view.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import psutil
import pytest
from supervisor_helpers import LEGION, cli_env, hosted, until
from textual_serve.app_service import AppService

from legion_tui.dashboard import web

pytestmark = pytest.mark.host


def views() -> list[psutil.Process]:
    """This test's view processes (the server runs in-process: they are our children)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            if child.status() != psutil.STATUS_ZOMBIE and "--view" in child.cmdline():
                found.append(child)
    return found


@contextlib.asynccontextmanager
async def serving(host: str = "127.0.0.1", *, control: bool = False) -> AsyncIterator[list[str]]:
    """`serve` in this loop; what it announced (the URL first)."""
    said: list[str] = []
    running = web.serve(
        "main", host=host, port=0, control=control, announce=said.append, stop_signals=()
    )
    task = asyncio.create_task(running)
    try:
        await until(lambda: bool(said) or task.done(), what="serve's URL")
        yield said
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await until(lambda: not views(), what="every view to end with serve")


def ws_url(said: list[str]) -> str:
    return said[0].split()[2].split("?")[0].replace("http:", "ws:") + "ws"


async def test_anonymous_views_are_capped_and_end_with_their_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(web, "ANONYMOUS_VIEWS", 1)
    async with hosted(tmp_path), serving() as said, aiohttp.ClientSession() as session:
        first = await session.ws_connect(ws_url(said))
        await until(lambda: len(views()) == 1, what="the first page's view")
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(ws_url(said))
        assert refused.value.status == 503
        async with session.get(ws_url(said).replace("ws:", "http:")) as reply:
            assert reply.status == 503
            assert "1 views are open, the most legion serve runs at once for pages without " \
                "the token; close one and reload" in await reply.text()  # fmt: skip
        (view,) = views()
        await first.close()
        # Its page gone, the view is asked to quit, and killed past QUIT_S.
        await until(lambda: not view.is_running() or view.status() == psutil.STATUS_ZOMBIE,
                    limit=web.QUIT_S + 10, what="the view to end with its page")  # fmt: skip
        second = await session.ws_connect(ws_url(said))  # its place is free again
        await until(lambda: len(views()) == 1, what="the next page's view")
        await second.close()


def test_a_huge_size_is_clamped(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[int, int]] = []

    async def record(_self: AppService, width: int, height: int) -> None:
        asked.append((width, height))

    monkeypatch.setattr(AppService, "set_terminal_size", record)
    view = web.BoundedView.__new__(web.BoundedView)
    asyncio.run(view.set_terminal_size(30000, 30000))
    asyncio.run(view.set_terminal_size(-5, 0))
    assert asked == [(web.MAX_COLUMNS, web.MAX_ROWS), (1, 1)]
    assert web.clamp_size("30000", "x") == (web.MAX_COLUMNS, 24)


async def test_a_non_ascii_token_is_a_refusal_not_a_500(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with serving(control=True) as said, aiohttp.ClientSession() as session:
        page = said[0].split()[2].split("?")[0]
        async with session.get(page + "?token=%C3%A9") as reply:
            assert reply.status == 200  # the read-only page, no token set
            assert "legion_token" not in reply.headers.get("Set-Cookie", "")


async def test_control_on_every_interface_warns_and_checks_the_host_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with serving("0.0.0.0", control=True) as said, aiohttp.ClientSession() as session:
        assert "://localhost" not in said[0]
        assert said[1].startswith("legion serve: warning: control is served on 0.0.0.0 over "
                                  "plain HTTP")  # fmt: skip
        port = said[0].split()[2].split("?")[0].rstrip("/").rsplit(":", 1)[1]
        async with session.get(f"http://127.0.0.1:{port}/",
                               headers={"Host": f"evil.example:{port}"}) as reply:  # fmt: skip
            assert reply.status == 403
            assert "evil.example" in await reply.text()
        async with session.get(f"http://127.0.0.1:{port}/") as reply:
            assert reply.status == 200


async def test_views_die_with_a_killed_serve(tmp_path: Path) -> None:
    async with hosted(tmp_path):
        proc = await asyncio.create_subprocess_exec(
            LEGION, "serve", "--port", "0", "--session", "main", cwd=tmp_path, env=cli_env(),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.stdout is not None
        try:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            url = line.split()[2].replace("http:", "ws:") + "ws"
            async with aiohttp.ClientSession() as session:
                await session.ws_connect(url)
                server = psutil.Process(proc.pid)

                def its_views() -> list[psutil.Process]:
                    return [c for c in server.children(recursive=True)
                            if "--view" in c.cmdline()]  # fmt: skip

                await until(lambda: bool(its_views()), what="the page's view")
                (view,) = its_views()
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
                await until(lambda: not view.is_running() or view.status() == "zombie",
                            what="the view to die with serve")  # fmt: skip
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
