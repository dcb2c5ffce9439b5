"""The view dashboard in a browser (`legion serve`), with textual-serve.

textual-serve runs one command per browser connection, its terminal carried over a
websocket: here that command is `legion tui --view --session S`, so each page is a view
of its own (legion_tui.dashboard.view) and the host is never touched but through its socket.

Control is the token's alone: `--control` makes a token, printed at start inside the
page's URL (`/?token=…`). Opening that URL sets it as a same-site cookie, and a
websocket whose handshake carries it runs the view with control; every other one runs
`--read-only`, where each operation is refused in 403 wording. A handshake from a page
of another origin is refused outright (403): no other site can drive the view.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from contextvars import ContextVar

from aiohttp import web
from textual_serve.server import Server

TOKEN_COOKIE = "legion_token"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
# The command of the connection being handled: each aiohttp request runs in its own
# task, so a value set by one handshake is never seen by another.
_CONNECTION_COMMAND: ContextVar[str | None] = ContextVar("legion_connection_command", default=None)
# The origin the page being served was asked for: its websocket URL names the same one,
# so a page reached by another name for this machine (`--host 0.0.0.0`) still connects.
_PAGE_ORIGIN: ContextVar[str | None] = ContextVar("legion_page_origin", default=None)


def view_command(session: str, *, read_only: bool) -> str:
    """The shell command textual-serve runs for one connection."""
    argv = [sys.executable, "-m", "legion_tui.cli", "tui", "--view", "--session", session]
    return shlex.join([*argv, "--read-only"] if read_only else argv)


class ViewServer(Server):
    """textual-serve's server, choosing each connection's command by its token."""

    def __init__(self, session: str, *, host: str, port: int, token: str | None) -> None:
        super().__init__(view_command(session, read_only=True), host=host, port=port)
        self.title = f"legion · {session}"
        self.token = token
        self.control_command = view_command(session, read_only=False)

    # textual-serve reads `self.command` when a connection starts its app: the command
    # chosen for the connection being handled, else the read-only one.
    @property
    def command(self) -> str:
        return _CONNECTION_COMMAND.get() or self._read_only_command

    @command.setter
    def command(self, value: str) -> None:
        self._read_only_command = value

    @property
    def public_url(self) -> str:
        return _PAGE_ORIGIN.get() or self._public_url

    @public_url.setter
    def public_url(self, value: str) -> None:
        self._public_url = value

    def has_token(self, request: web.Request) -> bool:
        given = request.cookies.get(TOKEN_COOKIE) or request.query.get("token") or ""
        return self.token is not None and hmac.compare_digest(given, self.token)

    async def on_startup(self, app: web.Application) -> None:
        return None  # `legion serve` prints its own line (textual-serve's logo: not ours)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        _PAGE_ORIGIN.set(f"{request.scheme}://{request.host}")
        response: web.StreamResponse = await super().handle_index(request)
        # Never kept: not in a cache (it sets the token), nor in the browser's back/forward
        # cache, where a page left keeps its websocket open and so its view running
        # (Chromium 156 keeps such a page: `legion serve` ran one view per page left).
        response.headers["Cache-Control"] = "no-store"
        if self.token is not None and self.has_token(request):
            # The page's own websocket carries it; no other site's request does.
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="Strict")
        return response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"{request.scheme}://{request.host}":
            raise web.HTTPForbidden(text=f"403: a page of {origin} may not open this view")
        if self.host in LOOPBACK and request.url.host not in LOOPBACK:
            # Served to this machine only: a page under another name is another site's
            # whose name was made to point here (DNS rebinding).
            raise web.HTTPForbidden(text=f"403: {request.host} is not this machine's name")
        _CONNECTION_COMMAND.set(self.control_command if self.has_token(request) else None)
        return await super().handle_websocket(request)


def public_url(host: str, port: int) -> str:
    shown = socket.getfqdn() if host in ("0.0.0.0", "::", "") else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


async def serve(
    session: str,
    *,
    host: str,
    port: int,
    control: bool,
    announce: Callable[[str], None] = print,
    stop_signals: Sequence[signal.Signals] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP),
) -> None:
    """Serve until a stop signal. Each connection's view ends when its page closes."""
    token = secrets.token_urlsafe(24) if control else None
    server = ViewServer(session, host=host, port=port, token=token)
    runner = web.AppRunner(await server._make_app(), handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0][1]  # --port 0: the port the kernel chose
        server.port = bound
        server.public_url = public_url(host, bound)
        if token is None:
            announce(f"legion serve: {server.public_url}/ (read-only: every operation refused)")
        else:
            announce(
                f"legion serve: {server.public_url}/?token={token} (control: whoever opens "
                "this URL may stop, abort, steer and resume agents)"
            )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in stop_signals:
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            for sig in stop_signals:
                loop.remove_signal_handler(sig)
    finally:
        await runner.cleanup()
