"""legion-tui: run and watch a tree of AI coding agents from a terminal."""

__version__ = "0.1.0"
