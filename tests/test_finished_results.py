"""The finished-results cache (issue 11; upstream finished-cache-eviction-v1): at most
8 KB of text per entry and 1 MB in all, the oldest evicted first; a result handed out is
never rewritten; a cut text comes back whole from its output file; an evicted ending is
taken again from the ledger's row and the output file — never "no result"."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import STUCK, hosted, settled, spawn_one, until

from legion_tui.supervisor.hearing.results import (
    ENTRY_BYTES,
    TOTAL_BYTES,
    FinishedResults,
    Result,
    write_output,
)
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host


def result(tmp_path: Path, name: str, text: str, round_: int = 1) -> Result:
    out = tmp_path / f"{name}.output.md"
    write_output(out, text)
    return Result(name, name, f"root/{name}", round_, "settled", {"ok": True}, None, text, str(out))


def test_an_entry_holds_at_most_8_kb_and_reads_the_rest_back(tmp_path: Path) -> None:
    cache = FinishedResults()
    long = "é" * ENTRY_BYTES  # 2 bytes each: twice the bound
    handed = result(tmp_path, "w", long)
    cache.put(handed)
    assert cache.resident_bytes <= ENTRY_BYTES
    got = cache.get("w", 1)
    assert got is not None and got.text == long and got.text_complete
    assert handed.text == long  # the caller's object was never cut


def test_the_oldest_go_first_past_1_mb_and_the_file_still_has_them(tmp_path: Path) -> None:
    cache = FinishedResults()
    texts = {f"w{i}": f"{i}:" + "x" * (ENTRY_BYTES - 10) for i in range(200)}
    handed = [result(tmp_path, name, text) for name, text in texts.items()]
    for r in handed:
        cache.put(r)
    assert cache.resident_bytes <= TOTAL_BYTES
    assert cache.evicted == 200 - len(cache) > 0
    assert cache.get("w0", 1) is None  # the first in, the first out
    assert cache.get("w199", 1) is not None
    # Every result handed out earlier is untouched by the eviction.
    assert [r.text for r in handed] == list(texts.values())


def test_a_missing_output_file_gives_the_head_marked_cut(tmp_path: Path) -> None:
    cache = FinishedResults(entry_bytes=100)
    cache.put(result(tmp_path, "w", "y" * 500))
    (tmp_path / "w.output.md").unlink()
    got = cache.get("w", 1)
    assert got is not None and got.text == "y" * 100 and not got.text_complete
    assert got.reply()["text_truncated"] is True


async def test_collect_of_an_evicted_ending_is_the_same_result(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        lead_card = tmp_path / ".legion" / "agents" / "lead.md"
        lead_card.parent.mkdir(parents=True, exist_ok=True)
        lead_card.write_text(
            "---\nname: lead\ndescription: a lead\nkind: sim\nrole: worker\n"
            "maxSubagentDepth: 1\n---\nLead.\n",
            encoding="utf-8",
        )
        from legion_tui.agents.cards import load_cards

        sup.ctx.cards.cards = load_cards(tmp_path)
        lead = await spawn_one(sup, "lead", name="lead", sim=dict(STUCK))
        member = await spawn_one(sup, name="m", caller=lead.id)
        await settled(sup, member.id)
        await until(lambda: len(sup.results) >= 1, what="the member's result kept")
        # root: answered in full, claims nothing
        kept = await sup.queries.collect(ROOT_ID, "lead/m")
        sup.results.total_bytes = 0  # every entry is evicted at the next put
        sup.results.put(result(tmp_path, "other", "z"))
        assert sup.results.get(member.id, 1) is None
        again = await sup.queries.collect(ROOT_ID, "lead/m")
        assert again["text"] == kept["text"] and again["text"].strip()
        assert again["verdict"] == kept["verdict"] and again["status"] == "settled"
        assert again["output_file"] == kept["output_file"]
