"""The contract's `legion-verify` commands: fenced blocks in contract.md, parsed only.

    ```legion-verify
    make lint
    pytest -q tests/unit \\
        -x
    ```

Each logical line of such a block is one shell command (a trailing backslash joins the
next line; blank lines and `#` comments are skipped). The supervisor runs them; this
module only reads them. A contract without a block, or with an empty one, yields zero
commands — and the caller must say `by contract (0 commands)`, never "passed" (upstream
#371), which is why `blocks` is reported alongside `commands`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["VERIFY_INFO", "VerifyBlocks", "extract_verify_commands"]

VERIFY_INFO = "legion-verify"

# A CommonMark fence: up to 3 spaces, then ``` or ~~~ (3 or more), then the info string.
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\n]*)$")


@dataclass(frozen=True, slots=True)
class VerifyBlocks:
    commands: tuple[str, ...]
    blocks: int  # how many `legion-verify` blocks the contract has (0: nothing declared)


def extract_verify_commands(text: str) -> VerifyBlocks:
    commands: list[str] = []
    blocks = 0
    open_fence: str | None = None  # the fence that closes the block we are in
    in_verify = False
    pending = ""
    for line in text.splitlines():
        match = _FENCE.match(line)
        if open_fence is None:
            if match is None:
                continue
            open_fence = match["fence"]
            info = match["info"].strip().split()
            in_verify = bool(info) and info[0] == VERIFY_INFO
            blocks += in_verify
            continue
        closing = (
            match is not None
            and match["fence"][0] == open_fence[0]
            and len(match["fence"]) >= len(open_fence)
            and not match["info"].strip()
        )
        if closing:
            if in_verify and pending.strip():
                commands.append(pending.strip())
            open_fence, in_verify, pending = None, False, ""
            continue
        if not in_verify:
            continue
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        commands.append((pending + stripped).strip())
        pending = ""
    # An unclosed fence runs to the end of the document (CommonMark), so keep its commands.
    if in_verify and pending.strip():
        commands.append(pending.strip())
    return VerifyBlocks(tuple(commands), blocks)
