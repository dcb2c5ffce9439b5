"""The railway tree: the widget (`railway`), its header line (`header`), and the text of
its rows (`rows`)."""
