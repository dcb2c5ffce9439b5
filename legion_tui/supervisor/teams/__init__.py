"""Teams: a lead's stints and worktree (`teams`, `team_worktrees`), `legion phase` and
the gate's verification (`phase_op`, `verify`), the advisory phase clock
(`phase_watch`). Git itself is `legion_tui.git`."""
