"""The dashboard: `LegionApp` and its styles (`app`, `app.tcss`), the terminal driver
(`terminal`), notifications (`notify`), and a dashboard on a run another process hosts
(`view`, `remote_ops`; in a browser: `web`). Its widgets are `legion_tui.widgets`."""
