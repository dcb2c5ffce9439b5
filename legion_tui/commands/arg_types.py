"""argparse `type=` checks for the values every verb shares: a bad one is a usage error
(exit 2, one line naming the option) before anything connects, opens or spawns — never
a traceback, never a wait "after nans"."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator

__all__ = [
    "add_fanout_options",
    "add_kind_option",
    "add_task_options",
    "child_name",
    "fanout_kinds",
    "seconds",
    "session_name",
    "task_of",
    "task_text",
]


def session_name(text: str) -> str:
    from legion_tui.runs.folder import SessionNameError, validate_session_name

    try:
        return validate_session_name(text)
    except SessionNameError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def child_name(text: str) -> str:
    """A node name (`wire.NAME_PATTERN`); empty is not "pick one for me" (omit --name).
    Not through `naming`: that one imports logging and the ops (25 ms of `legion spawn`)."""
    import re

    from legion_tui.wire.names import NAME_PATTERN

    if not text.strip():
        raise argparse.ArgumentTypeError("a name cannot be empty (omit --name to get <role>-N)")
    if not re.fullmatch(NAME_PATTERN, text):
        raise argparse.ArgumentTypeError(
            f"invalid name {text!r}: use 1-64 of [a-z0-9._-], starting with a letter or digit"
        )
    return text


def add_task_options(parser: argparse.ArgumentParser, what: str) -> None:
    """`--task TEXT` or `--task-file FILE` (one of them): a long task cannot pass argv
    (one word holds at most 128 KiB), a file can — up to the same 128 KiB an agent takes."""
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--task", help=what)
    group.add_argument("--task-file", metavar="FILE", help="read the task from FILE")


class _CardKinds:
    """`model.CARD_KINDS`, read only when argparse asks (a `--kind` given, a help or a
    usage error): `legion spawn` does not import the model (12 ms) to build its parser."""

    def _kinds(self) -> tuple[str, ...]:
        from legion_tui.model import CARD_KINDS

        return CARD_KINDS

    def __contains__(self, kind: object) -> bool:
        return kind in self._kinds()

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds())


def add_kind_option(p: argparse.ArgumentParser) -> None:
    """`--kind` for the launching verbs (`legion run`, `legion spawn`)."""
    p.add_argument(
        "--kind",
        choices=_CardKinds(),  # a container: argparse asks `in`, and iterates for help
        # A metavar of its own: argparse would iterate the choices to make one at once.
        metavar="KIND",
        help="run the card as this kind for this launch: %(choices)s (sim: the simulated "
        "agent, which does no real work; auto: the agent [agent] in .legion/settings.toml "
        "names, else the first installed)",
    )


MAX_ATTEMPTS = 16  # more is a fleet, not a comparison: the spawn budgets still apply


def _attempt_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not a number of attempts: {text!r}") from err
    if not 2 <= value <= MAX_ATTEMPTS:
        raise argparse.ArgumentTypeError(
            f"a fan-out is 2 to {MAX_ATTEMPTS} attempts, got {value}"
        )
    return value


def _kind_list(text: str) -> tuple[str, ...]:
    """`pi,claude,codex`, or one kind with several models: `pi:MODEL,pi:MODEL`."""
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k.partition(":")[0] not in _CardKinds()]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(
            f"unknown kind(s) {', '.join(unknown) or repr(text)}: use a comma list of "
            f"{', '.join(_CardKinds())} (each may name its model: pi:MODEL)"
        )
    return kinds


def add_fanout_options(p: argparse.ArgumentParser) -> None:
    """`--fanout N` and `--kinds K,K,…` for the launching verbs (issue 34)."""
    p.add_argument(
        "--fanout", type=_attempt_count, metavar="N",
        help="start N attempts at the task: siblings in one attempt group (--name names "
        "it), each in its own worktree cut from one commit",
    )  # fmt: skip
    p.add_argument(
        "--kinds", type=_kind_list, metavar="K,K,…",
        help="the attempts' kinds, in turn (e.g. pi,claude,codex; a kind with its model: "
        "pi:MODEL); without --fanout, one attempt per kind",
    )  # fmt: skip


def fanout_kinds(args: argparse.Namespace) -> list[str | None] | None:
    """What each attempt runs — a kind, `kind:model`, or None: the card's — or None when
    no fan-out was asked; a fan-out of one raises ValueError with the message to print."""
    if args.fanout is None and args.kinds is None:
        return None
    if args.kinds is not None and args.kind is not None:
        raise ValueError("give the attempts' kinds with --kinds, not --kind")
    kinds: tuple[str | None, ...] = args.kinds or (args.kind,)
    count = args.fanout or len(kinds)
    if count < 2:
        raise ValueError(
            "a fan-out is 2 attempts or more: --fanout N, or two kinds or more in --kinds"
        )
    return [kinds[i % len(kinds)] for i in range(count)]


def task_text(args: argparse.Namespace) -> str:
    """The task text (`--task`, or the file `--task-file` names); a file that cannot be
    read raises ValueError with the message to print. Unchecked: `legion spawn` sends it
    as it is and the supervisor refuses it with `check_task`'s words (importing the
    admission rules costs a verb more than its whole budget)."""
    from legion_tui.regular_files import read_regular_text

    if args.task_file is None:
        return str(args.task if args.task is not None else "")
    try:
        return read_regular_text(args.task_file)
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read the task file {args.task_file}: {err}") from err


def task_of(args: argparse.Namespace) -> str:
    """`task_text`, checked as a spawn checks it — for `legion run`, which must refuse
    before its host exists; a problem raises ValueError with the message to print."""
    from legion_tui.wire.names import OpError
    from legion_tui.wire.spawn_request import check_task

    task = task_text(args)
    try:
        check_task(task)
    except OpError as err:
        raise ValueError(err.message) from err
    return task


def seconds(text: str) -> float:
    """A duration in seconds: finite and not negative."""
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from err
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"seconds must be finite and ≥ 0, got {text!r}")
    return value
