"""Who is asking, in a chat: the signed-in user's name, or the local user (engine.admission.LOCAL) on a loopback
server where nobody signs in. The one answer for the reply's share, the keys, the library, the usage and the
user's own defaults; the API names a key's user the same way (api/callers.py), and web/users.py checks at every
request and message that the user still is one. A role never comes from a name: operators are CHAT_ADMINS (the
local user of a loopback server is that machine's owner, a name no one else can sign in with: web/signin.py).
"""


from engine.admission import LOCAL
from chainlit_door import sessions as door


def current_user() -> str:
    """The name of this chat's user."""
    user = door.session().user
    return user.identifier if user is not None else LOCAL
