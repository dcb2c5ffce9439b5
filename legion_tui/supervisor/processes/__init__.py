"""OS processes: spawning and bounded waits (`process`, `child_process`), an agent's
stdout and JSON-lines channel (`pipe_reader`, `channel`), the stop sweep (`sweep`),
what an agent cannot shed (`containment`, `cgroups`), the watchdog that ends them when
the host dies (`watchdog`, `watchdog_link`), the orphan reaper (`orphans`), `/proc`
(`procfs`), an exec child's terminal (`pty_terminal`, `tty_wait`)."""
