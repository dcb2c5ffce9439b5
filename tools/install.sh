#!/bin/sh
# `make install`: `legion` on your PATH, installed from this checkout the way Python CLIs
# are — as a tool of its own with uv or pipx where one is installed, else the way pipx
# would: a venv of its own under your data folder and a link to its `legion` in
# ~/.local/bin (pip's --user is refused by a Python the system manages, PEP 668). Says
# where it went and whether that folder is on PATH. A `legion` of someone else's already
# in ~/.local/bin is left as it is, and the install refused, naming it.
set -eu
PY=${PY:-python3}
if command -v uv >/dev/null 2>&1; then exec uv tool install --force .; fi
if command -v pipx >/dev/null 2>&1; then exec pipx install --force .; fi
home="${XDG_DATA_HOME:-$HOME/.local/share}/legion-tui"
bin="$HOME/.local/bin"
link="$bin/legion"
if [ -e "$link" ] || [ -L "$link" ]; then
  if [ "$(readlink "$link" || true)" != "$home/venv/bin/legion" ]; then
    echo "make install: $link exists and is not legion-tui's: left as it is, nothing installed" >&2
    echo "  move it away, or run legion from this checkout as .venv/bin/legion" >&2
    exit 1
  fi
fi
"$PY" -m venv --clear "$home/venv"
PYTHONWARNINGS="ignore:Editable installation" \
  "$home/venv/bin/pip" install --quiet --disable-pip-version-check .
# The agents `make agents` installs into this checkout, found by `kind: auto` from the
# tool as from .venv/bin/legion (agents.installed looks in <venv>/agents).
ln -sfn "$PWD/.venv/agents" "$home/venv/agents"
mkdir -p "$bin"
ln -sf "$home/venv/bin/legion" "$link"
case ":$PATH:" in
  *":$bin:"*) echo "legion installed: $link (its own venv: $home/venv)" ;;
  *) echo "legion installed in $bin, which is not on your PATH: add it (export PATH=\"$bin:\$PATH\")" ;;
esac
