"""The `legion` subcommands. Each module maps command names to `Command`s."""

# No `from __future__ import annotations` here: typing.NamedTuple compiles each string
# annotation into a ForwardRef, and a process's first compile() costs a control verb
# ~6 % of its start (SPEC §8). The fields' types are real objects instead.

import argparse
from collections.abc import Callable
from typing import NamedTuple


class Command(NamedTuple):  # not a dataclass: a verb inside a legion never imports those
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]  # exit code: 0 ok, 1 refused/failed, 2 usage
