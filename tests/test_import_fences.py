"""The one-way data flow, enforced (issue 8 item 4; ARCHITECTURE "Data flow"): each layer
imports only what is below it. A fresh interpreter imports one module and the test reads
`sys.modules` — a fence crossed by any import chain, however indirect, fails here."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from supervisor_helpers import cli_env, hosted

pytestmark = pytest.mark.host

# module → packages it must never pull in (by any chain of imports)
FENCES = {
    # The supervisor runs headless (`legion run`, the socket): no dashboard, no terminal UI.
    "legion_tui.supervisor.core": ("textual", "legion_tui.dashboard.app", "legion_tui.widgets"),
    # Session parsing is pure: no supervisor, no ledger, no UI.
    "legion_tui.session.reader": ("legion_tui.supervisor", "legion_tui.ledger", "textual"),
    "legion_tui.session.transcript": ("legion_tui.supervisor", "textual"),
    # The model the dashboard reads knows nothing of who writes it.
    "legion_tui.state": ("legion_tui.supervisor", "legion_tui.ledger", "textual"),
    # A control verb is a socket request: no UI, no numpy, no SQLite driver thread.
    "legion_tui.commands.agent": ("textual", "numpy", "aiosqlite", "legion_tui.widgets"),
    # The verbs' client: one blocking request needs no event loop (SPEC §8's verb budget).
    "legion_tui.wire.client": ("asyncio", "textual", "numpy", "aiosqlite", "psutil"),
    # The ledger is the only SQL, and speaks to nothing above it.
    "legion_tui.ledger": ("legion_tui.supervisor", "textual", "legion_tui.widgets"),
}


@pytest.mark.parametrize("module", sorted(FENCES))
def test_a_layer_imports_nothing_above_it(module: str) -> None:
    forbidden = FENCES[module]
    probe = (
        f"import sys, {module}\n"
        f"print('\\n'.join(m for m in sys.modules if m.split('.')[0] == 'legion_tui' "
        f"or '.' not in m))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    loaded = set(done.stdout.split())
    crossed = [f for f in forbidden if f in loaded or any(m.startswith(f + ".") for m in loaded)]
    assert crossed == [], f"{module} pulls in {crossed}"


# ----- the control verbs (SPEC §8: a verb's wall time ≤ 2.5× a bare interpreter's) ------
# Agents call the verbs in loops; most of a verb's time is its interpreter's start-up, so
# each runs here for real — its own process, against a real host — and reports every
# module it had loaded by its exit. None of these, by any chain of imports:
# `socket` (it builds four IntEnums at import) and `random` neither: a blocking request
# opens `_socket`'s own object, and its retries' jitter is a byte of `os.urandom`.
WIRE_ONLY = ("socket", "random")
RENDERED_FORBIDDEN = (
    "textual", "numpy", "aiosqlite", "psutil", "asyncio", "legion_tui.widgets", *WIRE_ONLY,
    # spawn's admission rules and the role cards are the supervisor's to apply
    "legion_tui.supervisor.life.admission", "legion_tui.agents",
)  # fmt: skip
# ... nor the model's records (`dataclasses`, and `inspect` with it: ~15 ms of a verb):
# a verb prints a document's fields; the closed sets (`--kind`'s choices) come without.
RECORDS = ("dataclasses", "legion_tui.model_records")
VERB_FORBIDDEN = (*RENDERED_FORBIDDEN, *RECORDS)
# `spawn --name` checks the name against the wire's NAME_PATTERN, which the supervisor's
# naming compiles too — not through `naming` (logging, `legion_tui.ops` and its dataclass).
SPAWN_FORBIDDEN = (
    *VERB_FORBIDDEN, "logging", "legion_tui.ops", "legion_tui.supervisor.state.naming",
)
# A user's shell finds the live run in ./.legion first (`supervisor.runs`, which looks at
# the host's pid in /proc): the UI, numpy, the ledger's driver, psutil and asyncio stay out,
# and so do the records (the run's pointer and a /proc stat are NamedTuples).
SHELL_FORBIDDEN = (
    "textual", "numpy", "aiosqlite", "psutil", "asyncio", "legion_tui.widgets", *WIRE_ONLY,
    *RECORDS,
)  # fmt: skip
# `legion mail` checks the text with the ledger's own rules first: the ledger package
# imports its parts on first use, so neither its writer nor aiosqlite comes along.
MAIL_FORBIDDEN = (
    "textual", "numpy", "aiosqlite", "psutil", "asyncio", "legion_tui.widgets", *WIRE_ONLY,
    "legion_tui.ledger.ledger", "legion_tui.ledger.writer", *RECORDS,
)  # fmt: skip

PROBE = """
import json, sys
from legion_tui.cli import main
try:
    code = main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as out:
        json.dump(sorted(sys.modules), out)
sys.exit(code)
"""


async def _verb_modules(
    argv: list[str], cwd: Path, env: dict[str, str], listing: Path
) -> tuple[int, str, set[str]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PROBE, str(listing), *argv, cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    modules = json.loads(await asyncio.to_thread(listing.read_text))
    return proc.returncode, out.decode(), set(modules)


def _crossed(loaded: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return [f for f in forbidden if f in loaded or any(m.startswith(f + ".") for m in loaded)]


async def test_the_control_verbs_import_only_what_a_socket_request_needs(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with hosted(project) as sup:
        agent_env = cli_env() | {"LEGION_SOCKET": str(sup.socket_path), "LEGION_NODE_ID": "root"}
        # (the host runs cards simulated; `--kind` reads the model's kinds, not its records)
        spawn = ["spawn", "worker", "--name", "c1", "--task", "t", "--kind", "sim"]
        mail = ["mail", "--to", "c1", "--subject", "s", "--body", "b"]
        verbs: list[tuple[list[str], dict[str, str], tuple[str, ...]]] = [
            (spawn, agent_env, SPAWN_FORBIDDEN),
            (["wait", "c1", "--timeout", "30"], agent_env, VERB_FORBIDDEN),
            (["collect", "c1"], agent_env, VERB_FORBIDDEN),
            (["status"], agent_env, VERB_FORBIDDEN),
            (["status", "c1", "--json"], agent_env, VERB_FORBIDDEN),
            (["tree"], agent_env, VERB_FORBIDDEN),
            (["tree", "--json"], agent_env, VERB_FORBIDDEN),
            (mail, agent_env, MAIL_FORBIDDEN),
            (["stop", "c1"], agent_env, VERB_FORBIDDEN),
            (["status"], cli_env(), SHELL_FORBIDDEN),
            (["tree"], cli_env(), SHELL_FORBIDDEN),
        ]
        for i, (argv, env, forbidden) in enumerate(verbs):
            listing = tmp_path / f"modules-{i}.json"
            code, out, loaded = await _verb_modules(argv, project, env, listing)
            # mail to a child that has settled is stored and bounces: exit 1 is its answer
            assert code == (1 if argv[0] == "mail" else 0), (argv, out)
            assert _crossed(loaded, forbidden) == [], f"legion {' '.join(argv)}: {out}"


def test_the_verbs_named_tuples_hold_real_types_not_strings() -> None:
    """A string annotation on a typing.NamedTuple becomes a ForwardRef, compiled at import;
    the process's first compile() alone is ~6 % of a verb's start. These modules are on
    the verbs' paths and so go without `from __future__ import annotations`."""
    from typing import ForwardRef

    from legion_tui.commands import Command
    from legion_tui.costs import Spend
    from legion_tui.procfs import ProcStat
    from legion_tui.runs.folder import RunInfo

    for record in (Command, Spend, ProcStat, RunInfo):
        strings = [
            f for f, t in record.__annotations__.items() if isinstance(t, str | ForwardRef)
        ]
        assert strings == [], f"{record.__name__}: {strings}"


def test_each_command_is_found_where_the_front_door_looks_for_it() -> None:
    """`legion VERB` imports only the module `cli.COMMAND_HOMES` names for VERB: the table
    and the modules' own COMMANDS must agree, or a command would vanish from its verb."""
    from legion_tui.cli import COMMAND_HOMES, COMMAND_MODULES

    found = {
        name: module
        for module in COMMAND_MODULES
        for name in importlib.import_module(module).COMMANDS
    }
    assert found == COMMAND_HOMES
    assert list(found) == list(COMMAND_HOMES)  # the help lists them in the table's order


def test_every_name_the_ledger_package_offers_resolves() -> None:
    """The ledger package imports its parts on first use: each name in `__all__` must
    still be found where the package says it lives."""
    import legion_tui.ledger as ledger

    for name in ledger.__all__:
        getattr(ledger, name)  # AttributeError: the name's home is missing or wrong


# ----- no import cycle between the agent contract and its backends (issue 8) -----------
ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ROOT / "legion_tui"


def _import_cycles(package: Path = PRODUCT / "supervisor") -> list[list[str]]:
    """`tools/import_cycles.py` over `package`: every import counts (top, function-level,
    TYPE_CHECKING)."""
    path = ROOT / "tools" / "import_cycles.py"
    spec = importlib.util.spec_from_file_location("import_cycles", path)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    found: list[list[str]] = tool.cycles(tool.import_graph(package))
    return found


def test_the_backends_import_the_agent_contract_and_it_imports_none_of_them() -> None:
    contract = "legion_tui.supervisor.backend"
    backends = "legion_tui.supervisor.backends"
    tangled = [
        cycle
        for cycle in _import_cycles()
        if any(m in (contract, backends) or m.startswith(backends + ".") for m in cycle)
    ]
    assert tangled == []


# ----- the folders say the architecture (issue 29) ---------------------------------------
MAX_MODULES_PER_FOLDER = 15


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports_of(path: Path) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name) of every `import`/`from … import` in the file, wherever it is
    (a function's body, `if TYPE_CHECKING:`); name is None for a plain `import`."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                yield node.lineno, node.module, alias.name


def _top_level_names(body: list[ast.stmt]) -> Iterator[str]:
    """What a module defines: its functions, classes and assigned names, also under a
    module-level `if`/`try` (not a function's locals)."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.If | ast.Try):
            yield from _top_level_names([*node.body, *node.orelse])
            for handler in getattr(node, "handlers", []):
                yield from _top_level_names(handler.body)


def test_no_import_cycle_anywhere_in_the_product() -> None:
    assert _import_cycles(PRODUCT) == []


def test_no_folder_holds_more_than_fifteen_modules() -> None:
    crowded = {
        str(folder.relative_to(ROOT)): count
        for folder in [PRODUCT, *(p for p in PRODUCT.rglob("*") if p.is_dir())]
        if (count := sum(1 for f in folder.glob("*.py") if f.name != "__init__.py"))
        > MAX_MODULES_PER_FOLDER
    }
    assert crowded == {}


@pytest.mark.parametrize("package", ["widgets", "sim"])
def test_the_widgets_and_the_simulated_agent_never_import_the_supervisor(package: str) -> None:
    """The widgets draw the model; the simulated agent talks to a host over the wire. Any
    import of the engine, even one inside a function, would tie them to it."""
    reaches = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted((PRODUCT / package).rglob("*.py"))
        for line, module, name in _imports_of(path)
        if f"{module}.{name}".startswith("legion_tui.supervisor")
    ]
    assert reaches == []


def test_every_name_is_imported_from_the_module_that_defines_it() -> None:
    """No module stands in for another's home: `from a import N` where `a` only imports N
    sends a reader to the wrong file. A package's `__init__` may offer its parts' names
    (the ledger's and the phases' public face), as Textual's does."""
    defined: dict[str, set[str]] = {}
    packages: set[str] = set()
    for path in PRODUCT.rglob("*.py"):
        module = _module_name(path)
        if path.name == "__init__.py":
            packages.add(module)
        defined[module] = set(_top_level_names(ast.parse(path.read_text()).body))
    stand_ins = [
        f"{path.relative_to(ROOT)}:{line}: {name} from {module}"
        for folder in ("legion_tui", "tests", "bench", "tools")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, module, name in _imports_of(path)
        if name is not None
        and module in defined
        and module not in packages
        and name not in defined[module]
        and f"{module}.{name}" not in defined  # a submodule
    ]
    assert stand_ins == []
