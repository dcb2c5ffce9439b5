"""`legion-verify` blocks in contract.md: parsing only."""

from __future__ import annotations

import pytest

from legion_tui.phases import extract_verify_commands

pytestmark = pytest.mark.unit

CONTRACT = """\
# Contract

Owners: api.py → worker-0.

```python
print("not a command")
```

```legion-verify
# lint first
make lint

pytest -q tests/unit \\
    -x
```

~~~~ legion-verify extra words
./check.sh
```
still inside the tilde fence
~~~~

```sh
rm -rf /   # a sh block is never a verify command
```
"""


def test_commands_come_from_legion_verify_blocks_only() -> None:
    found = extract_verify_commands(CONTRACT)
    assert found.blocks == 2
    assert found.commands == (
        "make lint",
        "pytest -q tests/unit -x",
        "./check.sh",
        "```",
        "still inside the tilde fence",
    )


def test_no_block_and_empty_block_are_zero_commands() -> None:
    none = extract_verify_commands("# Contract\n\nno commands here\n")
    assert (none.commands, none.blocks) == ((), 0)
    empty = extract_verify_commands("```legion-verify\n\n# nothing yet\n```\n")
    assert (empty.commands, empty.blocks) == ((), 1)


def test_unclosed_block_runs_to_the_end() -> None:
    found = extract_verify_commands("```legion-verify\nmake test\nmake lint \\")
    assert found.commands == ("make test", "make lint")


def test_info_string_must_be_exact() -> None:
    assert extract_verify_commands("```legion-verifying\nmake\n```\n").commands == ()
    assert extract_verify_commands("```Legion-Verify\nmake\n```\n").commands == ()
