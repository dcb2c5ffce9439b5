"""The `legion` subcommands. Each module maps command names to `Command`s."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NamedTuple


class Command(NamedTuple):  # not a dataclass: a verb inside a legion never imports those
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]  # exit code: 0 ok, 1 refused/failed, 2 usage
