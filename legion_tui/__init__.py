"""legion-tui: run and watch a tree of AI coding agents from a terminal."""

__version__ = "0.1.0"

# `typing.TYPE_CHECKING` costs importing typing: 7 % of a control verb's start (SPEC §8
# gives a verb 2.5x a bare interpreter). The modules a verb imports take this one; mypy
# reads any name TYPE_CHECKING as true.
TYPE_CHECKING = False
