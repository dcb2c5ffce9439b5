"""`legion budget`: the run's dollar budget, `[budget] usd` in .legion/settings.toml
(issue 32 item 2) — shown, set or removed from a shell, without opening an editor.

The settings file is the user's: one key is changed, every comment and every other line
kept as written (tomlkit), written atomically; a file that does not parse is refused and
left alone. A running host looks at the file once a second and at each spawn: a raised
limit admits spawns again at once, a lowered one past the spend stops what runs under it. An
agent's shell (a verb run inside a legion) may not change its own budget.
"""

# (No `from __future__ import annotations`: see `legion_tui.commands`.)

import argparse
import math
import os
import sys

from legion_tui.commands import Command

_AGENT_SHELL = "LEGION_NODE_ID"  # set in every agent's environment (SPEC §5)


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("set", "off"),
                   help="set USD: the run's budget; off: no run budget (default: show it)")
    p.add_argument("usd", nargs="?", help="with set: dollars, e.g. 5 or 0.50")  # fmt: skip


def _usd(text: str | None) -> float:
    if text is None:
        raise SystemExit("legion budget set: give an amount of dollars (e.g. "
                         "`legion budget set 5`)")  # fmt: skip
    try:
        usd = float(text.removeprefix("$"))
    except ValueError:
        raise SystemExit(f"legion budget set: {text!r} is not an amount of dollars "
                         "(e.g. `legion budget set 5`)") from None  # fmt: skip
    if not math.isfinite(usd) or usd <= 0:
        raise SystemExit(f"legion budget set: the budget must be more than $0, got {text}")
    return usd


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from legion_tui.costs import fmt_usd
    from legion_tui.runs.catalog import find_project_dir
    from legion_tui.settings import SETTINGS_FILE, load_settings

    project = find_project_dir(Path.cwd())
    shown = SETTINGS_FILE.as_posix()
    if args.action is None:
        if args.usd is not None:
            raise SystemExit("legion budget: give `set USD` or `off` (or nothing, to show it)")
        limit = load_settings(project).settings.budget_usd
        if limit is None:
            print(f"No run budget ([budget] usd in {shown}): `legion budget set USD` sets one.")
        else:
            print(f"Run budget: {fmt_usd(limit)} ([budget] usd in {shown}); "
                  "what was spent: `legion status`.")  # fmt: skip
        return 0
    if os.environ.get(_AGENT_SHELL):
        print(f"legion budget {args.action}: refused — this is agent "
              f"{os.environ[_AGENT_SHELL]}'s shell; only the user changes the run's budget",
              file=sys.stderr)  # fmt: skip
        return 1
    if args.action == "off" and args.usd is not None:
        raise SystemExit("legion budget off: takes no amount")
    usd = _usd(args.usd) if args.action == "set" else None
    try:
        _write(project, usd)
    except (OSError, ValueError) as err:
        print(f"legion budget {args.action}: {err}", file=sys.stderr)
        return 1
    if usd is None:
        print(f"Run budget removed ([budget] usd in {shown}).")
    else:
        print(f"Run budget set to {fmt_usd(usd)} ([budget] usd in {shown}); a running "
              "host applies it at once.")  # fmt: skip
    return 0


def _write(project: "os.PathLike[str]", usd: float | None) -> None:
    """`[budget] usd` set (or removed) in the project's settings, the rest of the file as
    it was; ValueError (its problems) when the file, before or after, is not valid."""
    from pathlib import Path

    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    from legion_tui.regular_files import atomic_write, read_regular_text
    from legion_tui.settings import MAX_SETTINGS_BYTES, SETTINGS_FILE, parse_settings

    path = Path(project) / SETTINGS_FILE
    try:
        text = read_regular_text(path, max_bytes=MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        text = ""
    shown = SETTINGS_FILE.as_posix()
    _settings, problems = parse_settings(text, shown)
    if any(p.key is None for p in problems):  # the file itself: not TOML, too deep
        raise ValueError(f"{problems[0]} — fix it first; it was left as it is")
    try:
        doc = tomlkit.parse(text)
        table = doc.get("budget")
        if usd is None:
            if table is not None and "usd" in table:
                del table["usd"]
        elif table is None:
            doc["budget"] = tomlkit.table()
            doc["budget"]["usd"] = usd
        else:
            table["usd"] = usd
        new = tomlkit.dumps(doc)
    except (TOMLKitError, TypeError, KeyError) as err:
        why = f"{shown}: cannot change [budget] usd here ({err}); left as it is"
        raise ValueError(why) from err
    _settings, after = parse_settings(new, shown)
    budget_problems = [p for p in after if (p.key or "").startswith("budget")]
    if budget_problems:
        raise ValueError(f"{budget_problems[0]}; {shown} was left as it is")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, new, new_mode=0o644)  # a symlink's target: the link stays


COMMANDS = {
    "budget": Command(
        "Show, set or remove the run's dollar budget ([budget] usd in .legion/settings.toml).",
        _args,
        _run,
    ),
}
