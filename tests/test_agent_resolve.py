"""`kind: auto` (issue 9): the bundled cards never fake work.

An `auto` launch runs the agent `[agent]` in `.legion/settings.toml` names, else the first
one installed; with none it is refused — a message naming how to install one or how to
ask for the simulation — and nothing is spawned. The simulated agent runs only when asked
for (`--kind sim`, `[agent] default = "sim"`, a simulated parent), and says so wherever it
shows. Every test sets PATH itself: what the machine happens to have installed decides
nothing here.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest
from app_helpers import canned_app, canned_model
from process_helpers import put_fake_pi_on_path
from supervisor_helpers import LEGION, cli_env, hosted, run_cli, settled, spawn_one, until

from legion_tui.agents.resolve import NoAgent, configured_command, resolve_launch, with_model
from legion_tui.ledger import read_snapshot
from legion_tui.model import NodeStatus
from legion_tui.model_records import Node
from legion_tui.runs.catalog import find_session_run
from legion_tui.settings import AgentSettings, parse_settings
from legion_tui.supervisor.hearing.status import render_status
from legion_tui.widgets.overlay.detail_text import header_line
from legion_tui.wire.names import ROOT_ID, OpError
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host

INSTALL = "npm install -g @mariozechner/pi-coding-agent"


def no_agent_path(tmp_path: Path) -> str:
    """A PATH with the system's tools and no agent at all."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return f"{empty}:/usr/bin:/bin"


def pi_path(tmp_path: Path) -> str:
    """The same PATH with the fake `pi` (tests/fake_pi.py speaks pi's RPC) first."""
    bin_dir = tmp_path / "pi-bin"
    put_fake_pi_on_path(bin_dir)
    return f"{bin_dir}:/usr/bin:/bin"


def write_settings(project: Path, text: str) -> None:
    path = project / ".legion" / "settings.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def run_legion(project: Path, path: str, *args: str) -> tuple[int, str, str]:
    """`legion ARGS` as a user's shell runs it, on the PATH given."""
    proc = await asyncio.create_subprocess_exec(
        LEGION,
        *args,
        cwd=project,
        env=cli_env() | {"PATH": path},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


# ----- no agent: refused, nothing spawned ----------------------------------------------


async def test_spawn_with_no_agent_is_refused_and_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", no_agent_path(tmp_path))
    async with hosted(tmp_path, default_kind=None) as sup:
        with pytest.raises(OpError) as refused:
            await spawn_one(sup, "worker", name="w")
        assert refused.value.code == "NO_AGENT"
        message = refused.value.message
        assert message.startswith(
            "no agent to run 'worker' (kind: auto): none is configured ([agent] in "
            ".legion/settings.toml) and none is installed (looked on PATH for: pi, claude, "
            "codex) — nothing spawned."
        )
        assert INSTALL in message and "--kind sim" in message
        assert '[agent] default = "sim"' in message
        # Nothing exists: no row but the host's, no launch, no session file.
        assert [n.id for n in await sup.ledger.get_nodes()] == [ROOT_ID]
        assert sup.launches == 0 and list(sup.model.nodes) == [ROOT_ID]
        assert not any(sup.run.sessions_dir.glob("*.jsonl"))


async def test_legion_spawn_from_a_shell_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", no_agent_path(tmp_path))
    async with hosted(tmp_path, default_kind=None) as sup:
        code, _out, err = await run_cli("spawn", "worker", "--task", "Add a README", cwd=tmp_path)
        assert code == 1
        assert err.startswith("legion spawn: no agent to run 'worker' (kind: auto)")
        assert INSTALL in err
        assert list(sup.model.nodes) == [ROOT_ID] and sup.launches == 0


async def test_legion_run_with_no_agent_leaves_nothing_behind(tmp_path: Path) -> None:
    """The new user's case: `legion run worker` in a fresh repository — refused, exit 1,
    and not even an empty run is left in `.legion/`."""
    code, out, err = await run_legion(
        tmp_path, no_agent_path(tmp_path), "run", "worker", "--task", "Add a hello world script"
    )
    assert code == 1 and out == ""
    assert err.startswith("legion run: no agent to run 'worker' (kind: auto)")
    assert INSTALL in err and "✓" not in err
    assert not (tmp_path / ".legion").exists()


async def test_legion_tui_refuses_a_new_session_with_no_agent(tmp_path: Path) -> None:
    code, _out, err = await run_legion(tmp_path, no_agent_path(tmp_path), "tui")
    assert code == 1
    assert err.startswith("legion tui: no agent to run the kind: auto role cards")
    assert INSTALL in err
    assert not (tmp_path / ".legion").exists()


async def test_a_configured_agent_that_is_not_installed_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_settings(tmp_path, '# mine\n[agent]\ndefault = "pi"\n')
    monkeypatch.setenv("PATH", no_agent_path(tmp_path))
    async with hosted(tmp_path, default_kind=None) as sup:
        with pytest.raises(OpError) as refused:
            await spawn_one(sup, "scout")
        assert refused.value.message.startswith(
            "no agent to run 'scout' (kind: auto): .legion/settings.toml:3 says [agent] "
            "default = \"pi\", but 'pi' is not installed (looked on PATH) — nothing spawned."
        )
        assert list(sup.model.nodes) == [ROOT_ID]


async def test_a_bad_agent_setting_refuses_with_its_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A typo in [agent] never falls back to some other agent (nor to the sim)."""
    write_settings(tmp_path, '[agent]\ndefault = "simm"\n')
    monkeypatch.setenv("PATH", pi_path(tmp_path))  # a real agent is there: still refused
    async with hosted(tmp_path, default_kind=None) as sup:
        with pytest.raises(OpError) as refused:
            await spawn_one(sup, "worker")
        message = refused.value.message
        assert ".legion/settings.toml has a problem" in message
        assert (
            "  .legion/settings.toml:2: setting 'agent.default': expected one of auto, sim, "
            "pi, claude, codex, exec, got 'simm'" in message
        )
        assert list(sup.model.nodes) == [ROOT_ID]


# ----- a real agent --------------------------------------------------------------------


async def test_default_pi_resolves_to_pi_and_the_node_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_settings(tmp_path, '[agent]\ndefault = "pi"\n')
    monkeypatch.setenv("PATH", pi_path(tmp_path))
    async with hosted(tmp_path, default_kind=None) as sup:
        node = await spawn_one(sup, "worker", name="w", task="Add a README")
        assert node.kind == "pi" and node.backend == "pi-rpc" and not node.simulated
        (row,) = [n for n in await sup.ledger.get_nodes() if n.id == node.id]
        assert row.kind == "pi"  # the ledger's kind column holds the resolved kind
        (entry,) = [e for e in sup.queries.status(ROOT_ID)["nodes"] if e["id"] == node.id]
        assert entry["kind"] == "pi" and entry["simulated"] is False
        assert "(worker, running" in render_status(sup.queries.status(ROOT_ID, "w"))
        assert "simulated" not in render_status(sup.queries.status(ROOT_ID, "w"))
        assert await sup.stops.stop(ROOT_ID, "w", force=True) == "Stopped w."


def test_with_nothing_configured_the_first_installed_agent_wins(tmp_path: Path) -> None:
    launch = resolve_launch(
        "auto", (), requested=None, agent=AgentSettings(), cwd=tmp_path, path=pi_path(tmp_path)
    )
    assert (launch.kind, launch.command, launch.via) == ("pi", (), "PATH")
    with pytest.raises(NoAgent):
        resolve_launch(
            "auto",
            (),
            requested=None,
            agent=AgentSettings(),
            cwd=tmp_path,
            path=no_agent_path(tmp_path),
        )


def test_agent_command_model_and_provider_reach_pi(tmp_path: Path) -> None:
    bin_dir = tmp_path / "opt"
    put_fake_pi_on_path(bin_dir)
    (bin_dir / "pi").rename(bin_dir / "my-pi")
    agent = AgentSettings(default="pi", command=("my-pi", "--thinking"), model="m1", provider="p1")
    launch = resolve_launch(
        "auto", (), requested=None, agent=agent, cwd=tmp_path, path=f"{bin_dir}:/usr/bin:/bin"
    )
    # The configured program is the one looked for (and found), flags appended.
    assert launch.kind == "pi" and launch.via == "settings"
    assert launch.command == ("my-pi", "--thinking", "--provider", "p1", "--model", "m1")
    # Only model/provider: pi's own program, with the flags.
    assert configured_command(AgentSettings(model="m1"), "pi", default=True) == (
        "pi", "--model", "m1"
    )
    # A command belongs to the kind it was written for.
    agent = AgentSettings(default="exec", command=("x",))
    assert configured_command(agent, "pi", default=False) == ()


def test_each_kind_its_own_settings_and_the_older_form_for_the_default_kind_only(
    tmp_path: Path,
) -> None:
    text = (
        '[agent]\ndefault = "pi"\nprovider = "pi-provider"\nmodel = "pi-model"\n'
        '[agent.codex]\nmodel = "gpt-x"\nargs = ["--search"]\nenv = { CODEX_X = "1" }\n'
        '[agent.claude]\ncommand = ["/opt/claude"]\n'
    )
    settings, problems = parse_settings(text, ".legion/settings.toml")
    assert problems == []
    agent = settings.agent
    # An auto card run as `--kind codex`: Codex's own table, never pi's provider.
    launch = resolve_launch(
        "auto", (), requested="codex", agent=agent, cwd=tmp_path, path="/nowhere"
    )
    assert (launch.kind, launch.via) == ("codex", "--kind")
    assert launch.command == ("codex", "-c", 'model="gpt-x"', "--search")
    assert dict(launch.env) == {"CODEX_X": "1"}
    launch = resolve_launch(
        "auto", (), requested="claude", agent=agent, cwd=tmp_path, path="/nowhere"
    )
    assert launch.command == ("/opt/claude",) and dict(launch.env) == {}
    # The default kind keeps the older [agent] model/provider.
    assert configured_command(agent, "pi", default=True) == (
        "pi", "--provider", "pi-provider", "--model", "pi-model"
    )
    # A card that names its kind decides alone.
    launch = resolve_launch(
        "codex", ("my-codex",), requested=None, agent=agent, cwd=tmp_path, path="/nowhere"
    )
    assert launch.command == ("my-codex",) and dict(launch.env) == {}


def test_a_kind_table_is_a_closed_validated_set() -> None:
    bad = (
        "[agent.codex]\n"  # 1
        'command = "codex"\n'  # 2
        "args = [1]\n"  # 3
        'env = { "A=B" = "x" }\n'  # 4
        'colour = "red"\n'  # 5
        "[agent.docker]\n"  # 6
        'model = "m"\n'  # 7
    )
    settings, problems = parse_settings(bad, ".legion/settings.toml")
    assert [(p.line, p.key) for p in problems] == [
        (2, "agent.codex.command"),
        (3, "agent.codex.args"),
        (4, "agent.codex.env"),
        (5, "agent.codex.colour"),
        (6, "agent.docker"),
    ]
    assert "[agent.pi], [agent.claude], [agent.codex], [agent.exec]" in problems[-1].hint
    # A broken [agent.codex] refuses an auto card run as codex, and only that.
    with pytest.raises(NoAgent, match=r"agent\.codex\.args"):
        resolve_launch(
            "auto", (), requested="codex", agent=settings.agent, problems=problems,
            cwd=Path("."), path="/nowhere",
        )


def test_an_explicit_kind_overrides_the_card(tmp_path: Path) -> None:
    launch = resolve_launch(
        "auto", (), requested="pi", agent=AgentSettings(), cwd=tmp_path, path="/nowhere"
    )
    assert (launch.kind, launch.via) == ("pi", "--kind")
    launch = resolve_launch(
        "pi", ("my-pi",), requested="sim", agent=AgentSettings(), cwd=tmp_path, path="/nowhere"
    )
    assert (launch.kind, launch.via) == ("sim", "--kind")


async def test_resume_relaunches_with_what_agent_gives_its_kind_now(tmp_path: Path) -> None:
    write_settings(
        tmp_path, '[agent]\ndefault = "pi"\ncommand = ["/opt/pi/bin/pi"]\nmodel = "m2"\n'
    )
    async with hosted(tmp_path) as sup:
        cards = sup.ctx.cards
        cards.reload()
        node = Node(id="n-1", run_id="r", parent_id=ROOT_ID, name="w", path="root/w",
                    role="worker", kind="pi", backend="process", status=NodeStatus.RETIRED,
                    pid=None, task="t", created_at=0.0, updated_at=0.0)  # fmt: skip
        # Launched before commands were recorded: what [agent] gives its kind now.
        assert cards.command_of(node) == ["/opt/pi/bin/pi", "--model", "m2"]
        assert cards.command_of(replace(node, kind="sim")) == []
        # Recorded: its own launch's command, whatever the settings say since.
        cards.launched_with[node.id] = ["pi", "--model", "m1"]
        assert cards.command_of(node) == ["pi", "--model", "m1"]


# ----- the simulation, asked for explicitly, labelled everywhere ------------------------


async def test_kind_sim_runs_the_simulation_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", no_agent_path(tmp_path))
    async with hosted(tmp_path, default_kind=None) as sup:
        node = await spawn_one(sup, "worker", name="w", kind="sim")
        done = await settled(sup, node.id)
        assert done.kind == "sim" and done.simulated and done.status is NodeStatus.SETTLED
        doc = sup.queries.status(ROOT_ID)
        (entry,) = [e for e in doc["nodes"] if e["id"] == node.id]
        assert entry["simulated"] is True and entry["kind"] == "sim"
        root = next(e for e in doc["nodes"] if e["id"] == ROOT_ID)
        assert root["simulated"] is False  # the host is no simulated agent
        text = render_status(doc)
        assert "root/w (worker, simulated, settled)" in text
        assert "settled · verdict ✓ (simulated) " in text
        assert "○ w (worker, sim) — settled" in sup.queries.tree_text(ROOT_ID)


async def test_legion_spawn_kind_sim_says_simulated(tmp_path: Path) -> None:
    async with hosted(tmp_path, default_kind=None) as sup:
        code, out, err = await run_cli(
            "spawn", "worker", "--task", "x", "--name", "w", "--kind", "sim", cwd=tmp_path
        )
        assert code == 0, err
        assert out.startswith("Spawned root/w (") and out.rstrip().endswith(") — simulated")
        code, out, _err = await run_cli("status", "--json", cwd=tmp_path)
        (entry,) = [e for e in json.loads(out)["nodes"] if e["name"] == "w"]
        assert entry["simulated"] is True
        await settled(sup, entry["id"])


async def test_the_team_of_a_simulated_lead_is_simulated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sim centurion spawns `worker`/`scout` (kind auto) through the socket: with no
    agent installed they still run — simulated, as their lead is, never a real agent on
    a pretend plan."""
    monkeypatch.setenv("PATH", pi_path(tmp_path))  # even with pi there
    async with hosted(tmp_path, default_kind=None) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", kind="sim")
        await until(lambda: len(sup.model.children(lead.id)) >= 2, 30, "the team")
        team = [sup.names.node(c) for c in sup.model.children(lead.id)]
        assert all(n.kind == "sim" and n.simulated for n in team)
        await settled(sup, lead.id, 60)


async def test_the_demo_runs_simulated_whatever_agent_is_configured(tmp_path: Path) -> None:
    write_settings(tmp_path, '[agent]\ndefault = "pi"\n')  # and pi is not installed
    code, out, err = await run_legion(
        tmp_path, no_agent_path(tmp_path),
        "demo", "--headless", "--json", "--nodes", "8", "--duration", "2", "--speed", "20",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    info = find_session_run(tmp_path, report["session"])
    assert info is not None
    nodes, _usage = read_snapshot(info.ledger_path)
    members = [n for n in nodes if n.id != ROOT_ID]
    assert len(members) > 3 and all(n.kind == "sim" for n in members)


def test_the_detail_header_labels_the_simulation() -> None:
    model = canned_model()
    lead = model.nodes["n1"]  # lead-api, simulated
    real = next(v for v in model.nodes.values() if v.node.kind == "pi")
    # The kind reads `simulated`, and no pretend cost is shown as money spent.
    assert header_line(lead).startswith("lead-api · centurion · simulated · running · ")
    assert "$" not in header_line(lead)
    assert header_line(real).startswith(f"{real.node.name} · {real.node.role} · pi · ")
    assert "$" in header_line(real)


async def test_the_row_marks_simulated_agents_only() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        rows = {
            app.railway.rows[i].node_id: app.railway.render_line(i).text
            for i in range(len(app.railway.rows))
        }
        nodes = app.model.nodes
        for node_id, text in rows.items():
            node = nodes[node_id].node
            assert (f"{node.name} sim " in text) == node.simulated, text
        assert any(nodes[n].node.kind == "pi" for n in rows)  # the canned legion mixes them


async def test_a_narrow_row_keeps_the_marker_and_cuts_the_name() -> None:
    model = canned_model()
    long = replace(model.nodes["n1"].node, name="lead-with-a-rather-long-name")
    model.upsert(long)
    app = canned_app(model)
    async with app.run_test(size=(46, 30)) as pilot:
        await pilot.pause()
        index = next(i for i, r in enumerate(app.railway.rows) if r.node_id == long.id)
        text = app.railway.render_line(index).text
        assert "… sim " in text and len(text) == app.railway.size.width


def test_agent_settings_are_a_closed_validated_set() -> None:
    text = (
        '[agent]\ndefault = "pi"\ncommand = ["pi", "--thinking", "high"]\n'
        'model = "claude-sonnet-4-5"\nprovider = "anthropic"\n'
    )
    settings, problems = parse_settings(text, ".legion/settings.toml")
    assert problems == []
    assert settings.agent == AgentSettings(
        default="pi",
        command=("pi", "--thinking", "high"),
        model="claude-sonnet-4-5",
        provider="anthropic",
        line=2,
    )
    bad = (
        "[agent]\n"
        'default = "docker"\n'  # 2
        "command = []\n"  # 3
        "model = 7\n"  # 4
        'colour = "red"\n'  # 5
    )
    _settings, problems = parse_settings(bad, ".legion/settings.toml")
    assert [str(p) for p in problems] == [
        ".legion/settings.toml:2: setting 'agent.default': expected one of auto, sim, pi, "
        "claude, codex, exec, got 'docker'",
        ".legion/settings.toml:3: setting 'agent.command': expected a list of strings (argv), "
        "got []",
        ".legion/settings.toml:4: setting 'agent.model': expected a non-empty string, got 7",
        ".legion/settings.toml:5: setting 'agent.colour': unknown key",
    ]
    _settings, problems = parse_settings(
        '[agent]\ncommand = ["my-agent", "{prompt}"]\n', ".legion/settings.toml"
    )
    assert [str(p) for p in problems] == [
        ".legion/settings.toml:2: setting 'agent.command': unknown placeholder {prompt}"
    ]
    _settings, problems = parse_settings('[agent]\ncommand = ["x"]\n', ".legion/settings.toml")
    assert [str(p) for p in problems] == [
        ".legion/settings.toml:2: setting 'agent.command': a command needs default = "
        '"pi" or "claude" or "codex" or "exec"'
    ]
    _settings, problems = parse_settings('[agent]\ndefault = "exec"\n', ".legion/settings.toml")
    assert [str(p) for p in problems] == [
        ".legion/settings.toml:2: setting 'agent.default': default = \"exec\" needs a "
        "command = [...] to run"
    ]
    _settings, problems = parse_settings('agent = "pi"\n', ".legion/settings.toml")
    assert [str(p) for p in problems] == [
        ".legion/settings.toml:1: setting 'agent': expected a table: [agent]"
    ]


def test_an_auto_card_takes_no_command(tmp_path: Path) -> None:
    from legion_tui.agents.cards import load_cards

    card = tmp_path / ".legion" / "agents" / "worker.md"
    card.parent.mkdir(parents=True)
    card.write_text("---\nname: worker\ndescription: d\nkind: auto\ncommand: [aider]\n---\n")
    cards = load_cards(tmp_path)
    assert [str(p) for p in cards.problems] == [
        ".legion/agents/worker.md:5: field 'command': a kind auto card runs the configured "
        "agent and takes no command"
    ]
    assert "worker" not in cards  # refused, never the bundled one in its place


def test_idle_release_is_a_number_of_seconds() -> None:
    settings, problems = parse_settings("[agent]\nidle_release_seconds = 0\n", "s.toml")
    assert problems == [] and settings.agent.idle_release_seconds == 0.0
    assert parse_settings("", "s.toml")[0].agent.idle_release_seconds == 120.0
    _settings, problems = parse_settings('[agent]\nidle_release_seconds = "2m"\n', "s.toml")
    assert [str(p) for p in problems] == [
        "s.toml:2: setting 'agent.idle_release_seconds': expected a number of seconds ≥ 0 "
        "(0: never), got '2m'"
    ]


@pytest.mark.parametrize(
    ("kind", "command", "argv"),
    [
        ("pi", (), ("pi", "--model", "m2")),
        ("pi", ("pi", "--provider", "p", "--model", "m1", "--thinking", "low"),
         ("pi", "--provider", "p", "--thinking", "low", "--model", "m2")),
        ("claude", ("claude", "--model=m1"), ("claude", "--model", "m2")),
        ("codex", ("codex", "-c", 'model="m1"', "-c", 'model_provider="p"'),
         ("codex", "-c", 'model_provider="p"', "-c", 'model="m2"')),
    ],
)  # fmt: skip
def test_a_fanout_attempt_runs_its_own_model_in_place_of_the_configured_one(
    kind: str, command: tuple[str, ...], argv: tuple[str, ...]
) -> None:
    assert with_model(kind, command, "m2") == argv  # type: ignore[arg-type]


async def test_a_model_for_an_agent_that_has_none_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        with pytest.raises(OpError) as refused:
            await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", "t", model="m")])
        assert refused.value.code == "BAD_REQUEST"
        assert "'worker' runs as sim; nothing was spawned" in refused.value.message
        assert list(sup.model.nodes) == [ROOT_ID]
