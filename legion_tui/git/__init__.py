"""git for a unit of work (SPEC §6.7, §6.8): an agent's worktree and branch, what it
changed (review), and the end of the work — commit, land, push, discard, gc.

Every git call is bounded and runs in its own process group (`process.run_tool`), and
nothing here touches the user's checkout without a confirm the caller asked for.
"""
