"""Every text the app writes has its words in every language, with the same placeholders, and the chat's language
picks among them (ui/words/, and history/words/ for the notices the history writes itself)."""

import re
import string

import pytest

from engine.presets import BUILT_IN
from history import words as history_words
from ui import words

CJK = re.compile(r"[\u4e00-\u9fff]")
# texts that read the same in both languages: a technical term, a format, a Chinese starter for English readers
SAME = {"setting.top_p", "cost.rate", "starter.hello", "starter.hello.ask", "status.context_value"}
TABLES = {**{f"ui/{lang}": table for lang, table in words.TABLES.items()},
          **{f"history/{lang}": table for lang, table in history_words.TABLES.items()}}


def fields(text: str) -> set[tuple[str, str]]:
    return {(name, spec) for _, name, spec, _ in string.Formatter().parse(text) if name is not None}


def words_of(text: str) -> str:
    """The text without its placeholders: a text of placeholders and punctuation alone has no language."""
    return "".join(literal for literal, *_ in string.Formatter().parse(text))


def test_every_language_has_every_key_and_nothing_else():
    assert {"en", "zh"} <= set(words.LANGUAGES) == set(history_words.TABLES), "the history speaks every language"
    for name, table in TABLES.items():
        english = (words.TEXTS if name.startswith("ui/") else history_words.TABLES["en"])
        assert table.keys() == english.keys(), f"{name}: {sorted(table.keys() ^ english.keys())}"


@pytest.mark.parametrize("key", sorted(words.TEXTS) + [f"history:{key}" for key in history_words.TABLES["en"]])
def test_each_text_has_every_language_with_the_same_placeholders(key):
    tables = history_words.TABLES if key.startswith("history:") else words.TABLES
    key = key.removeprefix("history:")
    english = tables["en"][key]
    for lang, table in tables.items():
        assert table[key].strip(), f"{key} lacks {lang}"
        assert fields(table[key]) == fields(english), f"{key}: the placeholders of {lang} differ"
    chinese = tables["zh"][key]
    if key not in SAME and re.search("[A-Za-z]", words_of(english)):
        assert CJK.search(chinese) and english != chinese, f"{key}: the Chinese is not Chinese"
        assert not CJK.search(english), f"{key}: the English holds Chinese"


def test_the_tables_of_each_area_never_share_a_key():
    import importlib

    for lang in words.LANGUAGES:
        tables = [importlib.import_module(f"ui.words.{lang}.{area}").TEXTS for area in words.AREAS]
        assert sum(len(t) for t in tables) == len(words.TABLES[lang]), lang


def test_every_built_in_preset_and_engine_state_has_its_words():
    from engine.backend import STATES

    assert {f"preset.{name}" for name in BUILT_IN} <= set(words.TEXTS)
    assert {f"state.{state}" for state in STATES} <= set(words.TEXTS)
    for name, preset in BUILT_IN.items():
        assert words.TEXTS[f"preset.{name}"] == preset.purpose, f"the {name} preset's purpose changed: say it anew"


def test_the_language_follows_the_browser_and_falls_back_to_english():
    assert words.say("command.Status", "zh-CN") == "状态" and words.say("command.Status", "zh-TW") == "状态"
    assert words.say("command.Status", "en-US") == "Status" and words.say("command.Status", "fr-FR") == "Status"
    assert words.say("command.Status") == "Status"  # outside a chat
    assert words.say("status.context_value", "zh", tokens=4096) == "4096 token"
    assert history_words.say("not_saved", "zh-CN") == history_words.TABLES["zh"]["not_saved"]
    assert history_words.say("not_saved", "fr-FR") == history_words.say("not_saved", None)


def test_a_language_lacking_a_key_says_it_in_english(monkeypatch):
    monkeypatch.setitem(words.TABLES, "fr", {"command.Status": "État"})
    assert words.say("command.Status", "fr-FR") == "État" and words.say("command.Keys", "fr") == "Keys"
    assert words.in_every_language("command.Keys") == ("Keys", "密钥")


# Values to make each of the engine's errors with, by the name of its constructor's parameter
SAMPLES = {"name": "9gb", "valid": ["auto", "4gb"], "preset": "8gb", "detail": "CUDA out of memory", "smaller": "4gb",
           "model": "baidu/ERNIE-4.5-0.3B-PT", "source": "hf-mirror.com", "done": 120_000_000, "total": 720_000_000,
           "prompt_tokens": 5000, "budget": 3072, "max_model_len": 4096, "max_tokens": 1024, "tokens": 4090,
           "wanted": "8gb", "kept": "4gb", "cause": RuntimeError("no memory"), "url": "http://gpu-box:8000"}


def engine_errors():
    """One of each error the engine raises with its own words (a bare ChatError, SettingsError and EngineStartError
    carry their raiser's words), and the variants of those whose words depend on a value."""
    import inspect

    from engine import errors

    made = []
    for cls in vars(errors).values():
        if isinstance(cls, type) and issubclass(cls, errors.ChatError) and cls is not errors.ChatError \
                and "__init__" in vars(cls):
            made.append(cls(**{p: SAMPLES[p] for p in list(inspect.signature(cls).parameters)}))
    return [*made, errors.OutOfMemoryError("2gb", "it needs 2.0 GiB", None),
            errors.DownloadError("baidu/ERNIE-4.5-0.3B-PT", "huggingface.co", "timed out", 0, 0)]


@pytest.mark.parametrize("error", engine_errors(), ids=lambda error: type(error).__name__)
def test_each_of_the_engines_errors_is_said_in_chinese_with_its_values(error):
    english, chinese = str(error), words.error_text(error, "zh-CN")
    assert words.error_text(error, "en-US") == english
    assert chinese != english and CJK.search(chinese), f"no Chinese text fits: {english}"
    for value in SAMPLES.values():  # the values it was made with come across
        if isinstance(value, str) and value in english:
            assert value in chinese, value


def test_the_engines_progress_is_said_in_chinese():
    from engine.download import Transfer

    transfer = Transfer("baidu/ERNIE-4.5-0.3B-PT")
    stages = [transfer.describe()]
    transfer.total, transfer.done = 720_000_000, 360_000_000
    stages.append(transfer.describe())
    stages += ["Loading models/tiny-ernie (cpu preset)", "Warming up", "Ready", "'4gb' already runs"]
    for stage in stages:
        said = words.again("stage.", stage, "zh-CN")
        assert said != stage and CJK.search(said), stage
    loading = words.again("stage.", "Loading models/tiny-ernie (cpu preset)", "zh")
    assert loading == "正在加载 models/tiny-ernie（cpu 预设）"
    assert words.again("stage.", "Something new", "zh") == "Something new"


def test_texts_that_catch_the_engines_values_take_them_as_they_come():
    """Their values are caught as text from the engine's words: a format of a number could not apply."""
    for key in words.TEXTS:
        if key.startswith(("error.", "stage.")):
            texts = [table[key] for table in words.TABLES.values()]
            assert not [spec for text in texts for _, _, spec, _ in string.Formatter().parse(text) if spec], key


def test_no_placeholder_shadows_the_arguments_of_say():
    """`say(key, lang, **values)`: a text with a {key} or {lang} placeholder could never be filled."""
    import inspect

    taken = set(inspect.signature(words.say).parameters) - {"values"}
    assert not [key for key, english in words.TEXTS.items() if {name for name, _ in fields(english)} & taken]


def test_chainlits_own_english_words_call_a_chat_a_chat_never_a_thread():
    """The history's list said "No threads found" and its menu "Rename Thread": the app says chat everywhere
    (the Chinese texts say 对话)."""
    import json
    from pathlib import Path

    translations = Path(__file__).parent.parent / ".chainlit" / "translations"

    def texts(tree: dict, path: str = ""):
        for key, value in tree.items():
            yield from texts(value, f"{path}{key}.") if isinstance(value, dict) else [(path + key, value)]

    english = dict(texts(json.loads((translations / "en-US.json").read_text())))
    assert not {key: text for key, text in english.items() if "thread" in text.lower()}
    assert english["threadHistory.sidebar.empty"] == "No chats yet"
    chinese = dict(texts(json.loads((translations / "zh-CN.json").read_text())))
    assert not {key: text for key, text in chinese.items() if "线程" in text}


def test_key_commands_are_read_in_either_language_with_any_space():
    from ui.keys import NEW, REVOKE, after

    assert after("新建笔记本", NEW) == "笔记本" and after("撤销1", REVOKE) == "1"
    assert after("新建\u3000笔记本", NEW) == "笔记本" and after("new\u3000laptop", NEW) == "laptop"
    assert after("new laptop", NEW) == "laptop" and after("newer", NEW) is None and after("list", REVOKE) is None


def test_the_start_line_is_said_in_the_browsers_language_and_only_while_a_start_is_under_way():
    from engine.reports import Progress
    from ui import start_line

    start_line.note(Progress("Checking the device and the model", 3.0))
    assert start_line.line("starting", "zh") == "⏳ 正在启动模型引擎：正在检查设备和模型（3 秒）"
    assert start_line.line("waking", "en").startswith("⏳ Waking the model engine")
    assert all(start_line.line(state, "en") is None for state in ("ready", "asleep", "failed"))


def test_on_a_processor_the_chinese_says_memory_not_gpu_memory_and_the_status_table_is_chinese():
    from ui import words

    try:
        words.on_processor(False)
        assert words.say("setting.preset", "zh") == "显存预设", "a GPU's memory on a GPU"
        words.on_processor(True)
        assert words.say("setting.preset", "zh") == "内存预设"
        plain = [key for key, chinese in words.TABLES["zh"].items() if "{" not in chinese]
        assert all("显存" not in words.say(key, "zh") for key in plain)
        assert words.again("device.", "CPU (2 cores)", "zh") == "CPU（2 核）"
        assert "KV cache" not in words.say("status.kv", "zh")
    finally:
        words.on_processor(False)


def test_the_contexts_fill_warns_once_the_next_message_will_cut_the_oldest_turns():
    from ui import context_fill

    said, full = context_fill.line(1234, 4096, 1024, "en")
    assert said == "context 1,234 / 4,096 tokens" and not full
    said, full = context_fill.line(2900, 4096, 1024, "en")  # 90% of the 3,072 tokens left beside the reply
    assert full and "drop the oldest turns" in said
    assert "下一条消息将舍弃" in context_fill.line(2900, 4096, 1024, "zh")[0]
    assert context_fill.line(10, None, 1024) is None, "nothing before the engine says its context"


def test_a_chinese_chats_stored_cut_off_note_and_the_historys_notices_are_in_chinese(monkeypatch):
    """history/ writes these itself (it cannot use ui/words/): the chat's language still picks them."""
    import asyncio

    from chainlit_door import sessions as door
    from history import writes

    class Layer:
        async def create_step(self, step):
            stored.append(step)

    class Reply:
        content, metadata, created_at = "写到一半", {}, "2026-01-01T00:00:00Z"

        def to_dict(self):
            return {"id": "reply", "output": self.content}

    class Session:
        language = "zh-CN"

    async def saved() -> None:
        saver = writes.ReplySaver(Reply(), Layer())
        saver.saved_at -= writes.SAVE_EVERY_S
        saver.shown()
        await saver.settle()

    async def notice(content):
        said.append(content)

    stored, said, session = [], [], Session()
    monkeypatch.setattr(door, "language", lambda: session.language)
    monkeypatch.setattr(door, "session_or_none", lambda: session)
    monkeypatch.setattr(writes, "_notice", notice)
    asyncio.run(saved())
    assert stored[0]["output"] == "写到一半\n\n" + history_words.TABLES["zh"]["cut_off"]
    assert CJK.search(history_words.TABLES["zh"]["cut_off"])
    asyncio.run(writes.tell_failing("SQLite", OSError("disk full")))
    assert len(said) == 1 and CJK.search(said[0]) and "SQLite" in said[0] and "disk full" in said[0], said
    session.language = "en-US"
    asyncio.run(saved())
    assert stored[1]["output"].endswith(writes.CUT_OFF_NOTE), "an English chat's note is the English one"


def test_a_new_chinese_chat_is_told_the_default_system_prompt_in_chinese_and_a_set_one_as_written(monkeypatch):
    from chainlit_door import sessions as door
    from engine.settings import Settings, load_settings
    from ui import sidebar

    assert words.TEXTS["setting.system_prompt.default"] == Settings.model_fields["system_prompt"].default, \
        "the app's default system prompt changed: say it anew in every language"
    language = ["zh-CN"]
    monkeypatch.setattr(door, "language", lambda: language[0])
    assert sidebar.defaults(load_settings(), "cpu").system_prompt == "你是一个乐于助人的助手。"
    assert sidebar.defaults(load_settings(system_prompt="Answer as a pirate."), "cpu").system_prompt == \
        "Answer as a pirate.", "the operator's own prompt is never changed"
    language[0] = "en-US"
    assert sidebar.defaults(load_settings(), "cpu").system_prompt == "You are a helpful assistant."


def test_a_chinese_chats_export_has_chinese_headings_and_an_english_one_english():
    from history import exchange

    turns = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}]
    args = (turns, "baidu/ERNIE-4.5-0.3B-PT", "cpu", {"temperature": 0.8}, "你是一个乐于助人的助手。", "")
    chinese, english = exchange.as_markdown(*args, "zh-CN"), exchange.as_markdown(*args)
    assert chinese.startswith("# 对话") and "- 模型: `baidu/ERNIE-4.5-0.3B-PT`" in chinese and "## 你\n" in chinese
    assert not any(word in chinese for word in ("Model", "Sampling", "System prompt", "## You")), chinese
    assert english.startswith("# Chat") and "## You\n" in english and "- Memory preset: `cpu`" in english
