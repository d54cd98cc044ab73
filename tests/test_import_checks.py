"""What a chat's import, its sidebar and its stored steps take from outside, checked without a server: an import
file is read as a chat or refused with a sentence naming the problem (the parser fuzzed too), a stored sidebar
value that no longer passes costs only itself, and a step is never written into another chat's thread.
The same paths through a real server and the socket: tests/test_bad_input_server.py."""

import json
import random
import time

import pytest

from engine.settings import load_settings
from harness.import_fuzz import fuzzed_import
from history import exchange, tables
from history.layer import HistoryLayer
from history.schema import prepare
from history.turns import turns_from
from ui import sidebar

PAIR = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def _refusal(data) -> str:
    with pytest.raises(exchange.ImportRefused) as refused:
        exchange.parse(data if isinstance(data, bytes) else json.dumps(data).encode(), 4096)
    return str(refused.value)


def test_deeply_nested_json_is_refused_by_name_not_as_a_crash():
    said = _refusal(b"[" * 100_000 + b"]" * 100_000)
    assert "nested too deeply" in said and "export the chat again" in said


def test_json_lines_import_as_a_chat_and_a_broken_one_is_named_as_either_format():
    lines = "\n".join(json.dumps(message) for message in PAIR).encode()
    assert exchange.parse(lines, 4096).turns == PAIR
    assert "not valid JSON nor JSON Lines" in _refusal(lines + b"\n{oops")


def test_a_chat_must_begin_with_a_question_and_each_reply_answer_one():
    assert "begins with a user's message" in _refusal([PAIR[1], PAIR[0]])
    assert "second assistant message in a row" in _refusal([*PAIR, PAIR[1]])
    questions = exchange.parse(json.dumps([PAIR[0], PAIR[0], *PAIR]).encode(), 4096)
    assert [t["role"] for t in questions.turns] == ["user", "user", "user", "assistant"], "questions in a row import"


def test_a_text_part_must_be_text_not_an_object_shown_as_python():
    said = _refusal([{"role": "user", "content": [{"type": "text", "text": {"a": 1}}]}])
    assert "is not a string" in said and "{'a': 1}" not in said


def test_a_title_or_sampling_of_the_wrong_kind_is_left_out_and_said():
    imported = exchange.parse(json.dumps({"title": {"x": 1}, "sampling": [7], "messages": PAIR}).encode(), 4096)
    assert imported.turns == PAIR and imported.title == ""
    assert imported.dropped == ["its title (not text)", "its sampling settings (not an object of names and values)"]


def test_a_stored_sidebar_value_that_no_longer_passes_falls_back_alone():
    settings = load_settings()
    stored = {"temperature": 5, "system_prompt": "You are a pirate", "max_tokens": 32, "top_p": "x" * 900_000,
              "show_stats": False, "preset": "nonsense"}
    prefs = sidebar.resumed(stored, settings, "auto")
    defaults = sidebar.defaults(settings, "auto")
    assert (prefs.system_prompt, prefs.sampling.max_tokens, prefs.show_stats) == ("You are a pirate", 32, False)
    assert prefs.sampling.temperature == defaults.sampling.temperature and prefs.preset == "auto"
    assert prefs.sampling.top_p == defaults.sampling.top_p
    refused = sidebar.each_valid(stored, defaults, settings)[1]
    assert set(refused) == {"temperature", "top_p"} and len(refused["top_p"]) < 400, "a huge value is not quoted"


def test_an_imported_question_without_its_answer_stays_in_the_turns():
    steps = [{"id": "q1", "type": "user_message", "output": "first", "metadata": {"imported": True}},
             {"id": "a1", "type": "assistant_message", "output": "one", "metadata": {"for": "q1", "answer": "one"}},
             {"id": "q2", "type": "user_message", "output": "last", "metadata": json.dumps({"imported": True})},
             {"id": "q3", "type": "user_message", "output": "refused here", "metadata": {}}]
    assert [(t["role"], t["content"]) for t in turns_from({"steps": steps}, {})] == [
        ("user", "first"), ("assistant", "one"), ("user", "last")]


async def test_chainlits_layer_moves_a_step_by_its_id_and_ours_keeps_it_in_its_thread(tmp_path):
    """Still needed: Chainlit's own create_step upserts by id into whatever thread the write names. Still works:
    the app's layer refuses that write, and another chat's attachments row is not overwritten either."""
    from chainlit.context import init_http_context
    from chainlit.data.sql_alchemy import SQLAlchemyDataLayer

    init_http_context()  # as Chainlit's routes run: a write outside a chat's socket is not queued
    settings = load_settings(history_db=tmp_path / "chats.db")
    prepare(settings)
    layer = HistoryLayer(settings)
    for thread in ("alice-thread", "bob-thread"):
        await layer.update_thread(thread, name=thread)
    step = {"id": "alice-message", "threadId": "alice-thread", "type": "user_message", "output": "alice's words",
            "name": "alice", "createdAt": "2026-01-01T00:00:00Z"}
    await layer.create_step(step)
    await tables.keep_attachment(layer, "alice-message", 0, "alice-thread", "a.txt", "alice's file")

    async def where(step_id):
        return await layer.execute_sql('SELECT "threadId", output FROM steps WHERE id = :id', {"id": step_id})

    moved = {**step, "threadId": "bob-thread", "output": "bob's words"}
    await layer.create_step(moved)
    await layer.update_step(moved)
    fresh = HistoryLayer(settings)  # another process: nothing remembered
    await fresh.create_step(moved)
    await tables.keep_attachment(layer, "alice-message", 0, "bob-thread", "b.txt", "bob's file")
    assert await where("alice-message") == [{"threadId": "alice-thread", "output": "alice's words"}]
    assert [(r["name"], r["text"]) for r in await tables.attachments(layer, "alice-thread")] == [("a.txt",
                                                                                                   "alice's file")]
    await layer.create_step({**step, "output": "alice's words, edited"})  # a write into its own thread goes on
    assert (await where("alice-message"))[0]["output"] == "alice's words, edited"

    await SQLAlchemyDataLayer.create_step.__wrapped__(layer, moved)  # Chainlit's own, without the app's check
    assert await where("alice-message") == [{"threadId": "bob-thread", "output": "bob's words"}], \
        "Chainlit's layer no longer moves a step by its id: the check in history/layer.py may go"


# ---- the import's parser, fuzzed -------------------------------------------------------------------------------

@pytest.mark.slow
def test_fuzzed_import_files_become_a_chat_or_a_clear_refusal_in_bounded_time():
    rng, settings = random.Random(51), load_settings()
    base, outcomes, deadline = sidebar.defaults(settings, "auto"), {"chat": 0, "refused": 0}, time.monotonic() + 60
    for _ in range(3000):
        data = fuzzed_import(rng)
        started = time.monotonic()
        try:
            imported = exchange.parse(data, 4096)
        except exchange.ImportRefused as refused:
            said = str(refused)
            assert len(said) < 1000 and (":" in said), f"a refusal says what and how to fix it: {said[:300]!r}"
            outcomes["refused"] += 1
        else:
            assert imported.turns and imported.turns[0]["role"] == "user"
            assert all(isinstance(t["content"], str) for t in imported.turns)
            sidebar.each_valid(imported.settings, base, settings)  # the import's settings check never raises
            outcomes["chat"] += 1
        assert time.monotonic() - started < 5, f"one file of {len(data):,} bytes took too long"
        if time.monotonic() > deadline:
            break
    assert outcomes["chat"] > 50 and outcomes["refused"] > 50, outcomes
