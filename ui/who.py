"""Who an open chat's user is, for engine/who.py's `asking()`, the one answer for a chat and an API request alike.

From Chainlit's session (chainlit_door/): a user signed in by the local provider (web/signin.py, a loopback
server's person at this machine) is the local user and the machine's owner; a user signed in with a login is their
name; where nobody signs in (the history off) the chat is the local user's, without an owner's role.
"""

from chainlit_door import sessions as door
from engine import who
from engine.who import LOCAL, THE_LOCAL_USER, Who

LOCAL_PROVIDER = "local"  # web/signin.py's provider of the local user


def chats_user() -> Who | None:
    """The open chat's user, or None outside a chat."""
    session = door.session_or_none()
    if session is None:
        return None
    user = session.user
    if user is None:
        return Who(LOCAL)
    if (getattr(user, "metadata", None) or {}).get("provider") == LOCAL_PROVIDER and user.identifier == LOCAL:
        return THE_LOCAL_USER
    return Who(user.identifier)


def install() -> None:
    who.find_chats_user_with(chats_user)
