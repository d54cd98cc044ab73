"""Every way in checks the user, each time: a signed-in user is one while their login exists (scripts/add_user.py
--delete removes it, with their keys), so a sign-in cookie from before the removal opens nothing, in any app process
on the same history, from the next request or message on.

Chainlit checks a cookie's signature and age only (its token lives 15 days); here its `get_current_user` is
followed, for every route that asks for the user (FastAPI's dependency overrides), for the socket's connect, and for
each chat message over an open socket, by a lookup of the login. The local user of a loopback server has no login
and is always one. The same check makes the feedback routes (`PUT`/`DELETE /feedback`), which Chainlit answers for
any message id, refuse a message of another user's chat.
"""

import json

from history import tables
from engine.who import LOCAL, RESERVED_NAMES

REMOVED = ("This user was removed from this server: ask its owner to add you again "
           "(`python scripts/add_user.py NAME`), then sign in.")
NOT_YOURS = "This message is not in one of your chats: its feedback was not changed."
_STEP_OWNER = ('SELECT t."userIdentifier" AS owner FROM steps s JOIN threads t ON s."threadId" = t."id" '
               'WHERE s."id" = :id')
_FEEDBACK_OWNER = ('SELECT t."userIdentifier" AS owner FROM feedbacks f JOIN steps s ON f."forId" = s."id" '
                   'JOIN threads t ON s."threadId" = t."id" WHERE f."id" = :id')


def checks(layer, loopback: bool):
    """What Chainlit's door checks at every request and message (chainlit_door.patches.install), or None: nothing
    to check without a history (nobody signs in)."""
    if layer is None:
        return None
    return (lambda user: is_user(layer, loopback, user), lambda request, user: feedback_refusal(layer, request, user),
            REMOVED)


async def is_user(layer, loopback: bool, user) -> bool:
    """Whether `user` (Chainlit's signed-in user) may go on: the local user on loopback, else one with a login."""
    name = getattr(user, "identifier", None)
    if not isinstance(name, str):
        return False
    if name == LOCAL:
        return loopback
    return name not in RESERVED_NAMES and await tables.password_hash(layer, name) is not None


async def feedback_refusal(layer, request, user) -> str | None:
    """Why `request` to Chainlit's feedback routes may not change its message's feedback (None: it may)."""
    if request.url.path.rstrip("/").split("/")[-1] != "feedback" or request.method not in ("PUT", "DELETE"):
        return None
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        return None  # Chainlit answers a body that is not JSON itself
    if request.method == "PUT":
        step = ((body.get("feedback") or {}) if isinstance(body, dict) else {}).get("forId")
        query, key = _STEP_OWNER, step
    else:
        query, key = _FEEDBACK_OWNER, body.get("feedbackId") if isinstance(body, dict) else None
    if not isinstance(key, str):
        return None
    rows = await layer.execute_sql(query, {"id": key})
    owner = rows[0]["owner"] if isinstance(rows, list) and rows else None
    return None if owner is None or owner == user.identifier else NOT_YOURS
