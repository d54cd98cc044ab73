"""The engine's start (or wake) as every page shows it before anything is sent: the latest progress of the start
that a chat's opening began (ui/start_note.py notes it here), read by the page as a line above the message box
(web/start_route.py, public/start-line.js) and by the Status chip's table (ui/text.py). The welcome page and the
starters stay: nothing is written in the chat.

The progress is the process's, kept across `-w` reloads (runtime.py), as the engine it tells of.
"""

from engine.reports import Progress
from lifetime.runtime import RUNTIME
from ui import text
from ui.words import say

STARTING = ("stopped", "starting", "switching", "falling asleep", "waking")  # the states a start is under way in


def note(progress: Progress) -> None:
    """The start's latest progress (ui/start_note.py's report)."""
    RUNTIME.start_progress = progress


def line(state: str, lang: str | None = None) -> str | None:
    """The start's progress as one line in `lang` (None: the chat's language), or None when no start is under way."""
    progress = getattr(RUNTIME, "start_progress", None)
    if state not in STARTING:
        return None
    title = say("start.waking" if state == "waking" else "start.starting", lang)
    if progress is None or progress.done:
        return f"⏳ {title}…"
    return text.progress_line(title, progress, lang)
