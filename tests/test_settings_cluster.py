"""`[cluster]` in `.legion/settings.toml` (issue 15): defaults, values, every problem with
file:line and the default kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from legion_tui.settings import ClusterSettings, load_settings

pytestmark = pytest.mark.unit


def _load(tmp_path: Path, text: str) -> tuple[ClusterSettings, list[str]]:
    (tmp_path / ".legion").mkdir(exist_ok=True)
    (tmp_path / ".legion" / "settings.toml").write_text(text)
    result = load_settings(tmp_path)
    return result.settings.cluster, [f"{p.where}: {p.what}" for p in result.problems]


def test_without_a_cluster_table_agents_run_here(tmp_path: Path) -> None:
    cluster, problems = _load(tmp_path, 'theme = "dark"\n')
    assert problems == [] and cluster == ClusterSettings() and cluster.engine == "local"


def test_a_ray_cluster_with_its_resources(tmp_path: Path) -> None:
    cluster, problems = _load(
        tmp_path,
        '[cluster]\nengine = "ray"\naddress = "ray://head:10001"\nnumCpus = 0.5\n'
        "resources = { gpu_box = 1 }\n",
    )
    assert problems == []
    assert (cluster.engine, cluster.address, cluster.num_cpus) == ("ray", "ray://head:10001", 0.5)
    assert dict(cluster.resources) == {"gpu_box": 1.0}


def test_every_bad_cluster_value_is_named_where_it_is_and_keeps_its_default(
    tmp_path: Path,
) -> None:
    cluster, problems = _load(
        tmp_path,
        '[cluster]\nengine = "k8s"\naddress = ""\nnumCpus = 0\nresources = { a = -1 }\n'
        "nodes = 3\n",
    )
    assert problems == [
        ".legion/settings.toml:2: setting 'cluster.engine': expected one of local, ray, got 'k8s'",
        ".legion/settings.toml:3: setting 'cluster.address': expected an address (auto, "
        "ray://host:port), got ''",
        ".legion/settings.toml:4: setting 'cluster.numCpus': expected a number of CPUs > 0, got 0",
        ".legion/settings.toml:5: setting 'cluster.resources': expected a table of name = "
        "amount > 0, got {'a': -1}",
        ".legion/settings.toml:6: setting 'cluster.nodes': unknown key",
    ]
    assert cluster == ClusterSettings()  # nothing half-applied: agents still run here
    _, problems = _load(tmp_path, 'cluster = "ray"\n')
    assert problems == [".legion/settings.toml:1: setting 'cluster': expected a table: [cluster]"]
