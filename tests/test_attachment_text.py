"""Attachments without a server: files read as text (or refused), and the prompt they make with the tiny model's
tokenizer, cut to the context where they do not fit."""

import io
import time

import pytest

from engine.chat import as_text, build_prompt, plain
from engine.errors import ContextTooLongError
from engine.reports import Stats
from ui import attachments, pdf_reader
from ui.attachments import Refused

SYSTEM = "You are a helpful assistant."


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF showing `text` in Helvetica, written by hand (offsets in its cross-reference table)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    table = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, table)
    return bytes(out)


@pytest.mark.parametrize("data, text", [
    ("naïve café\r\nline two".encode(), "naïve café\nline two"),
    (b"\xef\xbb\xbfwith a BOM", "with a BOM"),
    ("UTF-16 有字".encode("utf-16"), "UTF-16 有字"),
    ("Ein Bericht über Größe und Maße, für die Übersicht. ".encode("cp1252") * 20,
     "Ein Bericht über Größe und Maße, für die Übersicht. " * 20),
])
def test_text_files_are_read_in_their_encoding_with_plain_newlines(data, text):
    assert attachments.decode(data) == text


def test_binary_data_is_refused_whatever_the_file_claims():
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
    with pytest.raises(Refused, match="binary"):
        attachments.decode(png)


def test_a_pdf_gives_its_text_and_a_broken_or_empty_one_is_refused(tmp_path):
    path = tmp_path / "paper.pdf"
    path.write_bytes(minimal_pdf("Attention is all you need"))
    assert attachments.read(str(path)) == "Attention is all you need"
    path.write_bytes(minimal_pdf(""))
    with pytest.raises(Refused, match="without text"):
        attachments.read(str(path))
    path.write_bytes(b"%PDF-1.4\nnot a pdf at all")
    with pytest.raises(Refused):
        attachments.read(str(path))


def test_a_pdf_locked_with_a_password_is_refused_saying_so(tmp_path):
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("secret", algorithm="RC4-128")
    path = tmp_path / "locked.pdf"
    with open(path, "wb") as out:
        writer.write(out)
    with pytest.raises(Refused, match="password"):
        attachments.read(str(path))


def slow_pdf(pages: int = 10) -> bytes:
    """A PDF of about 16 KB whose pages share one 6 MB content stream of text operators that show nothing: under
    pypdf's own limit on a stream's tokens, and seconds of pypdf's time for each page that reads it."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    content = DecodedStreamObject()
    content.set_data(b"BT /F1 1 Tf () Tj ET\n" * 270_000)
    shared = writer._add_object(content.flate_encode())
    font = writer._add_object(DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"):
                                                NameObject("/Type1"),
                                                NameObject("/BaseFont"): NameObject("/Helvetica")}))
    for _ in range(pages):
        page = writer.add_blank_page(200, 200)
        page[NameObject("/Contents")] = shared
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(
            {NameObject("/F1"): font})})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_pdf_built_to_be_slow_is_refused_within_the_time_per_page_and_in_all(tmp_path, monkeypatch):
    path = tmp_path / "slow.pdf"
    path.write_bytes(slow_pdf())
    assert path.stat().st_size < 40_000
    monkeypatch.setattr(pdf_reader, "PAGE_S", 1.0)  # its first page alone takes seconds
    started = time.monotonic()
    # the page that passes 1 s first: page 1 on most processors, a later one where the first reads faster
    with pytest.raises(Refused, match=r"took too long to read.*page \d+ alone took more than 1 s.*Attach its text"):
        attachments.read(str(path))
    monkeypatch.setattr(pdf_reader, "PAGE_S", 60.0)
    monkeypatch.setattr(pdf_reader, "TOTAL_S", 2.0)  # each page is under its own limit: the whole reading is not
    with pytest.raises(Refused, match=r"took too long to read: more than 2 s, .*; nothing of it was used"):
        attachments.read(str(path))
    assert time.monotonic() - started < 30, "each reading stopped at its limit (without one: minutes)"


async def test_five_slow_pdfs_in_one_message_share_one_budget_and_are_refused_within_it(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import chainlit as cl
    from chainlit.context import init_http_context

    init_http_context()
    monkeypatch.setattr(pdf_reader, "PAGE_S", 60.0)  # each page under its own limit
    monkeypatch.setattr(pdf_reader, "TOTAL_S", 3.0)
    files = []
    for n in range(5):
        (tmp_path / f"slow{n}.pdf").write_bytes(slow_pdf())
        files.append(SimpleNamespace(name=f"slow{n}.pdf", path=str(tmp_path / f"slow{n}.pdf")))
    sent = []

    async def shown(self):
        sent.append(self.content)
        return self

    monkeypatch.setattr(cl.ErrorMessage, "send", shown)
    message = cl.Message(content="Summarise these", elements=files)
    started = time.monotonic()
    assert await attachments.question(message) is None
    assert time.monotonic() - started < 3.0 + 5, "one budget for the message's files, not one per file"
    assert sent and sent[0].count("took too long to read") == 1
    assert sent[0].count("used up the 3 s") == 4, sent[0]


def test_a_pdf_stops_being_read_once_its_text_passes_the_limit():
    with pytest.raises(Refused, match=r"holds more than .* of text \(seen by page 1\); attach the part you need"):
        attachments.pdf_text(minimal_pdf("many words " * 200), 1000)
    assert attachments.pdf_text(minimal_pdf("many words " * 20), 1000).startswith("many words")


def test_an_empty_file_is_refused_saying_so(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"")
    with pytest.raises(Refused, match="is empty"):
        attachments.read(str(path))


def test_the_refusal_names_what_is_accepted_from_the_upload_settings():
    accepted = attachments.accepted()
    for part in (".txt", ".md", ".py", ".csv", ".json", "PDFs", "at most 5 files of 1 MB"):
        assert part in accepted


def test_an_attachment_goes_before_the_words_in_a_fence_longer_than_its_own():
    message = {"role": "user", "content": "What does it print?",
               "attachments": [{"name": "demo.md", "text": "```python\nprint(1)\n```"}]}
    assert as_text(message) == "demo.md\n````\n```python\nprint(1)\n```\n````\n\nWhat does it print?"
    assert as_text({**message, "content": ""}).endswith("````"), "a file sent without words is the whole message"


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def ask(words: str, *files: tuple[str, str]) -> dict:
    return {"role": "user", "content": words, "attachments": [{"name": n, "text": t} for n, t in files]}


def numbered_lines(count: int) -> str:
    return "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(count))


def test_a_file_that_fits_goes_whole_and_one_that_does_not_is_cut_keeping_the_words(tokenizer):
    small = build_prompt(tokenizer, SYSTEM, [ask("Summarize.", ("notes.txt", numbered_lines(20)))], 2048, 256)
    assert small.cut == () and numbered_lines(20) in tokenizer.decode(small.token_ids)
    long = numbered_lines(2000)
    prompt = build_prompt(tokenizer, SYSTEM, [ask("Summarize this log, please.", ("server.log", long))], 2048, 256)
    (cut,) = prompt.cut
    assert cut.name == "server.log" and 0 < cut.left_out_tokens < cut.total_tokens
    assert (2048 - 256) * 0.95 <= len(prompt.token_ids) <= 2048 - 256, "the cut fills what the reply leaves"
    text = prompt.messages[-1]["content"]
    assert text.endswith("Summarize this log, please.") and text.startswith("server.log\n```\nline 0:")
    kept = text.split("```\n", 1)[1].rsplit("\n```", 1)[0]
    assert long.startswith(kept) and kept.endswith("dog"), "the start of the file, cut at a line's end"
    whole = len(tokenizer.encode(long, add_special_tokens=False))
    assert abs(cut.total_tokens - whole) <= 4, "the count is the file's own tokens"


def test_two_files_share_the_room_and_a_small_one_stays_whole(tokenizer):
    prompt = build_prompt(tokenizer, SYSTEM, [ask("Compare.", ("a.txt", numbered_lines(3000)),
                                                  ("b.txt", numbered_lines(10)), ("c.txt", numbered_lines(3000)))],
                          4096, 512)
    assert [c.name for c in prompt.cut] == ["a.txt", "c.txt"]
    a, c = (cut.total_tokens - cut.left_out_tokens for cut in prompt.cut)
    assert abs(a - c) < 40, "the two large files get about the same share"
    assert numbered_lines(10) in prompt.messages[-1]["content"]


def test_history_goes_before_an_attachment_is_cut_and_words_too_long_are_an_error(tokenizer):
    chat = [{"role": "user", "content": "Earlier question"}, {"role": "assistant", "content": "Earlier answer"}]
    fits_alone = ask("Now this.", ("mid.txt", numbered_lines(40)))
    prompt = build_prompt(tokenizer, SYSTEM, [*chat * 20, fits_alone], 2048, 256)
    assert prompt.cut == () and prompt.dropped_messages > 0, "old turns go first; the file stays whole"
    prompt = build_prompt(tokenizer, SYSTEM, [*chat, ask("And this.", ("big.txt", numbered_lines(900)))], 2048, 256)
    assert prompt.cut and prompt.dropped_messages == 2
    with pytest.raises(ContextTooLongError):
        build_prompt(tokenizer, SYSTEM, [ask("word " * 3000, ("tiny.txt", "x"))], 2048, 256)


def test_a_cut_turn_is_kept_as_the_model_read_it(tokenizer):
    asked = ask("Summarize.", ("a.txt", numbered_lines(2000)), ("b.txt", "short"))
    prompt = build_prompt(tokenizer, SYSTEM, [asked], 2048, 256)
    sent = attachments.as_sent(asked, Stats(0.01, 100.0, len(prompt.token_ids), 16, 0, "stop", 0, 1.0, cut=prompt.cut))
    assert plain([sent]) == list(prompt.messages), "the chat's later prompts render what this one did"
    assert sent["attachments"][1] == {"name": "b.txt", "text": "short"} and asked["attachments"][0]["text"] == \
        numbered_lines(2000), "the file itself is not changed"
    assert attachments.as_sent(asked, None) is asked, "a stopped reply (no stats) keeps the turn as asked"
