"""The dashboard: `LegionApp` and its styles (`app`, `app.tcss`), run from the CLI by
`running`; its main screen (`main_screen`), what the user asks of the legion
(`operator`), its themes (`theming`), the terminal driver (`terminal`), notifications
(`notify`), and a dashboard on a run another process hosts (`view`, `remote_ops`; in a
browser: `web`). Its widgets are `legion_tui.widgets`."""
