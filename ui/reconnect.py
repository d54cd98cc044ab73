"""A connection that drops and comes back with its session (Chainlit restores it) gets the chat's latest reply
again, as it stands or finished: what was streamed while it was away never reached it.

Connections are also kept through long quiet spells (chainlit_door.patches.tolerate_quiet_servers), so this is for
the drops that happen anyway: a network blip, a proxy's idle reset.
"""

from chainlit_door.sessions import enter, session_of_socket, wrap_socket_handler
from ui import chat_state
from chainlit_door import sessions as door


def resend_replies_on_reconnect() -> None:
    """After Chainlit's own handling of a connection, a restored session is sent its latest reply again (the
    browser replaces the message of that id), and told that it is still running when it is."""
    wrap_socket_handler("connection_successful", _resending)


def _resending(original):
    async def connection_successful(sid):
        await original(sid)
        session = session_of_socket(sid)
        if session is None or not session.restored:
            return
        enter(session)
        chat = chat_state.made()
        if chat is not None and chat.reply is not None:
            await door.emitter().send_step(chat.reply.to_dict())
            if chat.replying:
                await door.emitter().task_start()

    return connection_successful
