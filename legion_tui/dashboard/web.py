"""The view dashboard in a browser (`legion serve`), with textual-serve.

textual-serve runs one command per browser connection, its terminal carried over a
websocket: here that command is `legion tui --view --session S`, so each page is a view
of its own (legion_tui.dashboard.view) and the host is never touched but through its socket.

Control is the token's alone: `--control` makes a token, printed at start inside the
page's URL (`/?token=…`). Opening that URL sets it as a same-site cookie, and a
websocket whose handshake carries it runs the view with control; every other one runs
`--read-only`, where each operation is refused in 403 wording. A handshake from a page
of another origin is refused outright (403): no other site can drive the view.

Each view is a process of ~64 MB, so they are bounded (issue 30: twelve anonymous
connections took 764 MB, one resize of 30000×30000 took a view to 2.1 GB, and views
outlived their page by 10–40 s and `legion serve` itself by its SIGKILL): at most
`ANONYMOUS_VIEWS` without the token — the token holder has `CONTROL_VIEWS` of their own, so
a flood cannot lock them out — past which a page gets a 503 that says why; every size is
clamped to `MAX_COLUMNS`×`MAX_ROWS`; a view ends within `QUIT_S` of its page, and dies
with `serve` (its parent-death signal). Served beyond this machine, a page under a name
that is not this machine's is refused (DNS rebinding), and `--control` says that the
token travels over plain HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from contextvars import ContextVar

from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from legion_tui.supervisor.processes.process import death_signal_prefix
from legion_tui.timeouts import within

TOKEN_COOKIE = "legion_token"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD = frozenset({"0.0.0.0", "::", ""})
ANONYMOUS_VIEWS = 8  # views at once for pages without the token
CONTROL_VIEWS = 4  # …and for the token's holder, apart
MAX_COLUMNS, MAX_ROWS = 500, 200  # past any real screen; a view's buffers grow with it
QUIT_S = 3.0  # a view asked to quit (its page gone) has this long, then it is killed
# The command of the connection being handled: each aiohttp request runs in its own
# task, so a value set by one handshake is never seen by another.
_CONNECTION_COMMAND: ContextVar[str | None] = ContextVar("legion_connection_command", default=None)
# The origin the page being served was asked for: its websocket URL names the same one,
# so a page reached by another name for this machine (`--host 0.0.0.0`) still connects.
_PAGE_ORIGIN: ContextVar[str | None] = ContextVar("legion_page_origin", default=None)


def view_command(session: str, *, read_only: bool) -> str:
    """The shell command textual-serve runs for one connection: `exec`, so the view is
    this process's own child, with the parent-death signal that ends it with `serve`."""
    argv = [sys.executable, "-m", "legion_tui.cli", "tui", "--view", "--session", session]
    argv = [*death_signal_prefix(), *argv, *(["--read-only"] if read_only else [])]
    return "exec " + shlex.join(argv)


def clamp_size(width: object, height: object) -> tuple[int, int]:
    """A terminal size a page asked for, within 1×1 … MAX_COLUMNS×MAX_ROWS."""
    w = to_int(str(width), 80)
    h = to_int(str(height), 24)
    return min(max(w, 1), MAX_COLUMNS), min(max(h, 1), MAX_ROWS)


class BoundedView(AppService):
    """textual-serve's app service, its sizes clamped and its end bounded."""

    async def start(self, width: int, height: int) -> None:
        await super().start(*clamp_size(width, height))

    async def set_terminal_size(self, width: int, height: int) -> None:
        await super().set_terminal_size(*clamp_size(width, height))

    async def stop(self) -> None:
        """Ask the view to quit; one that has not within QUIT_S is killed."""
        try:
            await within(super().stop(), QUIT_S)
        except TimeoutError:
            process = self._process
            if process is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()


class ViewServer(Server):
    """textual-serve's server, choosing each connection's command by its token."""

    def __init__(self, session: str, *, host: str, port: int, token: str | None) -> None:
        super().__init__(view_command(session, read_only=True), host=host, port=port)
        self.title = f"legion · {session}"
        self.token = token
        self.control_command = view_command(session, read_only=False)
        self.views = {False: 0, True: 0}  # live views, by whether the page has the token
        self.names = local_names(host)  # the Host names a page may be served under

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
        # As bytes: compare_digest refuses a str with non-ASCII characters (`?token=%C3%A9`
        # was an HTTP 500 with a traceback).
        return self.token is not None and hmac.compare_digest(
            given.encode("utf-8", "surrogateescape"), self.token.encode()
        )

    def check_host(self, request: web.Request) -> None:
        """Refuse a page under a name that is not this machine's (DNS rebinding)."""
        name = (request.url.host or "").strip("[]").lower()
        if name not in self.names:
            raise web.HTTPForbidden(text=f"403: {request.host} is not this machine's name")

    async def on_startup(self, app: web.Application) -> None:
        return None  # `legion serve` prints its own line (textual-serve's logo: not ours)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        self.check_host(request)
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
        self.check_host(request)
        control = self.has_token(request)
        if self.views[control] >= (CONTROL_VIEWS if control else ANONYMOUS_VIEWS):
            raise web.HTTPServiceUnavailable(
                text=f"503: {self.views[control]} views are open, the most legion serve runs "
                "at once for pages " + ("with the token" if control else "without the token")
                + "; close one and reload"
            )
        _CONNECTION_COMMAND.set(self.control_command if control else None)
        self.views[control] += 1
        try:
            return await self._serve_view(request)
        finally:
            self.views[control] -= 1

    async def _serve_view(self, request: web.Request) -> web.WebSocketResponse:
        """textual-serve's own handler (0.x), with the bounded view service."""
        websocket = web.WebSocketResponse(heartbeat=15)
        width, height = request.query.get("width", "80"), request.query.get("height", "24")
        view: BoundedView | None = None

        async def close() -> None:
            await websocket.close()

        try:
            await websocket.prepare(request)
            view = BoundedView(
                self.command,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            await view.start(*clamp_size(width, height))
            await self._process_messages(websocket, view)
        except asyncio.CancelledError:
            await websocket.close()
        finally:
            if view is not None:
                await view.stop()
        return websocket


def local_names(host: str) -> frozenset[str]:
    """The names a page of this server may be reached by: loopback served, the loopback
    names; otherwise also the bound address, this machine's names and its addresses."""
    names = set(LOOPBACK)
    if host in LOOPBACK:
        return frozenset(names)
    if host not in WILDCARD:
        names.add(host.lower())
    hostname = socket.gethostname()
    names.update({hostname.lower(), socket.getfqdn().lower()})
    with contextlib.suppress(OSError):
        for *_rest, address in socket.getaddrinfo(hostname, None):
            names.add(str(address[0]))
    return frozenset(names)


def public_url(host: str, port: int) -> str:
    """A URL another machine can use: for a wildcard bind, this machine's name — or its
    address, when the name is only `localhost`."""
    shown = host
    if host in WILDCARD:
        shown = socket.getfqdn()
        if shown in LOOPBACK or shown.startswith("localhost"):
            with contextlib.suppress(OSError):
                shown = socket.gethostbyname(socket.gethostname())
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
            if host not in LOOPBACK:
                announce(
                    f"legion serve: warning: control is served on {host} over plain HTTP — "
                    "anyone on the network path can read the token and take control; "
                    "prefer 127.0.0.1 behind an SSH tunnel or a TLS proxy"
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
