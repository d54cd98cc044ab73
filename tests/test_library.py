"""The library's passages and store (history/passages.py, history/library.py) on a real SQLite file through the app's
data layer: passages cut where the text breaks, Chinese searchable by its words, a document added whole or not at
all, each user's documents their own, the limits said, and the labelled questions answered from the right passage
among the project's own files (recall@5)."""

import json
from pathlib import Path

import pytest

from engine.settings import load_settings
from history import library, passages
from history.layer import HistoryLayer
from history.schema import prepare

ROOT = Path(__file__).resolve().parent.parent
LABELLED = json.loads((ROOT / "tests" / "data" / "library_set.json").read_text())


@pytest.fixture
def layer(tmp_path):
    settings = load_settings(history_db=tmp_path / "chats.db")
    prepare(settings)
    return HistoryLayer(settings)


def test_passages_end_at_paragraphs_keep_every_word_and_stay_short():
    paragraphs = [" ".join(f"word{p}x{n}" for n in range(120)) for p in range(7)]
    text = "\n\n".join(paragraphs)
    cut = passages.split(text, most=300)
    assert all(passages.size(piece) <= 300 for piece in cut)
    assert len(cut) == 4, "two paragraphs of 120 words fit a passage of 300, a third does not"
    assert " ".join(cut).split() == text.split(), "nothing is lost or reordered"
    long_line = "这是一个没有任何标点的很长的句子" * 60  # 960 characters in one run
    assert all(passages.size(piece) <= 300 for piece in passages.split(long_line))
    assert "".join(passages.split(long_line)) == long_line


def test_chinese_is_searched_by_pairs_of_characters_and_english_by_words():
    assert passages.terms("水壶除垢") == ["水壶", "壶除", "除垢"]
    assert passages.terms("Descale the K200, 每月") == ["descale", "the", "k200", "每月"]
    assert passages.question_terms("How do I descale it?") == ["descale"]
    assert passages.question_terms("How do I?") == ["how", "do", "i"], "a question of common words keeps them"


async def test_a_document_is_added_listed_found_and_removed_by_its_owner_only(layer):
    text = "\n\n".join(LABELLED["documents"]["kettle-manual.txt"] + LABELLED["documents"]["水壶说明书.txt"])
    document = await library.add(layer, "ada", "kettle.txt", 2048, text)
    assert [(d.name, d.bytes, d.passages) for d in await library.documents(layer, "ada")] == [
        ("kettle.txt", 2048, document.passages)]
    assert await library.documents(layer, "bob") == [], "another user's library does not show it"
    found = await library.search(layer, "ada", "How often should I descale?")
    assert found and "once a month" in found[0].text and found[0].document == "kettle.txt"
    assert "每个月除垢一次" in (await library.search(layer, "ada", "多久除垢？"))[0].text
    assert await library.search(layer, "bob", "descale") == [], "nor does a search of another user find it"
    assert not await library.remove(layer, "bob", document.id), "another user cannot remove it by its id"
    assert await library.remove(layer, "ada", document.id)
    assert await library.documents(layer, "ada") == [] and await library.search(layer, "ada", "descale") == []


async def test_a_document_that_fails_half_way_is_not_half_added(layer, monkeypatch):
    real = layer.execute_all

    async def failing_at_the_end(statements):  # every passage written, then the database refuses a statement
        await real([*statements, ("INSERT INTO no_such_table VALUES (1)", {})])

    monkeypatch.setattr(layer, "execute_all", failing_at_the_end)
    with pytest.raises(Exception, match="no_such_table"):
        await library.add(layer, "ada", "kettle.txt", 10, "\n\n".join(LABELLED["documents"]["kettle-manual.txt"]))
    assert await library.documents(layer, "ada") == []
    assert await library.search(layer, "ada", "descale") == [], "no passage of it stayed in the index"


async def test_the_limits_are_said_with_what_to_do(layer, monkeypatch):
    monkeypatch.setattr(library, "MAX_DOCUMENTS", 1)
    await library.add(layer, "ada", "one.txt", 10, "first")
    with pytest.raises(library.LibraryFull, match="holds 1 documents.*remove one"):
        await library.add(layer, "ada", "two.txt", 10, "second")
    await library.add(layer, "bob", "two.txt", 10, "second")  # the limit is each user's own
    monkeypatch.setattr(library, "MAX_DOCUMENTS", 10)
    monkeypatch.setattr(library, "MAX_TEXT_CHARS", 8)
    with pytest.raises(library.LibraryFull, match="more than 0 MB of text"):
        await library.add(layer, "ada", "long.txt", 10, "a longer text")
    assert [d.name for d in await library.documents(layer, "ada")] == ["one.txt"]


async def test_the_labelled_questions_find_their_passage_in_the_top_five_among_the_projects_files(layer):
    """recall@5 >= 0.9 (the issue's target), English and Chinese, with the project's own Markdown and Python
    files in the same library as documents that answer nothing asked."""
    for path in sorted([*ROOT.glob("docs/*.md"), *ROOT.glob("*/*.py")]):
        await library.add(layer, "ada", path.name, path.stat().st_size, path.read_text())
    for name, paragraphs in LABELLED["documents"].items():
        await library.add(layer, "ada", name, 1, "\n\n".join(paragraphs))
    missed = []
    for question in LABELLED["questions"]:
        found = await library.search(layer, "ada", question["q"], most=5)
        if not any(question["answer"] in passage.text for passage in found):
            missed.append((question["q"], [passage.document for passage in found]))
    recall = 1 - len(missed) / len(LABELLED["questions"])
    assert recall >= 0.9, f"recall@5 {recall:.2f}; missed: {missed}"


def test_an_at_word_names_a_document_only_where_a_document_has_that_name():
    from ui.library import _cell, picked

    kettle = library.Document("1", "kettle-manual.txt", 10, 10, 1, "2026-01-01T00:00:00Z")
    plants = library.Document("2", "养花笔记.txt", 10, 10, 1, "2026-01-01T00:00:00Z")
    for question in ("What does @dataclass do in Python?", "In CSS, what does @media do?",
                     "mail me at x @example.com"):
        assert picked(question, [kettle, plants]) == ([], [question.split("@")[1].split()[0]], question)
        assert picked(question, []) == ([], [question.split("@")[1].split()[0]], question)
    chosen, unknown, words = picked("@kettle and @养花: what does @media do?", [kettle, plants])
    assert chosen == [kettle, plants] and unknown == ["media"] and "@" not in words.replace("@media", "")
    assert "kettle" not in words and "media" in words
    assert _cell("a|b.txt") == "a\\|b.txt", "a | in a name does not end its cell of the library's table"


async def test_a_documents_opening_passages_come_first_from_each_named_document_in_turn(layer):
    one = await library.add(layer, "ada", "one.txt", 10, "\n\n".join(f"{'alpha ' * 200}{n}" for n in range(4)))
    two = await library.add(layer, "ada", "two.txt", 10, "\n\n".join(f"{'beta ' * 200}{n}" for n in range(4)))
    await library.add(layer, "bob", "three.txt", 10, "gamma")
    opened = await library.opening(layer, "ada", [one.id, two.id], most=3)
    assert [(p.document, p.position) for p in opened] == [("one.txt", 0), ("two.txt", 0), ("one.txt", 1)]
    assert await library.opening(layer, "bob", [one.id]) == [], "another user's document gives nothing"


def test_a_document_named_as_a_markdown_image_is_shown_as_written_never_fetched():
    from history.library import Passage
    from ui import library as shown
    from ui.text import plain

    import re

    image = re.compile(r"(?<!\\)!\[")  # an image's start that Markdown would render
    name = "![pixel](http://example.invalid/track.png) notes.txt"
    found = shown.Found([Passage("p1", "d1", name, 0, "text", 1.0)], 10, "")
    assert not image.search(found.sources_line()) and "notes.txt" in found.sources_line()
    assert not image.search(shown._cell(name)) and not image.search(plain(name))
