"""A PDF's text, read by pypdf in a child process that stops at a text limit and within a time per page and in all.

A PDF is a program more than a text: a 34 KB file whose pages share one 8 MB content stream kept a core busy for
minutes in pypdf before its text could be measured. pypdf is pure Python, so a thread cannot be stopped, and the
app's process holds the chats and the engine: the reading runs here, in a process of its own that the parent
kills when the whole reading runs past its time (`read`), while the child itself stops a page that runs past its
own (a timer signal) and stops extracting once the text passes the limit (pypdf's text visitor). Only pypdf is
imported here: the child starts in a fraction of a second.

Run as a script, it reads the PDF's bytes from stdin and writes one JSON object to stdout: {"text": ...} or
{"refused": ..., "page": ...}.
"""

import json
import signal
import subprocess
import sys
from pathlib import Path

PAGE_S = 5.0  # a page of an ordinary PDF reads in well under a tenth of a second, also on a busy machine
TOTAL_S = 30.0  # and a whole PDF of 1 MB of text (a few hundred pages) in a few seconds; also all the files of one
# message together (ui/attachments.py), each user's messages one after another


class PageTooSlow(Exception):
    """A page ran past its time."""


class TextTooLong(Exception):
    """The text passed the limit."""


def _on_alarm(signum, frame):
    raise PageTooSlow


def _pages_text(data: bytes, most_chars: int, page_s: float) -> dict:
    """What the child answers (run in the child: it sets a timer signal)."""
    import io

    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PyPdfError

    held = [0]

    def count(text, *_):
        held[0] += len(text)
        if held[0] > most_chars:
            raise TextTooLong

    signal.signal(signal.SIGALRM, _on_alarm)
    texts, number = [], 0
    try:
        reader = PdfReader(io.BytesIO(data))
        for number, page in enumerate(reader.pages, 1):
            signal.setitimer(signal.ITIMER_REAL, page_s)
            texts.append((page.extract_text(visitor_text=count) or "").strip())
            signal.setitimer(signal.ITIMER_REAL, 0)
    except PageTooSlow:
        return {"refused": "slow", "page": number}
    except TextTooLong:
        return {"refused": "long", "page": number}
    except FileNotDecryptedError:
        return {"refused": "locked"}
    except (PyPdfError, DependencyError, ValueError, KeyError, TypeError, RecursionError) as error:
        return {"refused": "damaged", "error": type(error).__name__}
    return {"text": "\n\n".join(text for text in texts if text)}


def read(data: bytes, most_chars: int, seconds: float | None = None) -> dict:
    """The child's answer for the PDF `data`; {"refused": "slow"} when the whole reading ran past `seconds` (what
    is left of its message's time; TOTAL_S at most)."""
    command = [sys.executable, "-I", str(Path(__file__).resolve()), str(most_chars), str(PAGE_S)]
    try:
        done = subprocess.run(command, input=data, capture_output=True,
                              timeout=TOTAL_S if seconds is None else min(seconds, TOTAL_S))
    except subprocess.TimeoutExpired:  # subprocess.run killed the child
        return {"refused": "slow", "page": None}
    if done.returncode != 0:
        return {"refused": "damaged", "error": (done.stderr.decode(errors="replace").strip().splitlines() or
                                                 ["the reader failed"])[-1][:200]}
    return json.loads(done.stdout)


if __name__ == "__main__":
    answer = _pages_text(sys.stdin.buffer.read(), int(sys.argv[1]), float(sys.argv[2]))
    sys.stdout.write(json.dumps(answer))
