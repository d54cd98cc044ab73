"""Background tasks kept until they end.

The event loop keeps only weak references to its tasks: one nobody holds may be collected before it finishes.
Every task the app starts and does not wait for goes through `spawn`, which holds it until it is done.
"""

import asyncio
from collections.abc import Awaitable

from lifetime.runtime import kept

RUNNING: set[asyncio.Future] = kept("tasks", set)  # every spawned task not yet done, also across `-w` reloads


def spawn(work: Awaitable, kept: set | None = None) -> asyncio.Future:
    """Run `work` in the background, held in `RUNNING` (and in `kept`, when given) until it is done."""
    task = asyncio.ensure_future(work)
    for holder in (RUNNING, kept) if kept is not None else (RUNNING,):
        holder.add(task)
        task.add_done_callback(holder.discard)
    return task
