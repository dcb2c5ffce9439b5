"""A role card's `resources:` (issue 15): what an agent's Ray actor asks of a node — read
as Ray's names at card load, refused there with the card, the key and what is accepted
(SPEC §10: file:line, field; nothing spawned), and turned into the actor's options."""

from __future__ import annotations

from pathlib import Path

import pytest

from legion_tui.agents.cards import CardError, load_cards, parse_card
from legion_tui.settings import ClusterSettings
from legion_tui.supervisor.backends.ray.cluster import actor_options

pytestmark = pytest.mark.unit

PATH = ".legion/agents/builder.md"


def _card(resources: str) -> str:
    return (
        "---\nname: builder\ndescription: Builds.\nkind: sim\n"
        f"resources: {resources}\n---\nBuild it.\n"
    )


def test_resources_are_read_as_rays_names() -> None:
    card, _, problems = parse_card(_card("{num_cpus: 2, GPU: 0, gpu-box: 1, half: 0.5}"), PATH)
    assert problems == [] and card is not None
    assert dict(card.resources or {}) == {"CPU": 2.0, "GPU": 0.0, "gpu-box": 1.0, "half": 0.5}


@pytest.mark.parametrize("amount", ["0.0003", "2.0001", "0.0006", "0.1234", "7"])
def test_every_whole_step_of_a_ten_thousandth_is_taken(amount: str) -> None:
    """In floats 0.0003 × 10 000 is 2.9999999999999996: an exact test refused 1 149 of the
    10 000 valid amounts in (0, 1] (found in review)."""
    card, _, problems = parse_card(_card(f"{{num_cpus: {amount}}}"), PATH)
    assert problems == [] and card is not None
    assert dict(card.resources or {}) == {"CPU": float(amount)}


def test_a_card_without_resources_leaves_them_to_the_settings() -> None:
    card, _, _ = parse_card("---\nname: w\ndescription: W.\nkind: sim\n---\nW.\n", PATH)
    assert card is not None and card.resources is None


@pytest.mark.parametrize(
    ("resources", "says"),
    [
        ("2", "field 'resources': expected a mapping of name: amount, got 2"),
        ("[CPU, 2]", "expected a mapping of name: amount, got ['CPU', 2]"),
        ("{num_cpus: two}", "'num_cpus': expected an amount ≥ 0, got 'two'"),
        ("{GPU: -1}", "'GPU': expected an amount ≥ 0, got -1"),
        ("{box: true}", "'box': expected an amount ≥ 0, got True"),
        ("{box: .nan}", "'box': expected an amount ≥ 0, got nan"),
        ("{box: 0.00001}", "'box': Ray counts in steps of 0.0001, got 1e-05"),
        ("{GPU: 1.5}", "'GPU': more than one GPU is a whole number, got 1.5"),
        ("{num_cpus: 1, CPU: 2}", "'CPU': CPU is asked for twice"),
        ("{memory: 1000}", "'memory' is not a resource amount a card can ask for"),
        ("{1: 2}", "expected a resource name, got 1"),
    ],
)
def test_a_bad_resources_value_is_refused_at_card_load_naming_card_key_and_what_is_accepted(
    resources: str, says: str
) -> None:
    card, _, problems = parse_card(_card(resources), PATH)
    assert card is None
    (problem,) = problems
    assert str(problem).startswith(f"{PATH}:5: field 'resources': ")
    assert says in str(problem)
    assert "num_cpus (or CPU), num_gpus (or GPU), or a custom resource" in problem.hint


def test_a_card_with_bad_resources_is_not_loaded_so_nothing_spawns(tmp_path: Path) -> None:
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "builder.md").write_text(_card("{num_cpus: lots}"))
    with pytest.raises(CardError) as caught:
        load_cards(tmp_path).get("builder")
    assert "resources" in str(caught.value.problems[0])


def test_the_cards_resources_are_the_actors_options_else_the_settings() -> None:
    cluster = ClusterSettings(engine="ray", num_cpus=1.0, resources={"site-a": 1.0})
    assert actor_options(cluster, None) == {
        "scheduling_strategy": "SPREAD", "num_cpus": 1.0, "resources": {"site-a": 1.0}}
    card = {"CPU": 2.0, "GPU": 0.0, "gpu-box": 1.0}
    assert actor_options(cluster, card) == {
        "scheduling_strategy": "SPREAD", "num_cpus": 2.0, "num_gpus": 0.0,
        "resources": {"gpu-box": 1.0}}  # fmt: skip
    # A card that names only a custom resource keeps the settings' CPUs.
    assert actor_options(cluster, {"gpu-box": 1.0})["num_cpus"] == 1.0
