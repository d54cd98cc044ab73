"""How long a chat's connection may go quiet before the browser or the server gives it up.

Socket.IO's defaults drop a connection when the server has not pinged for 30 s (the browser's side)
or the browser has not answered a ping within 20 s (the server's side). Chainlit then ends the chat's
session, and the app stops the chat's running reply (`on_chat_end`): a reply lost to a server that
was only busy. On a machine where vLLM runs on the same few CPU cores as the web server, or one
that stalls for seconds, that happens to healthy chats (measured on a 2-core virtual machine: while
vLLM's CPU engine generated a long reply, every other process's timers stood still for 27 s, so pings
were neither sent nor answered). A longer ping timeout keeps them. A closed tab or a crashed browser
is still noticed at once (its socket closes); only a connection lost without a word (a laptop gone to
sleep) is now noticed two minutes later instead of 45 s.
"""

PING_TIMEOUT_S = 120  # a server quiet for this long (less the 25 s ping interval) still keeps its chats


def tolerate_quiet_servers() -> None:
    """Chainlit's socket server announces (and applies) the longer ping timeout to every new connection."""
    from chainlit.server import sio

    sio.eio.ping_timeout = PING_TIMEOUT_S
