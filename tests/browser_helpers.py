"""A real headless Chromium (Debian's `chromium`), driven over its own DevTools protocol.

`.ci/run` installs it with apt (`apt-get install -y chromium`); nothing downloads a browser
at install time. Under CI=true a missing chromium fails the test that needs it; elsewhere
it is skipped with the install line.

The page's terminal is xterm.js drawing on a canvas, so its text is not in the DOM. It is
read where xterm keeps it: textual-serve's page holds one `Terminal` per session object,
reached through DevTools the way its console would (the page's `onload` closure → the
session class → `Runtime.queryObjects` → `.terminal.buffer`), never by changing the page.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser")
INSTALL_HINT = "apt-get install -y chromium"


def chromium_path() -> str:
    """The chromium binary; a failure under CI=true, a skip elsewhere."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI") == "true":
        pytest.fail(f"chromium is not installed ({INSTALL_HINT}; .ci/run does it)")
    pytest.skip(f"chromium is not installed ({INSTALL_HINT})")


@dataclass(frozen=True, slots=True)
class Cell:
    """A row of the page's terminal: its text and the background of each column."""

    text: str
    backgrounds: tuple[int, ...]


# Reads the terminal rows: the text and each cell's background (-1: the default).
_READ_ROWS = """function () {
  const term = this, buf = term.buffer.active, rows = [];
  for (let y = 0; y < term.rows; y++) {
    const line = buf.getLine(buf.viewportY + y), bgs = [];
    for (let x = 0; x < term.cols; x++) {
      const cell = line.getCell(x);
      bgs.push(cell.isBgDefault() ? -1 : cell.getBgColor());
    }
    rows.push({text: line.translateToString(true), bgs: bgs});
  }
  return rows;
}"""

# Among the variables of the page's `onload` closure: the session class (the one whose
# prototype has `connect` and `fit`), whose instances hold `.terminal`.
_IS_SESSION_CLASS = """function () {
  return typeof this === "function" && !!this.prototype
    && typeof this.prototype.connect === "function"
    && typeof this.prototype.fit === "function";
}"""


_FIRST_TERMINAL = "function () { return this.length ? this[0].terminal : null; }"


class Page:
    """One tab, spoken to over its DevTools websocket."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        self._terminal: str | None = None  # the xterm Terminal's remote object id

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self._ids)
        await self.ws.send_json({"id": call_id, "method": method, "params": params})
        while True:  # events interleave with replies; only this call's reply ends it
            message = await asyncio.wait_for(self.ws.receive_json(), 30)
            if message.get("id") == call_id:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    async def evaluate(self, expression: str) -> Any:
        reply = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return reply["result"].get("value")

    async def navigate(self, url: str) -> None:
        self._terminal = None  # the next page has its own
        await self.call("Page.navigate", url=url)

    async def _properties(self, object_id: str) -> dict[str, Any]:
        return await self.call("Runtime.getProperties", objectId=object_id, ownProperties=True)

    async def _find_terminal(self) -> str | None:
        onload = await self.call("Runtime.evaluate", expression="window.onload")
        function_id = onload["result"].get("objectId")
        if function_id is None:
            return None  # the page's script has not run yet
        internal = (await self._properties(function_id)).get("internalProperties", [])
        scopes = [p["value"]["objectId"] for p in internal if p["name"] == "[[Scopes]]"]
        for scope in (await self._properties(scopes[0]))["result"]:
            scope_id = scope.get("value", {}).get("objectId")
            if scope_id is None:
                continue
            for variable in (await self._properties(scope_id))["result"]:
                value_id = variable.get("value", {}).get("objectId")
                if value_id is None or variable["value"].get("type") != "function":
                    continue
                is_class = await self.call(
                    "Runtime.callFunctionOn",
                    objectId=value_id,
                    functionDeclaration=_IS_SESSION_CLASS,
                    returnByValue=True,
                )
                if not is_class["result"].get("value"):
                    continue
                prototype = await self.call(
                    "Runtime.callFunctionOn",
                    objectId=value_id,
                    functionDeclaration="function () { return this.prototype; }",
                )
                found = await self.call(
                    "Runtime.queryObjects", prototypeObjectId=prototype["result"]["objectId"]
                )
                terminal = await self.call(
                    "Runtime.callFunctionOn",
                    objectId=found["objects"]["objectId"],
                    functionDeclaration=_FIRST_TERMINAL,
                )
                return terminal["result"].get("objectId")
        return None

    async def rows(self) -> list[Cell]:
        """What the page's terminal shows now, row by row ([] before it exists)."""
        if self._terminal is None:
            self._terminal = await self._find_terminal()
            if self._terminal is None:
                return []
        reply = await self.call(
            "Runtime.callFunctionOn",
            objectId=self._terminal,
            functionDeclaration=_READ_ROWS,
            returnByValue=True,
        )
        return [Cell(r["text"], tuple(r["bgs"])) for r in reply["result"]["value"]]

    async def text(self) -> str:
        return "\n".join(cell.text for cell in await self.rows())

    async def until(
        self, predicate: Callable[[list[Cell]], bool], what: str, limit: float = 30.0
    ) -> list[Cell]:
        """Read the terminal until `predicate` holds on its rows (bounded)."""
        deadline = time.monotonic() + limit
        while True:
            rows = await self.rows()
            if rows and predicate(rows):
                return rows
            if time.monotonic() > deadline:
                shown = "\n".join(c.text for c in rows)
                raise AssertionError(f"timed out waiting for {what}; the page shows:\n{shown}")
            await asyncio.sleep(0.05)

    async def press(self, *keys: str) -> None:
        """Type keys into the terminal as a keyboard would: keyDown (with its text), keyUp."""
        await self.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
        for key in keys:
            named = {"enter": ("Enter", "Enter", "\r", 13)}.get(key)
            if named is None:
                code = f"Key{key.upper()}" if key.isalpha() else ""
                named = (key, code, key, ord(key.upper()))
            name, code, text, vk = named
            down = {"key": name, "code": code, "text": text, "windowsVirtualKeyCode": vk}
            await self.call("Input.dispatchKeyEvent", type="keyDown", **down)
            await self.call(
                "Input.dispatchKeyEvent",
                type="keyUp",
                key=name,
                code=code,
                windowsVirtualKeyCode=vk,
            )


@asynccontextmanager
async def chromium(profile: Path, *, width: int = 1400, height: int = 900) -> AsyncIterator[Page]:
    """A headless Chromium with one tab, ended (its whole process group) on exit."""
    proc = _launch(chromium_path(), profile, width, height)
    try:
        port = await asyncio.to_thread(_devtools_port, profile, proc)
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as reply:
                targets = await reply.json()
            (tab,) = [t for t in targets if t["type"] == "page"]
            async with session.ws_connect(tab["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                page = Page(ws)
                await page.call("Page.enable")
                await page.call("Runtime.enable")
                yield page
    finally:
        await asyncio.to_thread(_end, proc)


def _launch(binary: str, profile: Path, width: int, height: int) -> subprocess.Popen[bytes]:
    profile.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [
            binary,
            "--headless",
            "--no-sandbox",  # tests may run as root, where chromium's sandbox will not start
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group: the end takes its renderers too
    )


def _devtools_port(profile: Path, proc: subprocess.Popen[bytes]) -> int:
    """The port chromium chose, from the file it writes in its profile (bounded wait)."""
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text().strip():
        if proc.poll() is not None:
            raise AssertionError(f"chromium exited with {proc.returncode} at start")
        if time.monotonic() > deadline:
            raise AssertionError("chromium did not open its DevTools port in 30 s")
        time.sleep(0.05)
    return int(port_file.read_text().split()[0])


def _end(proc: subprocess.Popen[bytes]) -> None:
    """The browser's whole process group: its renderers and GPU process too."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
