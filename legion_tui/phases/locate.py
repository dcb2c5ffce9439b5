"""Map a problem path like `phases[2].require[0]` to a line of the YAML it came from.

Validation works on plain Python values (so JSON, YAML and inline dicts share it); when the
values came from YAML, the composed node tree (`yaml.compose`) still knows where each key
and item sits, so problems can point at a line an editor can jump to.
"""

from __future__ import annotations

import re

import yaml

__all__ = ["YAML_LOADER", "line_of", "load_with_nodes", "split_path"]

# libyaml's parser when PyYAML was built with it (same node marks, ~10x faster).
YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def load_with_nodes(
    text: str, loader: type[yaml.SafeLoader] | None = None
) -> tuple[yaml.Node | None, object]:
    """Parse YAML once: (the composed node tree for line lookups, the plain value).

    Raises yaml.YAMLError (with `problem_mark`) on bad syntax, and on an alias: a few
    hundred bytes of nested `&a [*b, *b, …]` expand to gigabytes once constructed (and
    again in any message that echoes the value), and no card or machine needs one.
    """
    parser = (loader or YAML_LOADER)(text)
    try:
        node = parser.get_single_node()
        if node is not None:
            _refuse_aliases(node)
        data = parser.construct_document(node) if node is not None else None
    finally:
        parser.dispose()
    return node, data


def _refuse_aliases(root: yaml.Node) -> None:
    """An alias makes the composed tree a graph: a node reached twice. The walk visits
    each distinct node once, so it is linear in the text, not in the expansion."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise yaml.MarkedYAMLError(
                problem="aliases (&anchor / *alias) are not allowed; write the value out",
                problem_mark=node.start_mark,
            )
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))


def split_path(path: str) -> list[str | int]:
    """`phases[2].require[0]` → ["phases", 2, "require", 0]."""
    parts: list[str | int] = []
    for key, index in _TOKEN.findall(path):
        parts.append(int(index) if index else key)
    return parts


def line_of(root: yaml.Node | None, path: str, *, first_line: int = 1) -> int | None:
    """1-based line of the deepest node `path` reaches in `root` (None without a tree).

    `first_line` is the file line of the YAML text's first line (frontmatter sits after a
    `---` fence). A leading `phases` key is skipped when the root itself is the sequence of
    phases, so one path vocabulary serves both `phases: [...]` and a bare list.
    """
    if root is None:
        return None
    node: yaml.Node = root
    line = node.start_mark.line
    parts = split_path(path)
    if parts and parts[0] == "phases" and isinstance(node, yaml.SequenceNode):
        parts = parts[1:]
    for part in parts:
        nxt: yaml.Node | None = None
        if isinstance(part, int) and isinstance(node, yaml.SequenceNode):
            if 0 <= part < len(node.value):
                nxt = node.value[part]
                line = nxt.start_mark.line  # an item: the line it starts on
        elif isinstance(part, str) and isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value == part:
                    nxt = value_node
                    line = key_node.start_mark.line  # a field: the line of its key
                    break
        if nxt is None:
            break
        node = nxt
    return line + first_line
