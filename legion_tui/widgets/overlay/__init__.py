"""The detail overlay of one agent: its tabs (`detail`, `transcript_view`,
`terminal_view`, `diff_view`, `letters`), their text (`detail_text`), the message box
and what it sends (`message_box`, `talk`), and attach (`attaching`)."""
