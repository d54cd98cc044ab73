"""Who has sequences in the engine, and who waits for their share: the one admission of the chats and the API.

A chat's reply is one sequence; an API request is its prompts times its `n` (api/gate.py reads them). Every
request, from either side, holds its sequences inside `admit(who, n, kind)` for as long as it runs: `who` is a
user (a chat's signed-in user, the local user on loopback, an API key's user), `kind` is CHAT or API. The counts
are what `saturated()`, the idle timer and the status panel read: a request with n=4 takes 4 of the preset's
slots, as 4 chats would, and no side can keep the engine awake or busy without the other seeing it.

A fair share: each user's sequences, chats and API together, are counted, and a user who would go over the
share (`share()`, from CHAT_USER_SHARE or the preset's slots) waits here, first come first served among their
own requests (their chats ahead of their API requests), until their own earlier requests end; other users are not
held up by them. The order inside the
engine is vLLM's priority scheduling (`scheduling_policy="priority"`): each admitted request carries a
`priority` (lower runs first), a chat's better than an API request's, so a chat waiting for a free slot goes
ahead of any batch. No scheduler of our own: this only decides who may hand vLLM more work now.

CHAT_USER_SHARE=0 turns both off (no shares, priority 0, vLLM's first come first served): the behaviour before
shares, kept for comparison (bench/fair_share.py) and for operators who want it.
"""

import asyncio
import collections
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from engine.who import Who

CHAT, API = "chat", "api"  # the kinds of request
WARMUP = "(warm-up)"  # who the engine's own warm-up requests are: nobody's usage
# vLLM runs lower first. A chat at -1 goes ahead of a request that sets none (0): also on a remote `vllm serve`
# that other clients call directly.
PRIORITY = {CHAT: -1, API: 0}


@dataclass
class Ticket:
    """One admitted request: whose, how many sequences, what kind, and the priority to give vLLM; the request may
    note more on it as it runs (what it used), for whoever reads it at the release."""

    who: str
    sequences: int
    kind: str
    priority: int
    prompt: int = 0  # the tokens it used, noted as it runs, counted at the release (`usage_sink`)
    cached: int = 0
    reply: int = 0
    caller: Who | None = None  # who asked, when the admission was given more than a name (engine/who.py)


# Told of each request the admission releases, with what it used: where usage is counted (history/usage.py); set
# once per process (boot/wiring.py), None: nothing counts.
usage_sink: Callable[[Ticket], None] | None = None


class Admission:
    def __init__(self, on_change: Callable[[], None] = lambda: None,
                 share: Callable[[], int | None] = lambda: None, prioritized: bool = False):
        """`share`: the most sequences one user holds at once (read at each entry: a preset switch changes it),
        None for no limit; `prioritized`: tickets carry PRIORITY (the engine schedules by priority), else 0."""
        self._held: collections.Counter[str] = collections.Counter()  # by user
        self._kinds: collections.Counter[str] = collections.Counter()  # by CHAT / API
        self._waiting: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self._on_change = on_change  # each entry and exit is activity (the idle timer's touch)
        self._share = share
        self.prioritized = prioritized

    @contextlib.asynccontextmanager
    async def admit(self, who: str | Who, sequences: int = 1, kind: str = CHAT):
        """Hold `sequences` for user `who` (a name, or the Who that asks) for a request of `kind` while the block
        runs, after waiting for the user's share if they are over it; released however it ends (a cancelled wait
        takes nothing)."""
        caller, who = (who, who.name) if isinstance(who, Who) else (None, who)
        if not isinstance(who, str) or not who or kind not in PRIORITY or sequences < 0:
            raise ValueError(f"cannot admit {sequences} sequences of kind {kind!r} for user {who!r}")
        share = self._share()
        ticket = Ticket(who, sequences, kind, PRIORITY[kind] if self.prioritized else 0, caller=caller)
        if self._ahead(ticket) or not self._fits(ticket, share):
            await self._wait(ticket)
        else:
            self._take(ticket)
        try:
            yield ticket
        finally:
            self._release(ticket)
            if usage_sink is not None:
                usage_sink(ticket)

    def set_rules(self, share: Callable[[], int | None], prioritized: bool) -> None:
        """Other rules from the next request on (bench/fair_share.py compares them on one running engine)."""
        self._share, self.prioritized = share, prioritized

    def _fits(self, ticket: Ticket, share: int | None) -> bool:
        """Within the share; a user who holds nothing always gets in (a request larger than the share runs alone:
        the gate already refuses one larger than the engine)."""
        held = self._held[ticket.who]
        return share is None or held == 0 or held + ticket.sequences <= share

    def _take(self, ticket: Ticket) -> None:
        self._held[ticket.who] += ticket.sequences
        self._kinds[ticket.kind] += ticket.sequences
        self._on_change()

    def _chat_first(self, ticket: Ticket) -> bool:
        return self.prioritized and ticket.kind == CHAT

    def _ahead(self, ticket: Ticket) -> bool:
        """Whether requests of the same user wait ahead of `ticket`: any of theirs, or for a chat (with priorities
        on), only their chats (a person's chat goes ahead of their own queued API requests, as of everyone's)."""
        queue = self._waiting.get(ticket.who) or ()
        return any(t.kind == CHAT for t, _ in queue) if self._chat_first(ticket) else bool(queue)

    async def _wait(self, ticket: Ticket) -> None:
        turn = asyncio.get_running_loop().create_future()
        queue = self._waiting[ticket.who]
        if self._chat_first(ticket):  # after the user's waiting chats, before their waiting API requests
            queue.insert(next((i for i, (t, _) in enumerate(queue) if t.kind != CHAT), len(queue)), (ticket, turn))
        else:
            queue.append((ticket, turn))
        self._on_change()
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # let in just as it was cancelled: give the slots back
                self._release(ticket)
            else:
                queue.remove((ticket, turn))
                self._let_in(ticket.who)  # a large request that gave up may have held up smaller ones
            raise

    def _release(self, ticket: Ticket) -> None:
        self._held[ticket.who] -= ticket.sequences
        self._kinds[ticket.kind] -= ticket.sequences
        if not self._held[ticket.who]:
            del self._held[ticket.who]
        self._let_in(ticket.who)
        self._on_change()

    def _let_in(self, who: str) -> None:
        """Admit `who`'s waiting requests, in their order, while they fit the share."""
        queue, share = self._waiting.get(who), self._share()
        while queue and self._fits(queue[0][0], share):
            ticket, turn = queue.popleft()
            self._take(ticket)
            turn.set_result(None)
        if queue is not None and not queue:
            del self._waiting[who]

    def held(self, kind: str | None = None) -> int:
        """Sequences in flight of `kind` (CHAT or API), or of every kind."""
        return sum(self._kinds.values()) if kind is None else self._kinds[kind]

    def held_by(self, who: str) -> int:
        """Sequences user `who` has in flight, chats and API together."""
        return self._held[who]

    def waiting(self) -> dict[str, int]:
        """Requests waiting for their user's share, by user."""
        return {who: len(queue) for who, queue in self._waiting.items() if queue}

    @property
    def share(self) -> int | None:
        """The most sequences one user holds at once now; None: no shares."""
        return self._share()


def default_share(max_num_seqs: int) -> int:
    """All the slots but an eighth (at least one): one user alone keeps nearly the engine's whole rate (an idle
    slot is rate lost), and the eighth kept free lets everyone else's chats start at once (docs/scaling.md, "A
    fair share of the engine")."""
    return max(1, max_num_seqs - max(1, max_num_seqs // 8))
