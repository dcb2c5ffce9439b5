"""Control verbs against a live host, side by side with a bare interpreter (SPEC §8: a
control verb's wall time ≤ 2.5× a bare `python -c pass`; issue 16 item 4).

A real `legion demo --headless` runs in a temporary project. Each round runs, once each
and in the same order, a bare `python -c pass` (the floor) and every verb below as the
real `legion` console script; the figures are the medians over the rounds, so a change
of load during the run touches the floor and the verbs alike. Two callers:
  * "agent": what an agent inside a legion runs in its loops — `LEGION_SOCKET` and
    `LEGION_NODE_ID` in the environment;
  * "shell": a user's own shell in the project — the verb finds the live run in
    ./.legion first.
Then the requests behind spawn, stop, status and wait are timed from a client already
connected in this process: the host's part of those verbs (the rest is the verb's own:
interpreter, imports, connect, print).
Then each verb runs once more under valgrind's callgrind: the instructions its own process
executes, a figure that reads the same whatever else the machine is doing.
Bytecode is cached (in a temporary PYTHONPYCACHEPREFIX, warmed by one run of each
command before the rounds), as an installed `legion` has it; without that every run
would compile legion_tui's sources again.

    .venv/bin/python bench/bench_cli_verbs.py [--rounds N] [--source DIR]

`--source DIR` runs host and verbs on the legion_tui in DIR (PYTHONPATH), e.g. an older
commit unpacked by `git archive REV | tar -x -C DIR`: before and after on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from calibration import CALLGRIND, COUNTED_ENV, calibrated, collected

LEGION = str(Path(sys.executable).with_name("legion"))
BUDGET = 2.5  # × the bare interpreter (SPEC §8)
CHILD = "bench-child"  # a simulated child of root's, settled before the rounds


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, float]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr, (time.perf_counter() - t0) * 1000.0


def instructions(argv: list[str], env: dict[str, str], cwd: Path, ok: set[int]) -> int:
    """The instructions one run of `argv` executes in its own process (callgrind): the
    same count on a busy machine and a quiet one, unlike its wall time. The host's side
    of a request and the waits are not in it; the interpreter, the imports and the verb's
    own work are."""
    done = subprocess.run([*CALLGRIND, *argv], env=env | COUNTED_ENV, cwd=cwd,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    count = collected(done.stderr)
    if done.returncode not in ok or count is None:
        raise SystemExit(f"{argv} under callgrind exited {done.returncode}: {done.stderr[-2000:]}")
    return count


def until_live(env: dict[str, str], cwd: Path, host: subprocess.Popen[bytes]) -> dict[str, str]:
    """The live run's socket, once the host answers (bounded: 60 s)."""
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        if host.poll() is not None:
            raise SystemExit(f"the demo host exited ({host.returncode}) before it served")
        code, out, _ms = run([LEGION, "status", "--json"], env, cwd)
        if code == 0 and json.loads(out).get("live"):
            break
        time.sleep(0.2)
    else:
        raise SystemExit("the demo host did not answer within 60 s")
    from legion_tui.runs.catalog import find_live_run
    from legion_tui.runs.socket_link import resolve_socket

    info = find_live_run(cwd)
    sock = resolve_socket(info) if info is not None else None
    if sock is None:
        raise SystemExit("the live run has no socket")
    return {"LEGION_SOCKET": str(sock), "LEGION_NODE_ID": "root"}


def host_round_trips(sock: str, rounds: int) -> dict[str, list[float]]:
    """ms of each request the verbs make, from a client already connected in this process
    (no interpreter, no imports): the host's part of each verb's wall time."""
    from legion_tui.wire.client import BlockingClient

    trips: dict[str, list[float]] = {"agent spawn": [], "agent stop": [], "agent status": [],
                                     "agent wait": []}  # fmt: skip
    child = {"role": "worker", "kind": "sim", "task": "bench: round trip"}
    with BlockingClient(sock, "root") as client:
        for i in range(rounds):
            for label, op, fields in (
                ("agent spawn", "spawn", {"children": [child | {"name": f"bench-rt-{i}"}]}),
                ("agent stop", "stop", {"name": f"bench-rt-{i}", "force": False}),
                ("agent status", "status", {"name": None}),
                ("agent wait", "wait", {"names": [CHILD], "timeout": None}),
            ):
                t0 = time.perf_counter()
                client.request(op, **fields)
                trips[label].append((time.perf_counter() - t0) * 1000.0)
    return trips


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--source", type=Path, help="run the legion_tui found in DIR")
    options = parser.parse_args()
    rounds = options.rounds
    with tempfile.TemporaryDirectory(prefix="lt-bench-verbs-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        unset = ("PYTHONDONTWRITEBYTECODE", "LEGION_SOCKET", "LEGION_NODE_ID")
        env = {k: v for k, v in os.environ.items() if k not in unset}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        if options.source is not None:
            env["PYTHONPATH"] = str(options.source.resolve())
            print(f"verbs source: {options.source.resolve()}")
        host = subprocess.Popen(
            [LEGION, "demo", "--headless", "--duration", "600", "--speed", "20"],
            cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            agent_env = env | until_live(env, project, host)
            code, out, _ = run([LEGION, "spawn", "worker", "--kind", "sim", "--name", CHILD,
                                "--task", "bench: settle"], agent_env, project)  # fmt: skip
            if code != 0:
                raise SystemExit(f"spawn failed: {out}")
            code, out, _ = run([LEGION, "wait", CHILD, "--timeout", "100"], agent_env, project)
            if code != 0:
                raise SystemExit(f"{CHILD} did not settle: {out}")
            # (label, argv, env, exit codes that are a right answer); "{i}" is the round:
            # each round spawns a child and stops it (a live child's real retire), so
            # root's children stay within its budget whatever the number of rounds.
            spawn = [LEGION, "spawn", "worker", "--kind", "sim", "--name", "bench-{i}",
                     "--task", "bench: spawn"]  # fmt: skip
            # a settled child: the letter is stored and bounces (exit 1), one round trip
            mail = [LEGION, "mail", "--to", CHILD, "--subject", "bench", "--body", "b"]
            verbs: list[tuple[str, list[str], dict[str, str], set[int]]] = [
                ("python -c pass", [sys.executable, "-c", "pass"], env, {0}),
                ("agent spawn", spawn, agent_env, {0}),
                ("agent status", [LEGION, "status"], agent_env, {0}),
                ("agent status --json", [LEGION, "status", "--json"], agent_env, {0}),
                ("agent tree", [LEGION, "tree"], agent_env, {0}),
                ("agent wait", [LEGION, "wait", CHILD], agent_env, {0}),
                ("agent collect", [LEGION, "collect", CHILD], agent_env, {0}),
                ("agent mail", mail, agent_env, {0, 1}),
                ("agent stop", [LEGION, "stop", "bench-{i}"], agent_env, {0}),
                ("shell status", [LEGION, "status"], env, {0}),
                ("shell status --json", [LEGION, "status", "--json"], env, {0}),
                ("shell tree", [LEGION, "tree"], env, {0}),
            ]
            times: dict[str, list[float]] = {label: [] for label, *_ in verbs}
            for i in range(rounds + 1):  # round 0 warms the bytecode cache
                for label, argv, verb_env, ok in verbs:
                    code, out, ms = run([a.format(i=i) for a in argv], verb_env, project)
                    if code not in ok:
                        raise SystemExit(f"{label} exited {code}: {out[-2000:]}")
                    if i:
                        times[label].append(ms)
            trips = host_round_trips(agent_env["LEGION_SOCKET"], rounds)
            counts = {
                label: instructions([a.format(i="vg") for a in argv], verb_env, project, ok)
                for label, argv, verb_env, ok in verbs
            } if shutil.which("valgrind") else {}  # fmt: skip
        finally:
            host.send_signal(signal.SIGTERM)
            host.wait(timeout=60)
    floor = statistics.median(times["python -c pass"])
    print(f"verbs rounds: {rounds} rounds")
    for label, samples in times.items():
        median = statistics.median(samples)
        name = label.replace(" ", "_").replace("--", "")
        print(f"verb {name} median: {median:.1f} ms")
        if label != "python -c pass":
            verdict = "within" if median / floor <= BUDGET else "OVER"
            print(f"verb {name} / python -c pass: {median / floor:.2f} x "
                  f"({verdict} the {BUDGET:g} x budget)")  # fmt: skip
        if label in trips:
            host_ms = statistics.median(trips[label])
            print(f"verb {name} host round trip median: {host_ms:.1f} ms "
                  f"(the verb's own part, interpreter included: {median - host_ms:.1f} ms)")
    if not counts:
        print("verb instructions: not counted (no valgrind; Debian: apt-get install valgrind)")
    for label, count in counts.items():
        name = label.replace(" ", "_").replace("--", "")
        ratio = count / counts["python -c pass"]
        print(f"verb {name} instructions: {count / 1e6:.1f} M ({ratio:.2f} x python -c pass)")
    return 0


if __name__ == "__main__":
    with calibrated():
        sys.exit(main())
