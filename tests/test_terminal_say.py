"""The line the dashboard prints as it exits (the session and how to reopen it) never
blocks or fails the exit: a terminal that stopped reading or hung up loses the line."""

from __future__ import annotations

import fcntl
import os

import pytest

from legion_tui.dashboard.terminal import say_after_exit

pytestmark = pytest.mark.unit


def test_the_line_reaches_a_terminal_that_reads() -> None:
    r, w = os.pipe()
    try:
        say_after_exit("legion: session main", fd=w)
        assert os.read(r, 100) == b"legion: session main\n"
    finally:
        os.close(r)
        os.close(w)


def test_a_terminal_that_stopped_reading_loses_the_line_and_nothing_blocks() -> None:
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
        while True:  # fill the pipe as a frozen window's terminal buffer fills
            try:
                os.write(w, b"x" * 65536)
            except BlockingIOError:
                break
        fcntl.fcntl(w, fcntl.F_SETFL, 0)  # blocking again, as a terminal's fd is
        say_after_exit("legion: session main", fd=w)  # returns: it is not writable
    finally:
        os.close(r)
        os.close(w)


def test_a_terminal_that_hung_up_loses_the_line_without_an_error() -> None:
    r, w = os.pipe()
    os.close(r)  # nobody at the other end: the write fails (EPIPE), as EIO on a hangup
    try:
        say_after_exit("legion: session main", fd=w)
    finally:
        os.close(w)
    say_after_exit("legion: session main", fd=w)  # a closed descriptor: nothing either
