"""The backends behind `AgentHandle` (see `legion_tui.supervisor.backend`).

`registry.make_handle` picks one for a launch spec (`local.build` for an agent on this
machine, `ray.handle` for one in a Ray actor). This package's own module imports
nothing: importing one backend never pulls in the others, and no submodule's import runs
back into it.
"""
