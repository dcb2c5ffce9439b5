"""The dashboard's modal screens (the detail and compare overlays, the help, the forms):
what Textual would do a second time as one opens, and need not.

A modal's first frame is the key's answer (SPEC §8: Enter ≤ 30 ms), so the work between
the key and that frame, and the work queued right behind it on the one event loop, is
what a user waits on. Textual, as a screen opens:
- resumes it with every widget's CSS applied again, straight after its compose applied
  it (~15 % of Enter's time to the first frame);
- lays it out, which sends the screen itself a Resize, whose default handler lays it out
  again at the same size and re-lays-out the dashboard under it too (~10 ms of CPU at
  1 000 agents, each opening).
Both are skipped only where they cannot change anything: a later resume (the palette
closed over the modal, the theme may have changed) refreshes the styles, and a Resize to
a size that this screen or a screen under it is not laid out at runs as Textual means it.
"""

from __future__ import annotations

from typing import TypeVar

from textual import events
from textual.screen import ModalScreen

ResultType = TypeVar("ResultType")


class Modal(ModalScreen[ResultType]):
    _resumed = False  # resumed once: its first showing is past

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # Runs before Screen's own handler (the MRO's order).
        if not self._resumed:
            self._resumed = True
            event.refresh_styles = False

    def on_resize(self, event: events.Resize) -> None:
        # A subclass's own on_resize has run already (the MRO's order); this stops only
        # Screen's, which would lay this screen and those under it out again.
        laid_out = [self, *self.app._background_screens]
        if all(screen._compositor.size == event.size for screen in laid_out):
            event.prevent_default()
