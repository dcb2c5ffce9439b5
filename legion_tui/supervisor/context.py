"""The host's context: what every part of a supervisor shares, in one typed object.

The model, the names, the one write path (`record.Record`), the roster of running
agents, the role cards (`cards.RoleCards`), the run, the clock and the project; the
host's options (budgets, stop grace, where and how agents run); the closed flag; the
sandbox a demo host owns; and what exists only once the host has started — the ledger,
the mail record its services write through (`echoing`) and the mail service — filled
in by `services.Services`.

Each part takes this context plus the few parts it truly depends on; a part reads the
late-bound things here when it needs them (None, or an error, before the start).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from legion_tui.runs.socket_link import socket_path_for
from legion_tui.supervisor.life.cards import RoleCards
from legion_tui.supervisor.state.naming import Names
from legion_tui.supervisor.state.record import Record
from legion_tui.supervisor.state.roster import Roster
from legion_tui.wire.names import ROOT_ID

if TYPE_CHECKING:
    from legion_tui.ledger import Ledger
    from legion_tui.mail.service import MailService
    from legion_tui.runs.folder import RunInfo
    from legion_tui.settings import ClusterSettings
    from legion_tui.state import Clock, LegionModel
    from legion_tui.supervisor.state.mail_record import MailRecord
    from legion_tui.wire.spawn_request import Budgets

__all__ = ["HostContext", "HostOptions"]


@dataclass(slots=True)
class HostOptions:
    """How this host was asked to run; `stop_grace` and `budgets` are read at each use
    (tests lower them on a live host)."""

    budgets: Budgets
    stop_grace: float  # seconds from SIGTERM to SIGKILL
    idle_release: float  # a settled agent's process ends after this long idle (0: never)
    cluster: ClusterSettings  # where agents run: here, or on a Ray cluster
    default_kind: str | None  # the kind `auto` cards get here, over `[agent] default`
    seed: int  # the simulated agents' seeds start here
    speed: float  # and run at this speed


class HostContext:
    """The collaborators every part of one host shares."""

    def __init__(
        self,
        model: LegionModel,
        run: RunInfo,
        project_dir: Path,
        options: HostOptions,
        *,
        clock: Clock,
    ) -> None:
        self.model = model
        self.run = run  # its id and folders: fixed for the run (a reopen keeps them)
        self.project_dir = project_dir
        self.options = options
        self.clock = clock
        self.socket_path = socket_path_for(run)
        self.names = Names(model)
        self.record = Record(model, self.names)  # the one write path
        self.roster = Roster()  # who runs now: handles, monitors, turn events, marks
        self.cards = RoleCards(project_dir)  # loaded at the start, again at each spawn
        # A git repository the host owns (the demo's sandbox). When set, every
        # centurion's worktree is made from it — never from the project — and simulated
        # centurions get one too (they commit there); the user's repository is untouched.
        self.sandbox: Path | None = None
        self.closed = False  # the host is pausing (or never started): nothing more starts
        # Once started (`services.Services`): the ledger, the record mail writes through.
        self.ledger: Ledger | None = None
        self.echo: MailRecord | None = None
        self.mail: MailService | None = None

    @property
    def stop_grace(self) -> float:
        """The host's stop grace, read at each stop."""
        return self.options.stop_grace

    def echoing(self) -> MailRecord:
        """The record through which rows and events reach the ledger and the model at
        once (mail, the phase clock, stints); an error before the host has started."""
        if self.echo is None:
            raise RuntimeError("the supervisor is not started: no ledger to write through")
        return self.echo

    def announce(self, text: str) -> None:
        """Tell the host's user (root's line and a toast)."""
        self.model.announce(ROOT_ID, text)
