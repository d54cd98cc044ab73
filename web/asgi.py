"""Plain ASGI helpers for middleware that reads a request's body before the app: read it within a limit, then
hand the app the same body as if unread. Used by the guard (the sign-in form) and the API gate (the request's cost).
"""


async def read_body(receive, limit: int) -> bytes | None:
    """The whole request body, or None once it passes `limit` bytes (the rest is not read)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replay(body: bytes, receive):
    """A `receive` that hands the app the body already read, then the client's own events (its disconnect)."""
    sent = False

    async def replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
