"""What the browser would be sent, for the tests that run the app's hooks in-process (tests/test_hooks.py,
tests/test_branches.py): a Chainlit emitter that keeps each message's latest content by its id, as the page shows it.
"""

from chainlit.emitter import BaseChainlitEmitter


class Recorder(BaseChainlitEmitter):
    """Keeps what the browser would be sent: message id -> latest content."""

    def __init__(self, session):
        super().__init__(session)
        self.shown: dict[str, str] = {}

    async def send_step(self, step):
        self.shown[step["id"]] = step["output"]

    update_step = send_step

    async def delete_step(self, step):
        self.shown.pop(step["id"], None)

    async def send_token(self, id, token, is_sequence=False, is_input=False):
        self.shown[id] = self.shown.get(id, "") + token

    def set_chat_settings(self, settings):  # synchronous in the real emitter
        pass
