"""The API's gate on its own (no web server): what a request costs the engine, in sequences, and what a client
gets when the engine cannot serve it."""

import json

import httpx
import pytest

from engine.admission import API
from engine import presets
from api.gate import COMPLETIONS_PATH, ApiGate, Cost, planned_preset, request_cost
from engine.openai_app import request_models
from engine.engine import ChatEngine
from engine.settings import load_settings
from harness.presets import TEST_PRESET

MESSAGES = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def models():
    return request_models()


def cost(models, path: str, **body) -> Cost | None:
    return request_cost(models[path], {"model": "m", **body})


def chat_cost(models, **body) -> Cost | None:
    return cost(models, "/v1/chat/completions", messages=MESSAGES, **body)


def completion_cost(models, **body) -> Cost | None:
    return cost(models, COMPLETIONS_PATH, **body)


@pytest.mark.parametrize("n", [40, "40", 40.0, "40.0"], ids=["int", "string", "float", "string of a float"])
def test_n_counts_as_vllm_reads_it(models, n):
    assert chat_cost(models, n=n) == Cost(1, 40)
    assert completion_cost(models, prompt="Once", n=n) == Cost(1, 40)


def test_a_chat_is_one_conversation_whatever_its_messages(models):
    many = [{"role": "user", "content": f"message {i}"} for i in range(30)]
    assert cost(models, "/v1/chat/completions", messages=many, n=3).sequences == 3
    assert chat_cost(models).sequences == 1 and chat_cost(models, n=None).sequences == 1
    # a field the chat request does not have is ignored by vLLM, so it costs nothing
    assert chat_cost(models, n=2, prompt=["a"] * 50).sequences == 2


@pytest.mark.parametrize("prompt, prompts", [
    ("Once upon a time", 1),
    (["one", "two", "three"], 3),
    ([101, 102, 103, 104], 1),  # one prompt as token ids
    ([[101, 102], [103], [104, 105]], 3),  # one prompt per list of token ids
    (["word"] * 40, 40),
], ids=["string", "strings", "token ids", "lists of token ids", "40 prompts"])
def test_completions_multiply_n_by_the_prompts(models, prompt, prompts):
    assert completion_cost(models, prompt=prompt, n=16) == Cost(prompts, 16)
    assert completion_cost(models, prompt=prompt).sequences == prompts


def test_best_of_counts_where_vllm_has_it_and_is_ignored_where_it_does_not(models):
    plain = models[COMPLETIONS_PATH]
    if "best_of" not in plain.model_fields:  # vLLM ignores it: one sequence per choice
        assert request_cost(plain, {"prompt": "x", "n": 2, "best_of": 30}) == Cost(1, 2)

    class WithBestOf(plain):
        best_of: int | None = None

    assert request_cost(WithBestOf, {"prompt": ["x", "y"], "n": 2, "best_of": "6"}) == Cost(2, 6, "best_of")
    assert request_cost(WithBestOf, {"prompt": "x", "n": 3}) == Cost(1, 3)


@pytest.mark.parametrize("body", [
    b"[]", b'"text"', b'{"prompt": "x", "n": "forty"}', b'{"prompt": "x", "n": 2.5}',
    b'{"prompt": "x", "n": 0}', b'{"prompt": ""}', b'{"prompt": []}', b'{"prompt": [1, "a"]}', b'{"n": 2}',
], ids=lambda body: body.decode())
def test_bodies_vllm_refuses_are_left_to_it(models, body):
    assert request_cost(models[COMPLETIONS_PATH], json.loads(body)) is None


def test_the_message_names_the_count_the_limit_and_the_fix():
    assert Cost(1, 8).too_many(8) is None and Cost(40, 16).too_many(None) is None
    assert Cost(40, 16).too_many(8) == ("This request asks for 640 sequences (40 prompts x n=16); the engine has 8 "
                                        "sequence slots: send fewer prompts or a smaller n.")
    assert Cost(1, 40).too_many(8) == ("This request asks for 40 sequences (n=40); the engine has 8 sequence slots: "
                                       "send a smaller n.")


def test_before_the_first_start_the_slots_are_the_preset_that_will_run(tmp_path):
    custom = ChatEngine(load_settings(model=str(tmp_path), preset="custom", custom_preset=TEST_PRESET))
    assert planned_preset(custom).max_num_seqs == TEST_PRESET["max_num_seqs"]
    # `auto` without a usable GPU (this machine, or CHAT_DEVICE=cpu) runs the CPU preset
    for device in ("auto", "cpu"):
        auto = ChatEngine(load_settings(model=str(tmp_path), preset="auto", device=device))
        assert planned_preset(auto) == presets.BUILT_IN["cpu"]
    on_cpu = ChatEngine(load_settings(model=str(tmp_path), preset="8gb", device="cpu"))
    assert planned_preset(on_cpu) == presets.BUILT_IN["cpu"]


async def asgi_post(engine, path: str, body: dict) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=ApiGate(engine)), base_url="http://test") as http:
        return await http.post(path, json=body)


async def test_too_many_sequences_are_refused_before_the_engine_starts(tmp_path):
    engine = ChatEngine(load_settings(model=str(tmp_path / "no-model"), preset="custom", custom_preset=TEST_PRESET))
    refused = await asgi_post(engine, COMPLETIONS_PATH, {"model": "m", "prompt": ["x"] * 40, "n": 16})
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["message"].startswith("This request asks for 640 sequences (40 prompts x n=16)")
    # within the preset's 8 slots: let through to the start (which fails here: no model), not refused for its n
    within = await asgi_post(engine, "/v1/chat/completions", {"model": "m", "messages": MESSAGES, "n": "8"})
    assert within.status_code == 503 and "There is no model folder" in within.json()["error"]["message"]
    assert engine.api_sequences == 0


async def test_saturated_counts_the_apis_sequences(tmp_path):
    settings = load_settings(model=str(tmp_path), preset="custom", custom_preset=TEST_PRESET)
    engine = ChatEngine(settings, preset=planned_preset(ChatEngine(settings)))
    async with engine.admit("ann", TEST_PRESET["max_num_seqs"] - 1, API):
        assert not engine.saturated() and engine.status().api_sequences == TEST_PRESET["max_num_seqs"] - 1
        async with engine.admit("bob"):  # one chat more takes the last slot: an API request's n counts as chats do
            assert engine.saturated() and engine.status().chat_requests == 1
        assert not engine.saturated()
    assert engine.api_sequences == 0


async def test_an_engine_that_cannot_start_gives_api_clients_a_503_with_the_reason(tmp_path):
    engine = ChatEngine(load_settings(model=str(tmp_path / "no-model"), preset="custom", custom_preset=TEST_PRESET))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=ApiGate(engine)), base_url="http://test") as http:
        first, again = [await http.post("/v1/chat/completions", json={"model": "m", "messages": []}) for _ in range(2)]
    for response in (first, again):  # the failure is remembered: the second request does not start it again
        assert response.status_code == 503
        error = response.json()["error"]
        assert "There is no model folder" in error["message"] and "CHAT_MODEL" in error["message"]
    assert engine.client is None and engine.api_sequences == 0
