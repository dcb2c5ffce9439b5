"""What a safe land costs, side by side with what a user would type (issue 28).

A repository of 300 tracked files (and an ignored build folder of 200), an agent's
worktree whose branch holds 2 commits touching 5 files. Each round, from the same start
(the checkout reset to its base), in the same order:
  * `git merge --no-ff BRANCH` — what a user types; checks nothing;
  * legion's land: `plan_land` (the confirm: the sha, commits, files, the paths in the
    way, the hooks) then `land` (the confirmed sha, the read-back, the verified state);
  * `plan_land` alone — what `L` costs before the prompt shows;
  * with a dirty checkout: `git stash && git merge --no-ff BRANCH && git stash pop`
    against legion's land, which stashes and puts back itself.
Medians over the rounds, and each legion figure's ratio to the git it stands beside.

    .venv/bin/python bench/bench_land.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from calibration import calibrated

from legion_tui.git.land import land, plan_land
from legion_tui.git.worktree import Worktree, create_worktree

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@legion.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@legion.invalid",
}
os.environ.update(ENV)  # the land's own git calls commit as the same identity


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True,
                          text=True)  # fmt: skip
    return done.stdout.strip()


def make_repo(root: Path) -> tuple[Path, Worktree]:
    repo = root / "project"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text(".legion/\nbuild/\n")
    for n in range(300):
        (repo / "src" / f"m{n}.py").write_text(f"VALUE = {n}\n" * 20)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    (repo / "build").mkdir()
    for n in range(200):
        (repo / "build" / f"o{n}.bin").write_bytes(os.urandom(512))
    tree = asyncio.run(create_worktree(repo, "worker-1", nonce="bench0"))
    for step in range(2):
        for n in range(5):
            (tree.path / "src" / f"m{n}.py").write_text(f"VALUE = {n + step + 1000}\n" * 20)
        git(tree.path, "commit", "-qam", f"agent step {step}")
    return repo, tree


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return (time.perf_counter() - start) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=11)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp, calibrated():
        repo, tree = make_repo(Path(tmp))
        base = git(repo, "rev-parse", "HEAD")

        def reset(dirty: bool) -> None:
            git(repo, "reset", "-q", "--hard", base)
            if dirty:
                (repo / "src" / "m200.py").write_text("the user's edit\n")

        def legion_land() -> None:
            plan = asyncio.run(plan_land(tree))
            asyncio.run(land(tree, plan))

        def git_merge() -> None:
            git(repo, "merge", "-q", "--no-ff", "--no-edit", tree.branch)

        def git_stash_merge_pop() -> None:
            git(repo, "stash", "-q")
            git_merge()
            git(repo, "stash", "pop", "-q")

        figures: dict[str, list[float]] = {}
        cases: list[tuple[str, bool, Callable[[], object]]] = [
            ("git merge --no-ff", False, git_merge),
            ("legion land (plan + land)", False, legion_land),
            ("legion plan_land (the confirm)", False, lambda: asyncio.run(plan_land(tree))),
            ("git stash + merge + stash pop (dirty)", True, git_stash_merge_pop),
            ("legion land, dirty checkout", True, legion_land),
        ]
        for _ in range(rounds):
            for name, dirty, work in cases:
                reset(dirty)
                figures.setdefault(name, []).append(timed(work))
        reset(False)
        median = {name: statistics.median(times) for name, times in figures.items()}
        print(f"repository: 300 tracked files, 200 ignored; branch: 2 commits, 5 files; "
              f"{rounds} rounds, medians")  # fmt: skip
        for name in median:
            print(f"{name}: {median[name]:.1f} ms")
        clean = median["legion land (plan + land)"] / median["git merge --no-ff"]
        print(f"legion land ÷ git merge: {clean:.2f}x")
        dirty = median["legion land, dirty checkout"]
        print(f"legion land dirty ÷ git stash+merge+pop: "
              f"{dirty / median['git stash + merge + stash pop (dirty)']:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
