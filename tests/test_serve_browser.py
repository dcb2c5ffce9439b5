"""`legion serve` in a real headless Chromium (issue 15 item 1): the page shows the
host's tree and its tok/s, a key moves the selection, and a stop is refused without the
control token and works with it. The host is a real Supervisor with sim agents; the
server is the real `legion serve` process; each page runs its own `legion tui --view`."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import psutil
import pytest
from browser_helpers import Cell, Page, chromium, chromium_path
from supervisor_helpers import LEGION, cli_env, hosted, run_cli, stuck_worker, until

from legion_tui.model import NodeStatus

pytestmark = pytest.mark.host

TREE = ("root", "keep", "kill")


@asynccontextmanager
async def serving(
    project: Path, *options: str
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """`legion serve --port 0 OPTIONS` in `project`: the URL it prints, and the process."""
    proc = await asyncio.create_subprocess_exec(
        LEGION,
        "serve",
        "--port",
        "0",
        "--session",
        "main",
        *options,
        cwd=project,
        env=cli_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line.startswith("legion serve: http://127.0.0.1:"), line
        yield line.split()[2], proc
    finally:
        children = psutil.Process(proc.pid).children(recursive=True)
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), 30)
        # Each page's view ended with the server: none is left behind.
        await until(
            lambda: not [c for c in children if alive(c)],
            what="the views to end",
        )


def alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def views_of(server: asyncio.subprocess.Process) -> list[list[str]]:
    """The command lines of the `legion tui --view` processes the server runs now."""
    views = []
    for child in psutil.Process(server.pid).children(recursive=True):
        try:
            if alive(child) and "--view" in child.cmdline():
                views.append(child.cmdline())
        except psutil.NoSuchProcess:
            continue  # it ended as we looked
    return views


def row_of(rows: list[Cell], name: str) -> Cell:
    (cell,) = [r for r in rows if f"● {name} " in r.text or r.text.strip().endswith(f"● {name}")]
    return cell


def selected(rows: list[Cell]) -> str:
    """The tree row drawn in the selection's background: the one whose first cell's
    background differs from the other tree rows'."""
    backgrounds = {name: row_of(rows, name).backgrounds[0] for name in TREE}
    odd = [n for n, bg in backgrounds.items() if list(backgrounds.values()).count(bg) == 1]
    assert len(odd) == 1, backgrounds
    return odd[0]


def shows_tree(rows: list[Cell]) -> bool:
    text = "\n".join(r.text for r in rows)
    return "tok/s" in text and all(f"● {name}" in text for name in TREE)


def flat(rows: list[Cell]) -> str:
    """The page's text as one line: a toast wraps its message over several rows."""
    return " ".join(" ".join(r.text.replace("▌", " ").split()) for r in rows)


async def stop_kill(page: Page) -> None:
    """From the first row: j j selects kill; x asks, y confirms."""
    rows = await page.until(shows_tree, "the tree")
    assert selected(rows) == "root"
    await page.press("j")
    rows = await page.until(lambda rows: selected(rows) == "keep", "j to select keep")
    await page.press("j")
    await page.until(lambda rows: selected(rows) == "kill", "j to select kill")
    await page.press("x")
    await page.until(lambda rows: "Stop kill (worker" in flat(rows), "the stop prompt")
    await page.press("y")


async def test_legion_serve_in_chromium(tmp_path: Path) -> None:
    chromium_path()  # missing: a failure under CI=true, else a skip naming the apt line
    project = tmp_path / "project"
    project.mkdir()
    async with hosted(project) as sup:
        await stuck_worker(sup, "keep")
        kill = await stuck_worker(sup, "kill")
        async with (
            serving(project, "--control") as (url, proc),
            chromium(tmp_path / "profile") as page,
        ):
            assert "?token=" in url
            base = url.split("?")[0]
            # Without the token: the page shows the tree and tok/s, j moves the selection,
            # and the stop is refused in 403 wording — nothing reaches the host.
            await page.navigate(base)
            await stop_kill(page)
            await page.until(
                lambda rows: (
                    "403 Forbidden — read-only view: this operation needs the control token"
                    in flat(rows)
                ),
                "the refusal",
            )
            assert sup.names.node(kill.id).status is NodeStatus.RUNNING
            await until(lambda: [v[-1] for v in views_of(proc)] == ["--read-only"], what="1 view")
            # With it: the same keys stop kill through the host's socket. One view per
            # page: the first page's view ended when it was left.
            await page.navigate(url)
            await stop_kill(page)
            await until(lambda: [v[-1] for v in views_of(proc)] == ["main"], what="its view alone")
            await page.until(lambda rows: "Stopped kill." in flat(rows), "the receipt")
            await until(
                lambda: sup.names.node(kill.id).status is NodeStatus.RETIRED, what="kill retired"
            )
            # The view learns it from the ledger: the row turns retired — stopped mid-run,
            # its session kept for `r` (issue 31 item 3).
            await page.until(
                lambda rows: any("◌ kill" in r.text and "stopped · r resumes" in r.text
                                 for r in rows),
                "kill's row stopped",
            )  # fmt: skip


async def test_serve_listens_on_this_machine_only_and_refuses_other_origins(
    tmp_path: Path,
) -> None:
    """Without --control: no token in the URL, no cookie set; bound to 127.0.0.1; a
    websocket handshake from a page of another origin is refused with a 403."""
    async with hosted(tmp_path), serving(tmp_path) as (url, proc):
        assert url.startswith("http://127.0.0.1:") and "token" not in url
        listening = [
            c.laddr
            for c in psutil.Process(proc.pid).net_connections("tcp")
            if c.status == psutil.CONN_LISTEN
        ]
        assert [address.ip for address in listening] == ["127.0.0.1"]
        async with aiohttp.ClientSession() as session:
            async with session.get(url + "?token=guess") as page:
                assert page.status == 200
                assert page.headers["Cache-Control"] == "no-store"
                assert "legion_token" not in page.headers.get("Set-Cookie", "")
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(
                    url.replace("http:", "ws:") + "ws",
                    headers={"Origin": "http://evil.example"},
                )
            assert refused.value.status == 403
            # Another name made to point here (DNS rebinding): its own origin, refused.
            port = url.rsplit(":", 1)[1].strip("/")
            rebound = f"evil.example:{port}"
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(
                    url.replace("http:", "ws:") + "ws",
                    headers={"Host": rebound, "Origin": f"http://{rebound}"},
                )
            assert refused.value.status == 403


async def test_serve_refuses_a_bad_port_and_a_taken_one(tmp_path: Path) -> None:
    async with hosted(tmp_path):
        code, _out, err = await run_cli("serve", "--port", "http", cwd=tmp_path)
        assert code == 2
        assert "argument --port: invalid port 'http': use 0-65535 (0: any free one)" in err
        async with serving(tmp_path) as (url, _proc):
            port = url.rsplit(":", 1)[1].strip("/")
            code, _out, err = await run_cli("serve", "--port", port, cwd=tmp_path)
            assert code == 1
            assert err.startswith(f"legion serve: cannot listen on 127.0.0.1:{port}: ")
        code, _out, err = await run_cli("serve", "--session", "nothing", cwd=tmp_path)
        assert code == 1
        assert err.startswith("legion serve: no run for session 'nothing' in ")
