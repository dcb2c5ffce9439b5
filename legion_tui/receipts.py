"""Every user-visible string that upstream froze, in one place (pinned by tests)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from legion_tui.model import NodeStatus

if TYPE_CHECKING:
    from legion_tui.model_records import InFlightTool

# SPEC §7.1: the station glyph by status (tree rows, `legion status`, `legion tree`).
STATUS_GLYPHS: dict[NodeStatus, str] = {
    NodeStatus.RUNNING: "●",
    NodeStatus.STARTING: "◐",
    NodeStatus.BLOCKED: "◆",
    NodeStatus.SETTLED: "○",
    NodeStatus.FAILED: "✗",
    NodeStatus.RETIRED: "◌",
}

STOP_HINT_WIDE = "/legion stop [--force] [name|all]"
STOP_HINT_NARROW = "/legion stop"

STALL_SECONDS = 300.0
# The window of every "tok/s now" (the tree's rows, the header, the chart's now, the
# galaxy, the detail, `legion status`: `session.live_rate`), and how each names it beside
# the figure. Here, not there: `legion status` prints it and imports no session parser.
LIVE_WINDOW_S = 10.0
LIVE_WINDOW = f"now ({LIVE_WINDOW_S:g} s)"
ABORT_BOUND_SECONDS = 5.0


def plural(count: int, word: str) -> str:
    """`1 commit`, `2 commits`, `3 branches`."""
    ending = "es" if word.endswith(("ch", "sh", "s", "x")) else "s"
    return f"{count} {word}{'' if count == 1 else ending}"


def fmt_duration(seconds: float) -> str:
    """`00:07:31` — hours:minutes:seconds, hours growing past 99 if they must."""
    return _hms(max(0, int(seconds)))


@functools.lru_cache(maxsize=4096)  # every tree row, every frame: mostly the same seconds
def _hms(s: int) -> str:
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def working(tool: str, seconds: float) -> str:
    return f"working · {tool} {fmt_duration(seconds)}"


def stall_marker(name: str, tool: str, seconds: float) -> str:
    minutes = int(seconds // 60)
    return (
        f"stuck {minutes}m in {tool} — steer cannot reach a running tool call; "
        f"abort can (legion abort {name})"
    )


def stopped(name: str) -> str:
    return f"Stopped {name}."


def already_retired(name: str, execution: str, retired_at: str) -> str:
    return (
        f"No non-retired children to stop. {name} is already retired "
        f"(execution: {execution}, retired at {retired_at})"
    )


def retired_settled(names: list[str], execution: str) -> str:
    n = len(names)
    child = "child" if n == 1 else "children"
    return f"Retired {n} already-settled {child}: {', '.join(names)} (execution: {execution})"


# A live agent whose session file does not exist yet (pi writes it with its first answer).
FIRST_ANSWER_PENDING = "no session yet · waiting for its first answer"
COMMAND_NO_SESSION = "no session: a command — its output is in the Terminal tab"


def aborted(name: str, dropped: int | None = 0) -> str:
    text = f"Aborted {name}'s current turn (context kept; partial edits may remain)"
    if dropped is None:
        text += " — queued messages kept: this agent cannot clear its queue"
    elif dropped:
        text += f" — dropped {dropped} queued message(s)"
    return text


def aborted_command(name: str, status: int) -> str:
    """An exec command has no turn: the interrupt ended it, and nothing was kept."""
    return (
        f"Interrupted {name}: the command exited (status {status}) — an exec command keeps "
        f"no context; resume {name} starts it again on its task."
    )


def nothing_to_abort(name: str) -> str:
    return f"Nothing to abort: {name} is not running a turn."


def abort_timeout(name: str, seconds: float = ABORT_BOUND_SECONDS) -> str:
    return (
        f"Abort sent to {name}, but it had not settled within {seconds:g}s — the running "
        "tool may ignore cancellation; use stop (or stop with force) if it must die."
    )


def stop_confirm(
    name: str, role: str, pid: int | None, force: bool = False, *, members: int = 0, live: int = 0
) -> str:
    """The stop prompt names everything the stop ends: a lead's stop retires its whole
    subtree, so its members (and how many of them still run) are named too."""
    verb = "Force stop" if force else "Stop"
    pid_text = f"pid {pid}" if pid is not None else "in-process"
    below = ""
    if members:
        noun = "member" if members == 1 else "members"
        below = f" and its {members} {noun}, {live} live"
    return f"{verb} {name} ({role}, {pid_text}){below}? y confirms · any other key cancels"


def abort_confirm(name: str, queued: list[str]) -> str:
    """`a` asks first: an abort ends the turn under way and drops the steering queued for
    the next one — named (cut to fit one line) when this dashboard queued some that has
    not arrived yet."""
    if queued:
        last = queued[-1] if len(queued[-1]) <= 30 else queued[-1][:29] + "…"
        more = f" and {len(queued) - 1} more" if len(queued) > 1 else ""
        drops = f'drops queued "{last}"{more}'
    else:
        drops = "drops any queued steering"
    return f"Abort {name}'s turn (context kept; {drops})? y confirms · any other key cancels"


# ----- team machinery: mail, worktrees, verification, phase timeouts ------------------
MAIL_ROUTE_RULE = "mail travels parent↔child and between siblings"
PHASE_TIMEOUT_PREFIX = "Phase timeout:"  # the postman's OBSOLETE rule keys on it
VERIFY_BY_CONTRACT = "by contract (0 commands)"


def mail_subject_multiline(offset: int) -> str:
    return f"contains a line break at offset {offset}; keep the subject on one line"


def mail_empty_subject() -> str:
    return "is empty"


def mail_to_self() -> str:
    return f"mail to yourself is not a route: {MAIL_ROUTE_RULE}"


def mail_route_refused(sender: str, recipient: str, via: str | None) -> str:
    text = f"no mail route from {sender} to {recipient}: {MAIL_ROUTE_RULE}"
    if via is not None:
        text += f"; write to {via} and ask it to forward"
    return text


def worktree_demoted(name: str, role: str) -> str:
    return (
        f"worktree is reserved for a centurion: {name} ({role}) runs without one, in its "
        "parent's checkout — dispatch a centurion when you need an isolated branch"
    )


def phase_timeout_subject(name: str, phase: str, elapsed_s: float) -> str:
    return f"{PHASE_TIMEOUT_PREFIX} {name} in {phase} for {fmt_duration(elapsed_s)}"


def phase_timeout_body(name: str, phase: str, elapsed_s: float, limit_s: float) -> str:
    return (
        f"{name} has been in phase {phase} for {fmt_duration(elapsed_s)}, past its advisory "
        f"limit of {fmt_duration(limit_s)}. Nothing was stopped: a phase timeout only reports. "
        f"Let it run, steer it (legion steer {name} TEXT), or stop it (legion stop {name})."
    )


def phase_moved(name: str, current: str, target: str) -> str:
    return f"{name}: {current} → {target}."


def no_phases(name: str) -> str:
    return (
        f"{name} runs without declared phases: there is no phase to move "
        "(finish the work and end with a verdict)"
    )


def team_failed_subject(name: str) -> str:
    return f"Team failed: {name}"


def verify_gate_by_contract() -> str:
    return (
        f"{VERIFY_BY_CONTRACT} — the verification_passed gate was met by a contract "
        "with no legion-verify command, not by a test run"
    )


def verification_passed(count: int) -> str:
    return f"verification passed ({count} command{'s' if count != 1 else ''})"


def verification_failed(failed: int, count: int) -> str:
    return f"verification failed ({failed} of {count} command{'s' if count != 1 else ''} failed)"


# ----- phase machine (upstream centurion-declared-phases-v1 G1–G5, declarative v5) -----
PHASE_DONE_RESERVED = "done is controlled by the parent or supervisor"
PHASE_ABORT_RESERVED = "aborted is reserved for a parent retire"
PHASE_FAILED_NEEDS_REASON = "failed needs a reason (legion phase --to failed --reason TEXT)"
PHASES_CENTURION_ONLY = "phases belong to a centurion team; dispatch a worker for solo work"


def centurion_root_only(parent: str, node: str) -> str:
    return f"centurion is dispatchable only from the root shell; '{parent}' at '{node}' cannot"


def phases_root_only(node: str) -> str:
    return f"phases are declared by the root shell only; '{node}' cannot"


def phase_no_terminal(start: str) -> str:
    return f"phase machine cannot reach a terminal phase from '{start}'"


def phase_refused(current: str, target: str, why: str, legal: list[str]) -> str:
    """A refused `legion phase --to`: always ends with the phases that ARE legal now."""
    listed = ", ".join(legal) if legal else "none right now"
    return f"cannot move {current} → {target}: {why}. Legal next phases from {current}: {listed}"


# ----- supervisor core (stop/steer/resume/wait) -----------------------------------------
def nothing_to_stop() -> str:
    return "No non-retired children to stop."


def stop_survivors(name: str, pids: list[int]) -> str:
    listed = ", ".join(str(p) for p in pids)
    return f"Stopping {name} left {len(pids)} process(es) alive: pid {listed} — not stopped."


def stop_not_recorded(name: str, error: str) -> str:
    """A stop that happened but that the ledger refused to record (a full disk)."""
    return (
        f"{name} is stopped but not recorded yet: the ledger refused the write ({error}); "
        "the host retries it, and until it lands `legion status` from elsewhere reads "
        f"{name} as running."
    )


_STEER_TEXT = {
    "queued": "queued for {name}'s next turn boundary",
    "accepted": "accepted by {name} (it was idle: a turn started)",
    "intercepted": "intercepted: {name} consumed it in an interrupt; it did not start a turn",
}


def steered(name: str, outcome: str) -> str:
    """`queued`, `accepted` or `intercepted`, said plainly."""
    return "Steer " + _STEER_TEXT.get(outcome, outcome + " ({name})").format(name=name) + "."


def restarted(name: str) -> str:
    return f"Restarted {name} on its task (it had written no session yet)"


def nothing_interrupted() -> str:
    return "Nothing to resume: no agent is interrupted."


def woken(name: str) -> str:
    return f"Started {name} again on its session (its idle process had been released)."


def adopted(name: str) -> str:
    return f"legion has {name} again: idle on its session, a message starts its next turn."


def resumed(name: str, session_file: object) -> str:
    return f"Resumed {name} on its session file {session_file}."


def wait_timeout(seconds: float, still_running: list[str]) -> str:
    names = ", ".join(still_running) if still_running else "none"
    return (
        f"Stopped waiting after {seconds:g}s — nothing was stopped; still running: {names}. "
        "Wait again, or stop them explicitly."
    )


# ----- dashboard (SPEC §7.3): not upstream-frozen, but pinned like the others ---------
QUIT_CONFIRM = (
    "Quit? Live agents will be paused (resumable with r next time). "
    "y confirms · any other key cancels"
)


# Ctrl+C does not quit (Textual's convention); it names the key that asks first.
CTRL_C_HINT = "Ctrl+C does not quit here: press q (it asks first while agents are live)."


def root_not_stoppable(name: str) -> str:
    """The root is this session itself: nothing offers to stop it (it would be refused)."""
    return f"{name} is this session — q quits it (live agents are paused, resumable with r)."


def reopen_hint(session: str, legion: str = "legion") -> str:
    """Printed as the dashboard exits: which session this was and how to come back
    (`legion`: how the user's shell runs it, `invocation.legion_command`)."""
    return f"legion: session {session} — reopen it with: {legion} tui --session {session}"


def already_ended(name: str, status: str) -> str:
    """`y` arrived after the node ended on its own: say so instead of acting."""
    return f"{name} already ended ({status}) — nothing stopped."


def interrupted_banner(names: list[str]) -> str:
    shown = ", ".join(names[:6]) + (f" (+{len(names) - 6} more)" if len(names) > 6 else "")
    # The lever first: on a narrow terminal the list of names is what gets cut.
    return f"Interrupted by the last shutdown — r resumes the selected one, R all: {shown}"


# ----- completion notices and the empty-generation retry (issue 11) -------------------------
EMPTY_GENERATION = "provider-empty-generation"
# What a node whose provider answered with nothing is told once, on the same session.
CONTINUE_PROMPT = (
    "Your last reply came back empty (the provider returned no content). "
    "Please continue from where you were and finish the task."
)
EMPTY_RETRIED_TOO = "provider returned an empty generation; retried once"
EMPTY_RETRY_ANSWERED = "provider returned an empty generation; retried once, and the retry answered"


def waiting_for_members(live: int) -> str:
    """A lead whose turn ended while its members work: it is woken by their notice."""
    if live == 0:
        return "waiting · its members' results are on their way"
    return f"waiting for {live} member{'s' if live != 1 else ''} · woken by their notice"


def already_reported(name: str, via: str, when: str, message_id: int | None) -> str:
    """A `collect` of a result the caller already has (a notice, an earlier collect);
    `when` is the clock time it was handed over."""
    how = f"in notice #{message_id}" if via == "notice" and message_id else f"by {via}"
    return (
        f"{name}'s result was already reported to you {how} at {when}; "
        f"`legion collect {name} --again` shows it again."
    )


def in_flight_suffix(stack: Sequence[InFlightTool]) -> str:
    """What follows the top (innermost) tool's name (SPEC §3): ` (inside codemode ×2)`
    when parent ids chain the whole stack up to its outermost call, ` (+N more)` when
    they do not (parallel calls), "" for a single call."""
    if len(stack) <= 1:
        return ""
    by_id = {t.id: t for t in stack}
    chain: list[InFlightTool] = []
    cur = stack[-1]
    while cur.parent_id is not None and cur.parent_id in by_id:
        cur = by_id[cur.parent_id]
        chain.append(cur)
    if chain and len(chain) == len(stack) - 1:
        return f" (inside {chain[-1].name} ×{len(chain)})"
    return f" (+{len(stack) - 1} more)"


# ----- the project's checks on an agent's work (issue 34) ----------------------------------
def checks_words(data: Mapping[str, object]) -> str:
    """A `checks` event as its row and `legion status` say it."""
    state = data.get("state")
    if state == "running":
        return "checks running"
    if state == "pass":
        return "✓ checks"
    summary = data.get("summary") or "failed"
    if data.get("unsent"):
        return f"✗ checks: {summary} · not sent back ({data['unsent']})"
    if data.get("exhausted"):
        retries = data.get("retries")
        return f"✗ checks after {retries} retries" if retries else f"✗ checks: {summary}"
    sent = int(str(data.get("round") or 0)) + 1
    return f"✗ checks: {summary} · sent back ({sent} of {data.get('retries')})"


def checks_failed_prompt(summary: str, tail: str, sent: int, retries: int) -> str:
    """What a failing run of the project's checks says to the agent whose work it was."""
    return (
        f"The project's checks failed on your work: {summary} (round {sent} of {retries}). "
        "Fix what they report, then end with your verdict line as before. The end of "
        f"their output:\n```\n{tail}\n```"
    )


def checks_gave_up(name: str, summary: str, retries: int, output: object) -> str:
    rounds = f"after {retries} retries" if retries else "(no retries set)"
    return f"{name}: the project's checks still fail {rounds} — {summary}; output: {output}"
