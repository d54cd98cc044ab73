"""An error inside one of the app's Chainlit hooks, told in the chat as well as the log.

Chainlit logs such an exception and, for a message, shows only the exception's own text ("'NoneType' object is
not iterable"), or nothing at all for a settings change. The user must learn what failed and that it was not
done, so they can send it again.
"""

import asyncio
import functools
import logging

import chainlit as cl

from ui.words import say, say_known

log = logging.getLogger("chainlit")


def reported(what: str):
    """Decorate a hook: an exception in it is logged with its traceback and told in the chat as 'what' failed."""
    def decorate(hook):
        @functools.wraps(hook)  # Chainlit reads the hook's parameter names through __wrapped__
        async def guarded(*args, **kwargs):
            try:
                return await hook(*args, **kwargs)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.exception("%s failed", what)
                await _tell(what, error)
        return guarded
    return decorate


async def _tell(what: str, error: Exception) -> None:
    try:
        doing = say_known(f"doing.{what}", what)
        await cl.ErrorMessage(content=say("failed", what=doing, error=f"{type(error).__name__}: {error}"),
                              author="system").send()
    except Exception:  # the chat itself is gone: the log has it
        log.exception("could not tell the chat that %s failed", what)
