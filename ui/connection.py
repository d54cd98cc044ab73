"""How long a chat's connection may go quiet before the browser or the server gives it up.

Socket.IO's defaults drop a connection when the server has not pinged for 30 s (the browser's side)
or the browser has not answered a ping within 20 s (the server's side): the tab's view of a reply lost
to a server that was only busy. On a machine where vLLM runs on the same few CPU cores as the web server, or one
that stalls for seconds, that happens to healthy chats (measured on a 2-core virtual machine: while
vLLM's CPU engine generated a long reply, every other process's timers stood still for 27 s, so pings
were neither sent nor answered). A longer ping timeout keeps them. A closed tab or a crashed browser
is still noticed at once (its socket closes); only a connection lost without a word (a laptop gone to
sleep) is now noticed two minutes later instead of 45 s.

A connection that drops anyway and comes back with its session (Chainlit restores it) gets the chat's latest
reply again, as it stands or finished: what was streamed while it was away never reached it.
"""

from chainlit.context import context, init_ws_context
from chainlit.session import WebsocketSession

from ui import chat_state

PING_TIMEOUT_S = 120  # a server quiet for this long (less the 25 s ping interval) still keeps its chats


def tolerate_quiet_servers() -> None:
    """Chainlit's socket server announces (and applies) the longer ping timeout to every new connection."""
    from chainlit.server import sio

    sio.eio.ping_timeout = PING_TIMEOUT_S


def wrap_socket_handler(event: str, wrap) -> None:
    """Replace Chainlit's socket handler of `event` by `wrap(chainlit_handler)`; a `-w` reload wraps Chainlit's
    own again, never the wrapper of the previous load."""
    from chainlit.server import sio

    handlers = sio.handlers["/"]
    original = getattr(handlers[event], "chainlit_handler", handlers[event])
    wrapped = wrap(original)
    wrapped.chainlit_handler = original
    handlers[event] = wrapped


def resend_replies_on_reconnect() -> None:
    """After Chainlit's own handling of a connection, a restored session is sent its latest reply again (the
    browser replaces the message of that id), and told that it is still running when it is."""
    wrap_socket_handler("connection_successful", _resending)


def _resending(original):
    async def connection_successful(sid):
        await original(sid)
        session = WebsocketSession.get(sid)
        if session is None or not session.restored:
            return
        init_ws_context(session)
        chat = chat_state.made()
        if chat is not None and chat.reply is not None:
            await context.emitter.send_step(chat.reply.to_dict())
            if chat.replying:
                await context.emitter.task_start()

    return connection_successful
