"""The files users download: both layouts of `baidu/ERNIE-4.5-0.3B-PT` (harness/ernie_layouts.py) start, chat and
stop on `<|end_of_sentence|>` without remote code, and a start that fails names the exception that ended it."""

import json
import shutil

import openai
import pytest
from transformers import AutoTokenizer

from engine import model_files, presets, startup
from engine.chat import build_prompt, stop_token_ids
from engine.errors import DamagedModelError, EngineStartError
from engine.settings import Sampling, load_settings
from history.turns import turns_from
from harness.chat_client import ChatClient
from harness.presets import APP_PRESET, TEST_PRESET
from harness.replies import ask, collect, stats_of
from harness.server import ChainlitServer

BEGIN, END = "<|begin_of_sentence|>", "<|end_of_sentence|>"
END_ID = 100272
LAYOUTS = ["first_layout_model", "current_layout_model"]
ROOT_CAUSE = RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
REMOTE_CODE_WARNING = ("WARNING 12-03 23:56:09 [dynamic_module.py:62] ValueError: The repository /m contains custom "
                       "code which must be executed to correctly load the model.")


def test_the_first_layouts_class_is_served_under_its_new_name(first_layout_model, current_layout_model):
    assert json.loads((first_layout_model / "config.json").read_text())["architectures"] == ["Ernie4_5_ForCausalLM"]
    overrides = model_files.engine_overrides(first_layout_model)
    assert overrides["hf_overrides"]["architectures"] == ["Ernie4_5ForCausalLM"]
    assert model_files.architectures(first_layout_model) == ["Ernie4_5ForCausalLM"]
    assert model_files.engine_overrides(current_layout_model) == {}, "the current layout is served as it is"


def test_both_layouts_tokenize_alike_with_ernies_ids_and_render_its_template(first_layout_model,
                                                                             current_layout_model):
    first, current = (AutoTokenizer.from_pretrained(path) for path in (first_layout_model, current_layout_model))
    assert not (first_layout_model / "tokenizer.json").exists(), "built from tokenizer.model, no remote code run"
    for tokenizer in (first, current):
        assert len(tokenizer) == 103_424 and stop_token_ids(tokenizer) == [2, END_ID]
        assert tokenizer.convert_tokens_to_ids([BEGIN, END, "<unk>", "<s>", "</s>", "0", "9"]) == \
            [100273, END_ID, 0, 1, 2, 3, 12]
        chat = [{"role": "user", "content": "Name three colours."}]
        prompt = build_prompt(tokenizer, "Be brief.", chat, 512, 64)
        assert tokenizer.decode(prompt.token_ids) == f"{BEGIN}Be brief.\nUser: Name three colours.\nAssistant: "
        going_on = build_prompt(tokenizer, "", [*chat, {"role": "assistant", "content": "Red, green and"}], 512, 64,
                                continue_reply=True)
        assert tokenizer.decode(going_on.token_ids) == f"{BEGIN}User: Name three colours.\nAssistant: Red, green and"
    text = "Hello 你好 12\n```code```"
    assert first.encode(text) == current.encode(text)


def test_a_reopened_chat_is_rendered_alike_by_both_layouts(first_layout_model, current_layout_model):
    stored = {"steps": [  # as the history gives a chat back: the reply's text under its cost line, its answer apart
        {"id": "q1", "type": "user_message", "output": "Name three colours."},
        {"id": "a1", "type": "assistant_message", "output": "Red, green, blue.\n\n*0.1 s to first token*",
         "metadata": json.dumps({"for": "q1", "answer": "Red, green, blue."})},
        {"id": "q2", "type": "user_message", "output": "写一首诗"},
        {"id": "a2", "type": "assistant_message", "output": "春眠不觉晓",
         "metadata": {"for": "q2", "answer": "春眠不觉晓"}}]}
    turns = [*turns_from(stored, {}), {"role": "user", "content": "And two more?"}]
    want = (f"{BEGIN}Be brief.\nUser: Name three colours.\nAssistant: Red, green, blue.{END}User: 写一首诗\n"
            f"Assistant: 春眠不觉晓{END}User: And two more?\nAssistant: ")
    rendered = []
    for path in (first_layout_model, current_layout_model):
        tokenizer = AutoTokenizer.from_pretrained(path)
        prompt = build_prompt(tokenizer, "Be brief.", turns, 512, 64)
        assert tokenizer.decode(prompt.token_ids) == want and prompt.dropped_messages == 0
        rendered.append(prompt.token_ids)
    assert rendered[0] == rendered[1]


def test_a_folder_with_a_config_but_no_tokenizer_says_which_files_are_missing(first_layout_model, tmp_path):
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    shutil.copy(first_layout_model / "config.json", folder)
    with pytest.raises(DamagedModelError) as refused:
        startup.check_model(str(folder))
    assert "tokenizer.json nor tokenizer.model" in str(refused.value) and "Download it again" in str(refused.value)


def test_the_exception_that_ended_the_start_wins_over_a_warning_printed_before():
    printed = [REMOTE_CODE_WARNING, "INFO 12-03 23:56:10 [core.py:93] Initializing a V1 LLM engine"]
    own = startup.classify_start_error(KeyError("rope_parameters"), "m", presets.BUILT_IN["4gb"], printed)
    assert "KeyError: 'rope_parameters'" in str(own) and "custom code" not in str(own)
    # vLLM's pointer to its engine process: the last exception that process raised, not its warnings
    raised = [*printed, "Traceback (most recent call last):", "(EngineCore pid=7) AssertionError: head size 16",
              "ERROR 12-03 23:56:11 [core.py:700] EngineCore failed to start."]
    core = startup.classify_start_error(ROOT_CAUSE, "m", presets.BUILT_IN["4gb"], raised)
    assert "AssertionError: head size 16" in str(core) and "See root cause" not in str(core)
    only_warned = startup.classify_start_error(ROOT_CAUSE, "m", presets.BUILT_IN["4gb"], printed)
    assert "custom code" not in str(only_warned) and "Engine core initialization failed" in str(only_warned)


async def _engine(folder):
    from engine.engine import ChatEngine

    chat = ChatEngine(load_settings(model=str(folder), preset="custom", custom_preset=TEST_PRESET))
    await chat.ensure_started()
    return chat


@pytest.mark.parametrize("model", LAYOUTS)
async def test_each_layout_starts_and_its_replies_stop_at_the_end_of_sentence(model, request):
    chat = await _engine(request.getfixturevalue(model))
    try:
        assert chat.host.stop_ids == [2, END_ID]
        for _ in range(3):
            deltas, stats = await collect(chat.stream([{"role": "user", "content": "Hello!"}],
                                                      Sampling(max_tokens=1000)))
            assert stats.finish_reason == "stop" and stats.generated_tokens < 1000
            assert END not in "".join(deltas), "the end token ends the reply; it is not shown"
    finally:
        chat.shutdown()


async def test_the_first_layout_without_the_new_name_fails_saying_what_vllm_said(first_layout_model, monkeypatch):
    monkeypatch.setattr(model_files, "engine_overrides", lambda folder: {})
    with pytest.raises(EngineStartError) as failed:
        await _engine(first_layout_model)
    said = str(failed.value)
    assert "Model architectures ['Ernie4_5_ForCausalLM'] are not supported" in said, said
    assert "custom code" not in said and "Supported architectures" not in said and "config.json" in said


@pytest.mark.parametrize("model", LAYOUTS)
async def test_through_the_server_each_layout_chats_continues_reopens_and_answers_the_api(model, request,
                                                                                        tmp_path):
    folder = request.getfixturevalue(model)
    env = {"CHAT_MODEL": str(folder), "CHAT_PRESET": "custom", "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET)}
    server = ChainlitServer(env, tmp_path / "chainlit.log").start()
    try:
        client = await ChatClient(server.url).connect()
        try:
            await client.change_settings({"max_tokens": 1000})
            first = await ask(client, "Name three colours.")
            assert "'max new tokens' limit" not in first, "the reply ended at the end of sentence"
            await client.change_settings({"max_tokens": 2})
            cut = await client.ask("Go on.")
            assert "'max new tokens' limit" in cut.content
            await client.change_settings({"max_tokens": 1000})
            await client.click(client.action("continue_reply"))
            await _until_finished(client, cut)
        finally:
            await client.close()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        reopened = await ChatClient(server.url, thread_id=client.thread_id).connect()
        try:
            answers = _answers(reopened.resumed)
            third = await ask(reopened, "Thanks.")
            turns = [{"role": "user", "content": "Name three colours."}, {"role": "assistant", "content": answers[0]},
                     {"role": "user", "content": "Go on."}, {"role": "assistant", "content": answers[1]},
                     {"role": "user", "content": "Thanks."}]
            expected = build_prompt(tokenizer, load_settings().system_prompt, turns, 10240, 1000)
            assert stats_of(third)["prompt"] == len(expected.token_ids), "the reopened chat renders ERNIE's template"
        finally:
            await reopened.close()
        api = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused-on-loopback", max_retries=0,
                                 timeout=300)
        reply = await api.chat.completions.create(model=str(folder), max_tokens=1000,
                                                  messages=[{"role": "user", "content": "Hello!"}])
        assert reply.choices[0].finish_reason == "stop" and reply.choices[0].model_extra["stop_reason"] == END_ID
    finally:
        assert server.stop() == 0


def _answers(thread: dict) -> list[str]:
    """The replies' text as the stored chat keeps it for the prompt (without notes and cost lines)."""
    metadata = [step.get("metadata") or {} for step in thread["steps"] if step.get("name") == "ERNIE Chat"]
    metadata = [json.loads(m) if isinstance(m, str) else m for m in metadata]
    return [m["answer"] for m in metadata if "answer" in m]


async def _until_finished(client, message, timeout: float = 300):
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while "'max new tokens' limit" in message.content or "reply tokens" not in message.content:
        assert time.monotonic() < deadline, f"the continued reply did not end: {message.content[-300:]!r}"
        await asyncio.sleep(0.05)
