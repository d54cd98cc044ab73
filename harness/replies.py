"""Reading a reply as the user sees it: its cost line, a whole reply, a stopped one, the status panel; and the
engine's reply stream collected.

Shared by the end-to-end tests and the benchmark's app-path measurement (which counts tokens by the cost line);
pytest is imported only where a helper fails a test, so bench/ runs without it.
"""

import asyncio
import re
import time

from harness.chat_client import ChatClient

ERROR = re.compile(r"Something went wrong|object is not|Traceback")  # what a failing hook shows


def stats_of(text: str) -> dict[str, int]:
    """The prompt, reply and cached token counts of a reply's cost line."""
    match = re.search(r"(\d+) prompt \+ (\d+) reply tokens · (\d+) cached", text)
    assert match, f"no stats line in {text[-300:]!r}"
    return dict(zip(("prompt", "reply", "cached"), map(int, match.groups())))


async def ask(chat: ChatClient, text: str, timeout: float = 300) -> str:
    """Send `text`; its reply once whole (its cost line shown). Fails on an error message or after `timeout`."""
    before = set(chat.messages)
    await chat.send(text)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for shown in chat.messages.values():
            assert shown.author == "ERNIE Chat" or not ERROR.search(shown.content), shown.content
        done = [m.content for m in chat.replies("ERNIE Chat") if m.id not in before and "reply tokens" in m.content]
        if done:
            return done[-1]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no reply within {timeout:.0f} s; the chat shows {chat.all_text()[-500:]!r}")


async def nothing_running(client, tries: int = 5) -> None:
    """The status panel shows no request running or queued (its gauges follow the engine's next stats)."""
    for _ in range(tries):
        status = await client.ask("/status")
        if "| Requests running / queued | 0 / 0 |" in status.content:
            return
        await asyncio.sleep(1)
    import pytest

    pytest.fail(f"requests still running after Stop: {status.content}")


async def stop_a_long_reply(client, start, attempts: int = 3):
    """Start a long reply with `start()` and press Stop once it streams; the reply as the server left it, which
    must begin with the text shown before Stop (the random test model's first token may be a space alone).

    On a busy machine the test client can go unscheduled for seconds (measured: up to 9 s under two CPU
    hogs while it used 0.02 s of CPU) and see the first token only after the server sent the whole reply:
    Stop then comes too late to prove anything, and the test tries again. Replies of 8,192 tokens make
    that rare; a Stop that does not work fails every try.
    """
    for _ in range(attempts):
        before = {m.id for m in client.replies()}
        await start()
        reply = await client.streaming_reply(before)
        seen = reply.content
        await client.stop()
        await client.wait_idle()
        if "*Stopped.*" in reply.content:
            assert reply.content.startswith(seen), \
                f"the text shown before Stop must stay: {seen!r} -> {reply.content!r}"
            shown = reply.content
            await asyncio.sleep(0.5)
            assert reply.content == shown, "no text may arrive after the stopped reply"
            return reply
        assert "reply tokens" in reply.content, "a reply that was not stopped must have run to its end"
    import pytest

    pytest.fail(f"Stop ended none of {attempts} long replies")


async def collect(stream):
    """The text deltas of an engine's reply stream, and its closing `Stats`."""
    from engine.reports import Stats

    deltas, stats = [], None
    async for item in stream:
        if isinstance(item, Stats):
            stats = item
        else:
            deltas.append(item)
    return deltas, stats


async def until(condition, timeout: float, what: str = "") -> None:
    """Wait for `condition()` to hold, checking every 0.1 s; fails saying `what` did not happen in time."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not {what} within {timeout} s"
        await asyncio.sleep(0.1)


async def shown_within(condition, what: str, client: ChatClient | None = None, timeout: float = 300):
    """What `condition()` returns once it is truthy, checked every 50 ms; fails after `timeout` saying `what` did not
    show, with the end of what `client`'s chat shows."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}" + (
            f"; the chat shows: {client.all_text()[-600:]!r}" if client else "")
        await asyncio.sleep(0.05)
    return found
