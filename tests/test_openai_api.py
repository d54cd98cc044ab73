"""The OpenAI-compatible API on the chat server: the real `openai` client against the running app."""

import asyncio
import time

import httpx
import openai
import pytest

from harness.chat_client import ChatClient
from harness.server import ChainlitServer
from harness.replies import nothing_running, stats_of

LONG_TEXT = " ".join(f"Paragraph {i}: the quick brown fox jumps over the lazy dog near the river bank."
                     for i in range(60))


@pytest.fixture
def api(app_server, engine_env):
    # Generous limits: on a machine busy with other work a client can go unscheduled for seconds
    # (docs/reliability.md); these tests are about what the API answers, the benchmark about how fast.
    timeout = httpx.Timeout(300, connect=60)
    return openai.AsyncOpenAI(base_url=f"{app_server.url}/v1", api_key="unused-on-loopback", max_retries=0,
                              timeout=timeout), engine_env["CHAT_MODEL"]


@pytest.fixture
async def chat(app_server):
    client = await ChatClient(app_server.url).connect()
    yield client
    await client.close()


async def test_an_openai_client_lists_the_model_and_gets_whole_and_streamed_replies(api):
    client, model = api
    assert [m.id for m in (await client.models.list()).data] == [model]

    whole = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hello!"}], max_tokens=12, extra_body={"ignore_eos": True})
    assert whole.choices[0].message.content and whole.choices[0].finish_reason == "length"
    assert whole.usage.completion_tokens == 12 and whole.usage.prompt_tokens > 0

    # 1,000 tokens: a server or client left unscheduled on a busy machine merges what it missed (200 came in one
    # piece once)
    chunks = [c async for c in await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hello!"}], max_tokens=1000, stream=True,
        stream_options={"include_usage": True}, extra_body={"ignore_eos": True})]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text and sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 1, "it should stream"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 1000

    completion = await client.completions.create(model=model, prompt="Once upon a time", max_tokens=7,
                                                 extra_body={"ignore_eos": True})
    assert completion.choices[0].text and completion.usage.completion_tokens == 7


async def test_the_api_and_a_chat_share_the_engine_and_its_prefix_cache(api, chat):
    client, model = api
    await chat.change_settings({"max_tokens": 16})
    chat_reply = await chat.ask(LONG_TEXT)
    assert stats_of(chat_reply.content)["reply"] > 0
    # the same system prompt and message as the chat's: the prompt the chat left in the KV cache
    reply = await client.chat.completions.create(
        model=model, max_tokens=4, messages=[{"role": "system", "content": "You are a helpful assistant."},
                                             {"role": "user", "content": LONG_TEXT}])
    cached = reply.usage.prompt_tokens_details.cached_tokens
    assert cached > 0.5 * reply.usage.prompt_tokens, f"{cached} of {reply.usage.prompt_tokens} prompt tokens cached"

    async def api_reply(question: str, text_at: list[float]) -> int:
        """Streams one API reply; notes when its first text arrived; returns its length in tokens."""
        stream = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": question}], max_tokens=64, stream=True,
            stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
        first_text_at, last = None, None
        async for last in stream:
            if first_text_at is None and last.choices and last.choices[0].delta.content:
                first_text_at = time.monotonic()
        if first_text_at is not None:
            text_at.append(first_text_at)
        return last.usage.completion_tokens

    await chat.change_settings({"max_tokens": 8000})
    for _ in range(3):  # a client left unscheduled on a busy machine may see the chat's reply only once it ended
        before = {m.id for m in chat.replies()}
        await chat.send("Tell me a long story.")
        streaming = await chat.streaming_reply(before)  # the chat streams; now the API's requests join it
        text_at: list[float] = []
        lengths = await asyncio.gather(*(api_reply(f"Question {i}", text_at) for i in range(8)))
        assert lengths == [64] * 8
        await chat.wait_idle()
        # Served beside the chat, not after it: the API's first text came before the chat's reply was finished
        # (order holds even when the machine stalls for seconds; how far apart they came does not)
        if min(text_at) < streaming.last_at:
            return
    pytest.fail("in 3 tries the API's replies began only once the chat's reply had ended")


async def test_during_a_preset_switch_api_requests_wait_for_the_new_engine(api, chat):
    client, model = api
    running = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Go on."}], max_tokens=8000, stream=True,
        extra_body={"ignore_eos": True})
    first = await anext(aiter(running))
    assert first.choices
    switch = asyncio.create_task(chat.change_settings({"preset": "cpu"}))
    while "Stopping the running engine" not in chat.all_text() and not switch.done():
        await asyncio.sleep(0.1)
    began = time.monotonic()
    waited = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Still there?"}],
                                                  max_tokens=5, extra_body={"ignore_eos": True})
    assert waited.usage.completion_tokens == 5 and time.monotonic() - began < 150
    await switch
    assert "Switching to 'cpu': Ready" in chat.all_text()
    # the reply that was running when the engine stopped ends, it does not hang
    rest = [c async for c in running]
    assert sum(len(c.choices[0].delta.content or "") for c in rest if c.choices) < 8000 * 4
    await chat.change_settings({"preset": "custom"})  # later tests expect the test preset
    assert "Switching to 'custom': Ready" in chat.all_text()


async def test_the_status_panel_counts_api_sequences_and_a_dropped_stream_is_aborted(app_server, api, chat):
    _, model = api
    # n=3: one request, three sequences in the engine's slots
    body = {"model": model, "messages": [{"role": "user", "content": "Go on forever."}], "max_tokens": 8000,
            "stream": True, "ignore_eos": True, "n": 3}
    async with httpx.AsyncClient(base_url=app_server.url, timeout=60) as http:
        async with http.stream("POST", "/v1/chat/completions", json=body) as stream:
            assert stream.status_code == 200
            lines = stream.aiter_lines()
            while not (await anext(lines)).startswith("data: {"):
                pass
            status = await chat.ask("/status")
            assert "| Sequences from chats / the API | 0 / 3 |" in status.content, status.content
    # the client went away mid-reply: the request must be gone from the engine, not run for 8,000 tokens
    await nothing_running(chat)
    status = await chat.ask("/status")
    assert "| Sequences from chats / the API | 0 / 0 |" in status.content, status.content


BAD_REQUESTS = [  # (what is wrong, the body's changes, the status, a word the message must contain)
    ("unknown model", {"model": "gpt-4"}, 404, "does not exist"),
    ("max_tokens beyond the context", {"max_tokens": 100_000}, 400, "max_tokens"),
    ("prompt longer than the context", {"messages": [{"role": "user", "content": "word " * 12_000}]}, 400,
     "context length"),
    ("negative temperature", {"temperature": -1}, 400, "temperature"),
    ("n of 1000", {"n": 1000}, 400, "asks for 1000 sequences (n=1000); the engine has 8 sequence slots"),
    ("n of '40'", {"n": "40", "max_tokens": 1}, 400, "asks for 40 sequences (n=40)"),  # vLLM reads "40" as 40
    ("n of 40.0", {"n": 40.0, "max_tokens": 1}, 400, "asks for 40 sequences (n=40)"),
    ("n of '64'", {"n": "64", "max_tokens": 1}, 400, "asks for 64 sequences (n=64)"),
    ("no messages", {"messages": ...}, 400, "messages"),
]


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS])
async def test_bad_input_gets_an_openai_error_with_a_4xx(app_server, engine_env, case):
    _, changes, status, word = case
    body = {"model": engine_env["CHAT_MODEL"], "messages": [{"role": "user", "content": "Hi"}], **changes}
    body = {name: value for name, value in body.items() if value is not ...}  # `...`: the field is left out
    async with httpx.AsyncClient(base_url=app_server.url, timeout=120) as http:
        response = await http.post("/v1/chat/completions", json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert word in error["message"] and error["code"] == status


async def test_a_prompt_list_counts_each_prompt_n_times(app_server, engine_env):
    body = {"model": engine_env["CHAT_MODEL"], "prompt": [f"Prompt {i}" for i in range(40)], "n": 16, "max_tokens": 1}
    async with httpx.AsyncClient(base_url=app_server.url, timeout=300) as http:
        refused = await http.post("/v1/completions", json=body)
        assert refused.status_code == 400, refused.text[:300]
        assert refused.json()["error"]["message"] == (
            "This request asks for 640 sequences (40 prompts x n=16); the engine has 8 sequence slots: send fewer "
            "prompts or a smaller n.")
        within = await http.post("/v1/completions", json={**body, "prompt": [[101, 102], [103]], "n": "4"})
    assert within.status_code == 200, within.text
    assert len(within.json()["choices"]) == 8


@pytest.mark.parametrize("body, status", [(b"{not json", 400), (b'{"model": "' + b"x" * (10 * 2**20) + b'"}', 413)],
                         ids=["malformed JSON", "10 MB of JSON"])
async def test_a_broken_or_huge_body_gets_an_openai_error(app_server, body, status):
    async with httpx.AsyncClient(base_url=app_server.url, timeout=120) as http:
        response = await http.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    assert response.json()["error"]["message"]


async def test_before_the_first_start_the_slots_are_those_of_the_preset_that_will_run(engine_env, tmp_path):
    server = ChainlitServer(engine_env, tmp_path / "fresh.log").start()  # its engine has not started yet
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=httpx.Timeout(300, connect=60)) as http:
            body = {"model": engine_env["CHAT_MODEL"], "messages": [{"role": "user", "content": "Hi"}],
                    "max_tokens": 4, "ignore_eos": True}
            refused = await http.post("/v1/chat/completions", json={**body, "n": "40"})
            assert refused.status_code == 400, refused.text
            assert "the engine has 8 sequence slots" in refused.json()["error"]["message"]
            accepted = await http.post("/v1/chat/completions", json={**body, "n": 8})  # starts the engine
        assert accepted.status_code == 200, accepted.text
        assert len(accepted.json()["choices"]) == 8
    finally:
        assert server.stop() == 0


def test_off_loopback_the_api_needs_a_key(engine_env, tmp_path):
    # without the history there are no users' keys: the operator's key is the only one there could be
    refused = ChainlitServer({**engine_env, "CHAT_HISTORY": "false"}, tmp_path / "no-key.log", host="0.0.0.0")
    with pytest.raises(RuntimeError, match="chainlit exited with 1"):
        refused.start()
    assert "CHAT_API_KEY" in (tmp_path / "no-key.log").read_text()

    key = "a-long-enough-test-key"
    # The engine is not waited for: a right key gets past the key check to "starting" (503), a wrong one never does.
    signed = {"CHAINLIT_AUTH_SECRET": "a-test-secret-for-sign-in-tokens-" + "x" * 16}  # off loopback: sign-in too
    server = ChainlitServer({**engine_env, **signed, "CHAT_API_KEY": key, "CHAT_API_WAIT_S": "0"},
                            tmp_path / "key.log", host="0.0.0.0").start()
    try:
        def models(with_key: str | None) -> httpx.Response:
            headers = {"authorization": f"Bearer {with_key}"} if with_key else {}
            return httpx.get(f"{server.url}/v1/models", headers=headers, timeout=30)

        assert models(None).status_code == 401
        wrong = models("not-the-key")
        assert wrong.status_code == 401 and "CHAT_API_KEY" in wrong.json()["error"]["message"]
        right = models(key)
        assert right.status_code in (200, 503), right.text
        if right.status_code == 503:
            assert int(right.headers["retry-after"]) > 0
        assert httpx.get(server.url, timeout=30).status_code == 200, "the chat page needs no API key"
        assert httpx.get(f"{server.url}/metrics", timeout=30).status_code == 401, "the metrics sit behind the key"
        metrics = httpx.get(f"{server.url}/metrics", headers={"authorization": f"Bearer {key}"}, timeout=30)
        assert metrics.status_code == 200 and "text/plain" in metrics.headers["content-type"]
    finally:
        assert server.stop() == 0
