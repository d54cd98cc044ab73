"""The admission's shares (engine/admission.py): one user's flood waits for that user's own slots, another user's
request gets in at once, and every way a request ends gives its slots back. In the event loop, without an engine;
tests/test_fair_share.py shows the same on the real engine."""

import asyncio
import json

import httpx
import pytest

from engine.admission import API, CHAT, PRIORITY, Admission
from engine.engine import ChatEngine
from engine.presets import Preset
from engine.settings import load_settings
from harness.presets import TEST_PRESET

SHARE = 3
CHAT_TURN = [{"role": "user", "content": "Hello!"}]


class Requests:
    """Requests of several users held open in the admission until the test lets each one end."""

    def __init__(self, admission: Admission):
        self.admission = admission
        self.admitted: list[str] = []  # names, in the order they got in
        self._ends: dict[str, asyncio.Future] = {}
        self.tasks: dict[str, asyncio.Task] = {}

    def send(self, name: str, who: str, sequences: int = 1, kind: str = API) -> None:
        self._ends[name] = asyncio.get_running_loop().create_future()

        async def run():
            async with self.admission.admit(who, sequences, kind):
                self.admitted.append(name)
                await self._ends[name]

        self.tasks[name] = asyncio.create_task(run())

    async def end(self, name: str, error: Exception | None = None) -> None:
        self._ends[name].set_exception(error) if error else self._ends[name].set_result(None)
        await asyncio.gather(self.tasks[name], return_exceptions=True)
        await settle()

    async def cancel(self, name: str) -> None:
        self.tasks[name].cancel()
        await asyncio.gather(self.tasks[name], return_exceptions=True)
        await settle()


async def settle() -> None:
    """Let every task that can run, run (the admission hands over slots within the loop, never later)."""
    for _ in range(10):
        await asyncio.sleep(0)


async def test_a_flood_waits_for_its_own_share_while_another_user_gets_in_at_once():
    admission = Admission(share=lambda: SHARE, prioritized=True)
    requests = Requests(admission)
    for n in range(4 * SHARE):
        requests.send(f"ann{n}", "ann")
    await settle()
    assert requests.admitted == [f"ann{n}" for n in range(SHARE)], "ann runs her share, the rest of her flood waits"
    assert admission.held_by("ann") == SHARE and admission.waiting() == {"ann": 3 * SHARE}

    requests.send("bob", "bob", kind=CHAT)
    await settle()
    assert requests.admitted[-1] == "bob", "bob's chat is not behind ann's flood"

    await requests.end("ann1")  # one of ann's ends: her next waiting request takes its place, in her order
    assert requests.admitted[-1] == f"ann{SHARE}" and admission.held_by("ann") == SHARE
    await requests.end("bob")
    assert requests.admitted[-1] == f"ann{SHARE}", "bob's slot going free does not let ann over her share"
    for n in [0, 2, *range(SHARE, 4 * SHARE)]:
        await requests.end(f"ann{n}")
    assert [name for name in requests.admitted if name != "bob"] == [f"ann{n}" for n in range(4 * SHARE)]
    assert admission.held() == 0 and admission.waiting() == {}


async def test_a_users_chat_goes_ahead_of_their_own_queued_api_requests():
    admission = Admission(share=lambda: SHARE, prioritized=True)
    requests = Requests(admission)
    for n in range(3 * SHARE):
        requests.send(f"api{n}", "ann")
    await settle()
    requests.send("chat", "ann", kind=CHAT)
    requests.send("chat2", "ann", kind=CHAT)
    await settle()
    assert "chat" not in requests.admitted, "her share is full: her chat waits too"
    await requests.end("api0")
    assert requests.admitted[-1] == "chat", "her chat is next, not her queued API requests"
    await requests.end("api1")
    assert requests.admitted[-1] == "chat2", "her chats in their order"
    await requests.end("api2")
    assert requests.admitted[-1] == f"api{SHARE}", "then her API requests, in theirs"


async def test_slots_come_back_when_a_request_errs_is_stopped_or_gives_up_waiting():
    admission = Admission(share=lambda: SHARE)
    requests = Requests(admission)
    for n in range(SHARE + 2):
        requests.send(f"ann{n}", "ann", kind=CHAT if n % 2 else API)
    await settle()
    await requests.end("ann0", RuntimeError("the engine died"))
    assert requests.admitted[-1] == f"ann{SHARE}", "an error gives the slot to the next in line"
    await requests.cancel("ann1")  # stopped while it ran (a chat's Stop, a client that went away)
    assert requests.admitted[-1] == f"ann{SHARE + 1}"
    requests.send("late", "ann")
    await settle()
    await requests.cancel("late")  # gave up while it waited: it took nothing
    assert admission.held_by("ann") == SHARE and admission.waiting() == {}
    for name in [f"ann{n}" for n in range(2, SHARE + 2)]:
        await requests.end(name)
    assert (admission.held(), admission.held(CHAT), admission.held(API), admission.held_by("ann")) == (0, 0, 0, 0)


async def test_a_request_larger_than_the_share_runs_alone_and_holds_up_the_smaller_ones_behind_it():
    admission = Admission(share=lambda: SHARE)
    requests = Requests(admission)
    requests.send("small", "ann")
    requests.send("big", "ann", sequences=SHARE + 2)  # allowed by the gate (within the engine), over the share
    requests.send("after", "ann")
    await settle()
    assert requests.admitted == ["small"]
    await requests.end("small")
    assert requests.admitted == ["small", "big"], "her own order: the next one waits behind the big one"
    await requests.end("big")
    assert requests.admitted[-1] == "after"


async def test_chats_go_before_api_requests_in_the_engine_and_without_shares_nobody_waits():
    admission = Admission(share=lambda: SHARE, prioritized=True)
    async with admission.admit("ann", 1, CHAT) as chat, admission.admit("ann", 2, API) as batch:
        assert chat.priority < batch.priority, "vLLM runs lower first"
        assert (chat.priority, batch.priority) == (PRIORITY[CHAT], PRIORITY[API])

    off = Admission(share=lambda: None, prioritized=False)  # CHAT_USER_SHARE=0: as before shares
    requests = Requests(off)
    for n in range(4 * SHARE):
        requests.send(f"ann{n}", "ann")
    await settle()
    assert len(requests.admitted) == 4 * SHARE and off.waiting() == {}
    async with off.admit("bob", 1, CHAT) as ticket:
        assert ticket.priority == 0, "first come, first served"
    for n in range(4 * SHARE):
        await requests.end(f"ann{n}")


@pytest.mark.parametrize("setting, slots, share", [(None, 16, 14), (None, 32, 28), (None, 8, 7), (None, 1, 1),
                                                   (None, 2, 1), (5, 16, 5), (0, 16, None)])
def test_the_share_is_the_preset_s_slots_but_an_eighth_unless_the_operator_sets_it(setting, slots, share):
    custom = Preset(**{**TEST_PRESET, "max_num_seqs": slots})
    engine = ChatEngine(load_settings(preset="custom", custom_preset=custom, user_share=setting), preset=custom)
    assert engine.admission.share == share
    assert engine.admission.prioritized == (setting != 0)


async def test_the_status_panel_says_how_many_wait_for_their_share():
    from ui.text import status_text

    custom = Preset(**{**TEST_PRESET, "max_num_seqs": 4})  # a share of 3
    engine = ChatEngine(load_settings(preset="custom", custom_preset=custom), preset=custom)
    requests = Requests(engine.admission)
    for n in range(5):
        requests.send(f"ann{n}", "ann")
    await settle()
    status = engine.status()
    assert (status.user_share, status.waiting_for_share, status.api_sequences) == (3, 2, 3)
    assert "| Each user's share / requests waiting for it | 3 / 2 |" in status_text(status)
    for n in range(5):
        await requests.end(f"ann{n}")
    assert engine.status().waiting_for_share == 0


@pytest.mark.fast  # a server imitated in memory: nothing starts
async def test_a_remote_server_gets_the_chat_s_priority_and_one_that_refuses_it_gets_the_chat_without():
    from engine.remote import RemoteEngine
    from harness.fake_vllm import FakeVllm

    server = FakeVllm()
    remote = RemoteEngine(load_settings(engine_url="http://fake-vllm/v1"), transport=server.transport)
    reply = [item async for item in remote.stream(CHAT_TURN, user="bob")]
    assert server.requests[-1]["priority"] == PRIORITY[CHAT] and reply[-1].generated_tokens == server.reply_tokens

    refusing = FakeVllm()

    async def first_come_first_served(request):  # as a vLLM that refuses priorities without priority scheduling
        if request.url.path.endswith("/chat/completions") and "priority" in json.loads(request.content):
            return httpx.Response(400, json={"error": {"message": "Got priority -1 but Priority scheduling is not "
                                                                  "enabled."}})
        return await refusing.transport.handle_async_request(request)

    remote = RemoteEngine(load_settings(engine_url="http://fake-vllm/v1"),
                          transport=httpx.MockTransport(first_come_first_served))
    for _ in range(2):
        reply = [item async for item in remote.stream(CHAT_TURN, user="bob")]
        assert reply[-1].generated_tokens == refusing.reply_tokens, "the chat is answered all the same"
    assert len(refusing.requests) == 2 and all("priority" not in body for body in refusing.requests)
    assert remote.admission.held() == 0
