"""Run data is its user's alone (an agent's terminal, a task text): `runs/` and every
folder in it 0700, files 0600, and an owner-only default ACL where the file system has
ACLs, so what is created inside later stays private whatever its creator's umask."""

from __future__ import annotations

import contextlib
import os
import stat
import struct
from pathlib import Path

__all__ = ["OWNER_ONLY_ACL", "PRIVATE_DIR", "make_private"]

PRIVATE_DIR = 0o700
# A default ACL of owner-only entries (the POSIX ACL xattr, version 2: user::rwx,
# group::---, other::---): a file or folder created inside gets no group/other bits
# whatever its creator's umask — the host's, or an agent writing its own session file —
# and folders made inside inherit it. The umask itself is never touched, so an agent's
# work in the user's repository keeps the modes it always had.
_ACL_UNDEFINED_ID = 0xFFFFFFFF
OWNER_ONLY_ACL = struct.pack("<I", 2) + b"".join(
    struct.pack("<HHI", tag, perm, _ACL_UNDEFINED_ID)
    for tag, perm in ((0x01, 0o7), (0x04, 0), (0x20, 0))  # USER_OBJ, GROUP_OBJ, OTHER
)


def _private_dir(path: Path) -> None:
    """Make an existing folder of ours 0700, with the owner-only default ACL where the
    file system has ACLs (elsewhere the 0700 folders above the files still keep others
    out)."""
    # Followed if a link: `runs/` linked to another disk is the folder to close.
    os.chmod(path, PRIVATE_DIR)
    with contextlib.suppress(OSError, AttributeError):  # no ACLs here, or no xattrs at all
        os.setxattr(path, "system.posix_acl_default", OWNER_ONLY_ACL)


def make_private(run_dir: Path) -> None:
    """`runs/` and everything in one run made its user's alone: folders as `_private_dir`,
    files without group/other bits. A run made before this rule reopens private."""
    _private_dir(run_dir.parent)
    for folder, dirs, files in os.walk(run_dir):  # never follows a link out of the run
        _private_dir(Path(folder))
        for name in dirs + files:
            path = os.path.join(folder, name)
            # Gone meanwhile, or a link by now (never followed: NotImplementedError).
            with contextlib.suppress(OSError, NotImplementedError):
                st = os.lstat(path)
                if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
                    os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077, follow_symlinks=False)
