"""Legion's figures are the agent's own and the model server's, per agent kind: the
closing note's table, kind × figure (output tokens, tok/s, $) → legion's, the agent's
own, the server's.

One turn per kind — pi 1.6, Claude Code, Codex — streams `TOKENS` output tokens at
`RATE` tok/s, then a verdict line, in an in-process host. Once it settles, three
readings of that turn:

- legion's: the status document's row (`tokens_out`; `tok_s`, the decode avg;
  `cost_usd` and its `cost_basis`);
- the agent's own: what it wrote in its own session file (pi: the assistant message's
  `usage`, its cost too; Claude Code: its assistant line's `usage`, and the `cost-state`
  total it writes when its process exits; Codex: its `token_count` event — it writes no
  cost), and `legion inspect --json` on that file;
- the server's: the tokens it streamed, and its pacing.

Output tokens are one figure across the three; the decode avg is inspect's (the same
file). The cost is the agent's own where it gives one (pi, priced by a models.json that
does not say 0; Claude Code, for a model it prices), else the price table's figure for
the file's tokens, computed here from genai-prices and labelled estimated (Codex). The
decode avg against the server's pacing is bounded loosely (the agent's own time around
the stream is in its span); how close it comes is printed. Each test prints its row of
the table (`pytest -s`).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from claude_env import claude_env, claude_world, drop_claude_settings
from codex_env import codex_config, codex_env
from genai_prices import Usage, calc_price
from model_server import ModelServer, RecordedRequest, Text
from pi_env import MODEL, models_json
from real_pi_helpers import (
    agent_host,
    entries,
    make_world,
    pi_host,
    pi_session_files,
    settle,
    use_env,
    verdict_line,
    write_card,
)
from supervisor_helpers import GIT_ENV, run_cli
from test_real_claude_legion import PRICED_MODEL, cost_states
from test_real_codex_legion import CODEX_TOOLS

from legion_tui.model import NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.real

# 4 s of stream: an agent's own time around it (~50 ms; a soak run saw pi's at 171 ms)
# stays a small share of the generation span its file gives.
TOKENS, RATE = 400, 100.0
TASK = "Talk for a while, then give a verdict."
# pi prices each call from its models.json ($ per million tokens): not 0 here, so pi
# writes a cost of its own.
PI_PRICE = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}
# A name the price table knows; Codex sends any name to its custom provider.
CODEX_MODEL = "gpt-4.1"


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(model_ids=(MODEL, CODEX_MODEL)) as s:
        yield s
        assert s.errors() == []


def streamed() -> Text:
    body = "".join(f"w{i} " for i in range(TOKENS))
    return Text(f"{body}\n{verdict_line('streamed')}", tokens=TOKENS, tokens_per_second=RATE)


def git_project(tmp_path: Path, env: Mapping[str, str], **card: Any) -> Path:
    """A git project holding the worker card (`write_card`'s arguments)."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True,
                   env={**env, **GIT_ENV})  # fmt: skip
    write_card(project, **card)
    return project


async def spawn(sup: Supervisor, kind: str) -> str:
    (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", TASK, name="talker")])
    assert node.kind == kind and node.status is not NodeStatus.FAILED, node
    return node.id


async def settled_turn(sup: Supervisor, node_id: str, server: ModelServer) -> RecordedRequest:
    """The node settled ok, on the one request, which the server streamed to its end."""
    done = await settle(sup, node_id)
    assert done.status is NodeStatus.SETTLED, (done.status, done.error)
    assert done.verdict is not None and json.loads(done.verdict)["reason"] == "streamed"
    (request,) = await asyncio.to_thread(server.wait_for_finished, 1, timeout=5)
    assert request.state == "completed" and server.unscripted() == []
    return request


def legion_row(sup: Supervisor) -> dict[str, Any]:
    (row,) = sup.queries.status(ROOT_ID, "talker")["nodes"]
    return dict(row)


async def inspect(project: Path, path: Path) -> dict[str, Any]:
    """`legion inspect --json` on the agent's file (a subprocess, the test's env)."""
    code, out, err = await run_cli("inspect", "--json", str(path), cwd=project, limit=30)
    assert code == 0, err
    return dict(json.loads(out))


def own_file(sup: Supervisor, node_id: str) -> Path:
    """The agent's own file, where the node's session link points."""
    return Path(os.path.realpath(sup.names.node(node_id).session_file or ""))


@dataclass
class Figures:
    """One kind's three readings of the turn, and its row of the table."""

    kind: str
    row: dict[str, Any]  # legion's: the status document's entry
    report: dict[str, Any]  # `legion inspect --json` on the agent's file
    agent_tokens: int  # the agent's own output tokens (its file)
    agent_cost: float | None  # the agent's own cost; None: it gives none
    table_cost: float | None  # those tokens at the price (models.json's, genai-prices')
    request: RecordedRequest  # the server's

    @property
    def served_rate(self) -> float:
        """Tokens over the time the server held the request open (its pacing, measured)."""
        assert self.request.finished_at is not None
        return self.request.output_tokens / (self.request.finished_at - self.request.received_at)

    def markdown(self) -> str:
        """`| kind | output tokens: legion / agent / server | decode tok/s: legion /
        inspect / server pacing | $: legion (basis) / agent's own / table |`"""
        row = self.row
        basis = {"estimated": "est."}.get(row["cost_basis"], row["cost_basis"])
        ours = "$?" if row["cost_basis"] == "unknown" else f"${row['cost_usd']:.6f}"
        own = "—" if self.agent_cost is None else f"${self.agent_cost:.6f}"
        table = "—" if self.table_cost is None else f"${self.table_cost:.6f}"
        return (
            f"| {self.kind} "
            f"| {row['tokens_out']} / {self.agent_tokens} / {self.request.output_tokens} "
            f"| {row['tok_s']:g} / {self.report['tok_s']:.2f} / {RATE:g} "
            f"({self.served_rate:.1f} served) "
            f"| {ours} ({basis}) / {own} / {table} |"
        )

    def check(self) -> str:
        """What every kind owes: its output tokens one figure for legion, the agent and
        the server; the decode avg inspect's (the same file: the row rounds it to 0.1);
        the row's cost inspect's; no cost shown as $0. Returns the printed row."""
        figures = self.markdown()
        request = self.request
        assert request.finished_at is not None
        served_ms = (request.finished_at - request.received_at) * 1000
        print(f"\n{figures}\n{self.kind}: the file's generation span "
              f"{self.report['generation_ms']:.0f} ms; the server held the stream "
              f"{served_ms:.0f} ms")
        row, report = self.row, self.report
        assert self.request.output_tokens == TOKENS, figures
        assert row["tokens_out"] == self.agent_tokens == report["tokens"]["output"] == TOKENS, (
            figures
        )
        assert report["tok_s"] == pytest.approx(TOKENS / (report["generation_ms"] / 1000))
        assert row["tok_s"] == round(report["tok_s"], 1), figures
        assert (row["cost_usd"], row["cost_basis"]) == (report["cost"], report["cost_basis"]), (
            figures, report,
        )  # fmt: skip
        assert row["cost_usd"] > 0 or row["cost_basis"] == "unknown", figures
        # The file's span is the agent's own: pi's and Codex's hold the server's whole
        # stream and their own time around it (+60-90 ms, which a loaded machine
        # stretches: no bound above is a fact); Claude stamps its request when it gets to
        # it, inside the stream (a soak run: 546 ms late). An order, then, not a duration;
        # how near the server's pacing the figure is, is printed above.
        if self.kind != "Claude Code":
            assert report["generation_ms"] >= served_ms - 2, figures
        return figures


# ----- pi 1.6: the cost is pi's own, priced by its models.json ----------------------------
async def test_pi_figures_are_pis_own_and_the_servers(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world("1.6", server, tmp_path, monkeypatch)
    config: Any = models_json(server.base_url)
    for provider in config["providers"].values():
        for model in provider["models"]:
            model["cost"] = dict(PI_PRICE)
    (world.pi.agent_dir / "models.json").write_text(json.dumps(config, indent=2) + "\n")
    server.script(streamed())
    async with pi_host(world) as sup:
        node_id = await spawn(sup, "pi")
        request = await settled_turn(sup, node_id, server)
        row = legion_row(sup)
        (pi_file,) = pi_session_files(sup, node_id)
        assert own_file(sup, node_id) == pi_file.resolve()
        report = await inspect(world.project, pi_file)
    (message,) = [e["message"] for e in entries(pi_file)
                  if e.get("type") == "message" and e["message"].get("role") == "assistant"]
    usage = message["usage"]
    own = usage["cost"]["total"]
    table = sum(usage[k] * PI_PRICE[k] for k in PI_PRICE) / 1e6
    figures = Figures("pi 1.6", row, report, usage["output"], own, table, request).check()
    assert own > 0 and own == pytest.approx(table, rel=1e-9), (usage, table)
    assert (row["cost_usd"], row["cost_basis"]) == (own, "reported"), figures


# ----- Claude Code: the cost is its own total -----------------------------------------------
async def test_claude_figures_are_claudes_own_and_the_servers(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = claude_world(tmp_path)
    env = claude_env(claude, server.origin)
    drop_claude_settings(monkeypatch)
    use_env(env, monkeypatch)  # the Supervisor's children inherit os.environ
    project = git_project(tmp_path, env, tools=("bash",), kind="claude",
                          command=("claude", "--model", PRICED_MODEL))  # fmt: skip
    server.script(streamed())
    async with agent_host(project) as sup:
        node_id = await spawn(sup, "claude")
        request = await settled_turn(sup, node_id, server)
        live = legion_row(sup)  # its cost: the turn's `result.total_cost_usd`, as it came
        path = own_file(sup, node_id)
        # Claude writes its own total in its file when its process exits.
        assert "talker" in await sup.stops.stop(ROOT_ID, "talker")
        (own,) = cost_states(path)
        row = legion_row(sup)
        report = await inspect(project, path)
    lines = [e["message"] for e in entries(path) if e.get("type") == "assistant"]
    calls = {m["id"]: m["usage"] for m in lines}  # a call's lines repeat its usage
    (usage,) = calls.values()
    table = float(calc_price(
        Usage(input_tokens=usage["input_tokens"] + usage["cache_read_input_tokens"]
              + usage["cache_creation_input_tokens"],
              cache_read_tokens=usage["cache_read_input_tokens"],
              cache_write_tokens=usage["cache_creation_input_tokens"],
              output_tokens=usage["output_tokens"]),
        model_ref=PRICED_MODEL, provider_id="anthropic",
    ).total_price)  # fmt: skip
    figures = Figures("Claude Code", live, report, usage["output_tokens"], own, table,
                      request).check()  # fmt: skip
    # Live and after its exit, the node's cost is Claude's own total: the one it wrote.
    assert (live["cost_usd"], live["cost_basis"]) == (own, "reported"), figures
    assert (row["cost_usd"], row["cost_basis"]) == (own, "reported"), (figures, row)
    assert (row["tokens_out"], row["tok_s"]) == (live["tokens_out"], live["tok_s"]), row


# ----- Codex: no cost of its own; the price table's, labelled an estimate ---------------------
async def test_codex_figures_are_the_servers_and_the_price_tables(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex = codex_env(server.base_url, tmp_path / "codex")
    (codex.codex_home / "config.toml").write_text(codex_config(server.base_url,
                                                               model=CODEX_MODEL))  # fmt: skip
    use_env(codex.env, monkeypatch)
    project = git_project(tmp_path, codex.env, kind="codex", command=None, tools=CODEX_TOOLS)
    server.script(streamed())
    async with agent_host(project) as sup:
        node_id = await spawn(sup, "codex")
        request = await settled_turn(sup, node_id, server)
        row = legion_row(sup)
        path = own_file(sup, node_id)
        report = await inspect(project, path)
    assert request.model == CODEX_MODEL
    (usage,) = [e["payload"]["info"]["last_token_usage"] for e in entries(path)
                if e["type"] == "event_msg" and e["payload"].get("type") == "token_count"
                and e["payload"].get("info")]  # fmt: skip
    table = float(calc_price(
        Usage(input_tokens=usage["input_tokens"], cache_read_tokens=usage["cached_input_tokens"],
              output_tokens=usage["output_tokens"]),
        model_ref=CODEX_MODEL,
    ).total_price)  # fmt: skip
    figures = Figures("Codex", row, report, usage["output_tokens"], None, table, request).check()
    assert row["cost_basis"] == "estimated", figures
    assert row["cost_usd"] == pytest.approx(table, rel=1e-9), figures
