"""Role cards and phase checks: what validation with file:line costs.

Run: .venv/bin/python bench/bench_cards_load.py

- `load_cards` (3 bundled + 20 project cards, each with a declared machine) against the
  obvious alternative: split the frontmatter and `yaml.safe_load` it, no validation and
  no line numbers. Both with the pure-Python and the libyaml parser.
- `Machine.check_transition` / `legal_next` on the default machine for an 8-child team
  (what a `legion phase` request or a status line costs), against evaluating the bare
  conditions.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from calibration import calibrated

from legion_tui.agents import cards as cards_module
from legion_tui.agents.cards import load_cards
from legion_tui.model import NodeStatus
from legion_tui.phases import DEFAULT_MACHINE, ChildFact, TeamSnapshot, evaluate

CARD = """---
name: helper-{n}
description: project helper number {n}
kind: exec
role: centurion
command: [sh, -c, "echo {{task}} > {{session_file}}"]
tools: [read, grep, bash]
timeoutMs: 600000
maxSubagentDepth: 1
phases:
  - id: planning
    require: [contract_file]
    next: [implementing]
  - id: implementing
    require: [children_settled]
    next:
      - to: reviewing
        require: [children_present, children_none_failed]
      - to: failed
        require: [children_all_failed]
  - id: reviewing
    next:
      - to: done
        require: [verdict_ok]
---
You are helper {n}. {body}
"""


def timed(fn: Callable[[], object], *, rounds: int, inner: int = 1) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return samples


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[18]


def naive_load(folder: Path, loader: type[yaml.SafeLoader]) -> dict[str, object]:
    out: dict[str, object] = {}
    for file in sorted(folder.glob("*.md")):
        _, front, _ = file.read_text().split("---\n", 2)
        data = yaml.load(front, Loader=loader)
        out[data["name"]] = data
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        folder = project / ".legion" / "agents"
        folder.mkdir(parents=True)
        for n in range(20):
            (folder / f"helper-{n}.md").write_text(CARD.format(n=n, body="Work. " * 200))
        assert not load_cards(project).problems, load_cards(project).problems

        loaders = [("python", yaml.SafeLoader)]
        if getattr(yaml, "__with_libyaml__", False):
            loaders.append(("libyaml", yaml.CSafeLoader))
        for label, loader in loaders:
            cards_module.YAML_LOADER = loader
            s = timed(lambda: load_cards(project), rounds=30)
            print(f"load_cards_23_{label}_median: {statistics.median(s) * 1e3:.2f} ms")
            print(f"load_cards_23_{label}_p95: {p95(s) * 1e3:.2f} ms")
            s = timed(lambda ld=loader: naive_load(folder, ld), rounds=30)
            print(f"naive_split_and_load_20_{label}_median: {statistics.median(s) * 1e3:.2f} ms")

    team = TeamSnapshot(
        contract_path="contract.md",
        contract_size=100,
        children=tuple(
            ChildFact(f"w-{i}", NodeStatus.SETTLED if i % 4 else NodeStatus.FAILED, True, i == 0)
            for i in range(8)
        ),
    )
    s = timed(
        lambda: DEFAULT_MACHINE.check_transition(team, "implementing", "reviewing"),
        rounds=50,
        inner=200,
    )
    print(f"check_transition_refused_median: {statistics.median(s) * 1e6:.1f} us")
    s = timed(
        lambda: DEFAULT_MACHINE.check_transition(team, "planning", "implementing"),
        rounds=50,
        inner=200,
    )
    print(f"check_transition_allowed_median: {statistics.median(s) * 1e6:.1f} us")
    s = timed(lambda: DEFAULT_MACHINE.legal_next(team, "reviewing"), rounds=50, inner=200)
    print(f"legal_next_median: {statistics.median(s) * 1e6:.1f} us")
    bare = ("children_settled", "children_present", "children_none_failed")
    s = timed(lambda: [evaluate(c, team) for c in bare], rounds=50, inner=200)  # type: ignore[arg-type]
    print(f"bare_conditions_3_median: {statistics.median(s) * 1e6:.1f} us")


if __name__ == "__main__":
    with calibrated():
        main()
