"""The library (history/library.py), measured on this machine: adding a 300-page PDF, searching among 1,000
documents, recall@5 of the labelled questions there, on SQLite and on PostgreSQL; and what the passages cost the
reply's first token, with the prefix cache and without it.

- The PDF: 300 pages of about 2,400 characters each, written here (plain PDF text operators, Helvetica); its add is
  the app's: pypdf's text (ui/attachments.read), the split into passages, and the one transaction.
- The 1,000 documents: the labelled set's 8 (tests/data/library_set.json) and 992 real texts that answer none of
  its questions: the Markdown, reStructuredText, text and Python files of the installed packages (the first by
  name of those between 2 and 200 kB), and Chainlit's Chinese translations. Each question is searched 5 times;
  the median and the 95th percentile of all.
- The first token: the embedded engine on `--model` (the full-size model: a CPU user's), one question alone, then
  with the library's passages put in as the chat does (ui/library.py) twice: the first time its prompt is new to
  the prefix cache, the second time the same passages are cached; and again with the cache off (`--no-cache`
  starts a second engine with prefix caching off).

    python -m bench.library --model models/ernie-full
    python -m bench.library --skip-engine           # the database part only

Prints a table, writes bench/results/library-<time>.json and its plot (.png).
"""

import argparse
import asyncio
import glob
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
LABELLED = json.loads((ROOT / "tests" / "data" / "library_set.json").read_text())
PAGES, PAGE_CHARS = 300, 2400
DOCUMENTS = 1000


def pdf_of(pages: list[str]) -> bytes:
    """A PDF whose pages hold `pages` as lines of Helvetica text (what pypdf reads back)."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", None, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for page in pages:
        lines = [page[i:i + 90] for i in range(0, len(page), 90)]
        text = "BT /F1 9 Tf 40 800 Td 11 TL " + " ".join(
            "(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") '" for line in lines) + " ET"
        objects.append(f"<< /Length {len(text)} >>\nstream\n{text}\nendstream")
        content = len(objects)
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {content} 0 R "
                       "/Resources << /Font << /F1 3 0 R >> >> >>")
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def book_pages() -> list[str]:
    """300 pages of English prose: the labelled set's paragraphs, in turn, with the page's number."""
    paragraphs = [p for name, ps in LABELLED["documents"].items() if name.isascii() for p in ps]
    pages, at = [], 0
    for number in range(PAGES):
        words = [f"Page {number + 1}."]
        while sum(len(w) + 1 for w in words) < PAGE_CHARS:
            words.append(paragraphs[at % len(paragraphs)])
            at += 1
        pages.append(" ".join(words)[:PAGE_CHARS])
    return pages


def distractors(count: int) -> list[tuple[str, str]]:
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    chinese = sorted(glob.glob(str(site / "**" / "translations" / "zh-*.json"), recursive=True))
    paths = sorted(path for ext in ("md", "rst", "txt", "py") for path in glob.glob(str(site / "**" / f"*.{ext}"),
                                                                                      recursive=True))
    paths = [p for p in paths if 2_000 < Path(p).stat().st_size < 200_000]
    return [(Path(p).name, Path(p).read_text(errors="replace")) for p in (chinese + paths)[:count]]


async def database_rows(kind: str, layer) -> dict:
    from history import library
    from ui.attachments import read

    row = {"database": kind}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "book.pdf"
        path.write_bytes(pdf_of(book_pages()))
        began = time.perf_counter()
        text = read(str(path))
        row["pdf_read_s"] = round(time.perf_counter() - began, 2)
        document = await library.add(layer, "bench", "book.pdf", path.stat().st_size, text)
        row["pdf_add_s"] = round(time.perf_counter() - began, 2)
        row["pdf_passages"], row["pdf_mb"] = document.passages, round(path.stat().st_size / 2**20, 2)
        await library.remove(layer, "bench", document.id)
    began = time.perf_counter()
    for name, text in distractors(DOCUMENTS - len(LABELLED["documents"])):
        await library.add(layer, "bench", name, len(text), text)
    for name, paragraphs in LABELLED["documents"].items():
        await library.add(layer, "bench", name, 1, "\n\n".join(paragraphs))
    row["documents"] = len(await library.documents(layer, "bench"))
    row["fill_s"] = round(time.perf_counter() - began, 1)
    times, hits = [], 0
    for question in LABELLED["questions"]:
        for attempt in range(5):
            began = time.perf_counter()
            found = await library.search(layer, "bench", question["q"], 5)
            times.append((time.perf_counter() - began) * 1000)
        hits += any(question["answer"] in passage.text for passage in found)
    row["search_ms_median"] = round(statistics.median(times), 2)
    row["search_ms_p95"] = round(sorted(times)[int(len(times) * 0.95)], 2)
    row["recall_at_5"] = round(hits / len(LABELLED["questions"]), 3)
    return row


async def on_sqlite() -> dict:
    from engine.settings import load_settings
    from history.layer import HistoryLayer
    from history.schema import prepare

    with tempfile.TemporaryDirectory() as folder:
        settings = load_settings(history_db=Path(folder) / "chats.db")
        prepare(settings)
        return await database_rows("SQLite (FTS5, bm25)", HistoryLayer(settings))


async def on_postgresql() -> dict | None:
    from engine.settings import load_settings
    from harness.postgres import PostgresServer, postgres_bin
    from history.layer import HistoryLayer
    from history.schema import prepare

    if postgres_bin() is None:
        return None
    database = PostgresServer().start()
    try:
        settings = load_settings(database_url=database.url)
        prepare(settings)
        return await database_rows("PostgreSQL (tsvector, ts_rank)", HistoryLayer(settings))
    finally:
        database.stop()


async def first_tokens(model: str, prefix_caching: bool) -> dict:
    """Seconds to the first token of one question alone, then with the library's passages twice."""
    from engine.engine import ChatEngine
    from engine.reports import Stats
    from engine.settings import Sampling, load_settings

    engine = ChatEngine(load_settings(model=model, preset="cpu"),
                        engine_args=None if prefix_caching else {"enable_prefix_caching": False})
    await engine.ensure_started()
    question = LABELLED["questions"][1]["q"]
    passages = "\n\n".join(f"[{n}] kettle-manual.txt, passage {n}:\n" + "\n\n".join(
        LABELLED["documents"]["kettle-manual.txt"] + LABELLED["documents"]["travel-policy.md"])
        for n in range(1, 4))
    with_library = [{"role": "user", "content": question, "attachments": [
        {"name": "From your library", "text": "Passages from the user's documents, numbered; answer from them "
                                              "and cite the numbers you use.\n\n" + passages}]}]
    row = {"prefix_cache": prefix_caching}
    try:
        for label, messages in (("alone", [{"role": "user", "content": question}]),
                                ("library_first", with_library), ("library_again", with_library)):
            async for item in engine.stream(messages, Sampling(max_tokens=8, ignore_eos=True)):
                if isinstance(item, Stats):
                    row[f"{label}_ttft_ms"] = round(item.ttft_s * 1000)
                    row[f"{label}_prompt"] = item.prompt_tokens
                    row[f"{label}_cached"] = item.cached_tokens
    finally:
        engine.shutdown()
    return row


def tokenizer_rows() -> list[dict]:
    """Recall@5 of the labelled questions, Chinese and English apart, by how FTS5 tokenizes: its default unicode61
    over the raw text, its trigram tokenizer over the raw text (the question as its 3-character pieces), and
    unicode61 over history/passages.py's words (Chinese as character pairs), the app's choice. The labelled
    documents alone, split as the app splits them and one paragraph a passage (smaller, more passages)."""
    import re
    import sqlite3

    from history import passages

    documents = LABELLED["documents"]
    splits = {"as the app splits": [p for ps in documents.values() for p in passages.split("\n\n".join(ps))],
              "one paragraph a passage": [p for ps in documents.values() for p in ps]}
    rows = []
    for split, texts in splits.items():
        for kind in ("unicode61", "trigram", "pairs (the app)"):
            db = sqlite3.connect(":memory:")
            tokenize = "trigram" if kind == "trigram" else "unicode61"
            db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, raw UNINDEXED, tokenize='{tokenize}')")
            for text in texts:
                db.execute("INSERT INTO t VALUES (?, ?)", (passages.indexed(text) if kind.startswith("pairs")
                                                           else text, text))
            row = {"split": split, "tokenizer": kind}
            for language, questions in (("chinese", [q for q in LABELLED["questions"] if not q["q"].isascii()]),
                                        ("english", [q for q in LABELLED["questions"] if q["q"].isascii()])):
                hits = 0
                for question in questions:
                    if kind.startswith("pairs"):
                        words = passages.question_terms(question["q"])
                    elif kind == "unicode61":
                        words = re.findall(r"\w+", question["q"].lower())
                    else:
                        plain = re.sub(r"\W", "", question["q"])
                        words = [plain[i:i + 3] for i in range(len(plain) - 2)] or [plain]
                    query = " OR ".join(f'"{word}"' for word in words)
                    found = [r[0] for r in db.execute("SELECT raw FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 5",
                                                      (query,))]
                    hits += any(question["answer"] in text for text in found)
                row[f"{language}_recall_at_5"] = round(hits / len(questions), 2)
            rows.append(row)
    return rows


def table(rows: list[dict], engine_rows: list[dict]) -> str:
    lines = ["| Database | 300-page PDF added (read) | passages | 1,000 documents: search median / p95 | recall@5 |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['database']} | {r['pdf_add_s']} s ({r['pdf_read_s']} s) | {r['pdf_passages']} | "
                     f"{r['search_ms_median']} / {r['search_ms_p95']} ms | {r['recall_at_5']} |")
    tokenizers = tokenizer_rows()
    lines += ["", "| Split | FTS5 tokenizer | recall@5 Chinese | English |", "|---|---|---|---|"]
    lines += [f"| {r['split']} | {r['tokenizer']} | {r['chinese_recall_at_5']} | {r['english_recall_at_5']} |"
              for r in tokenizers]
    if engine_rows:
        lines += ["", "| Prefix cache | first token alone | with passages, first | again (cached tokens) |",
                  "|---|---|---|---|"]
        for r in engine_rows:
            lines.append(f"| {'on' if r['prefix_cache'] else 'off'} | {r['alone_ttft_ms']} ms "
                         f"({r['alone_prompt']} tokens) | {r['library_first_ttft_ms']} ms "
                         f"({r['library_first_prompt']} tokens) | {r['library_again_ttft_ms']} ms "
                         f"({r['library_again_cached']}) |")
    return "\n".join(lines)


def plot(rows: list[dict], engine_rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    names = [r["database"].split(" ")[0] for r in rows]
    axes[0].bar(names, [r["search_ms_median"] for r in rows], label="median")
    axes[0].bar(names, [r["search_ms_p95"] - r["search_ms_median"] for r in rows],
                bottom=[r["search_ms_median"] for r in rows], label="to p95", alpha=0.5)
    axes[0].axhline(50, color="red", linestyle="--", label="target 50 ms")
    axes[0].set_ylabel("ms a query, 1,000 documents")
    axes[0].legend()
    for r in engine_rows:
        label = "prefix cache " + ("on" if r["prefix_cache"] else "off")
        axes[1].plot(["alone", "passages", "passages again"],
                     [r["alone_ttft_ms"], r["library_first_ttft_ms"], r["library_again_ttft_ms"]], marker="o",
                     label=label)
    axes[1].set_ylabel("first token, ms")
    axes[1].legend()
    figure.tight_layout()
    figure.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "ernie-full"))
    parser.add_argument("--skip-engine", action="store_true")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    rows = [row for row in (asyncio.run(on_sqlite()), asyncio.run(on_postgresql())) if row]
    engine_rows = [] if args.skip_engine else [asyncio.run(first_tokens(args.model, cache)) for cache in (True, False)]
    print(table(rows, engine_rows))
    stem = Path(args.out) / f"library-{time.strftime('%Y%m%d-%H%M%S')}"
    stem.with_suffix(".json").write_text(json.dumps({"databases": rows, "first_token": engine_rows,
                                                     "tokenizers": tokenizer_rows()}, indent=1))
    plot(rows, engine_rows, stem.with_suffix(".png"))
    print(f"wrote {stem}.json and .png")


if __name__ == "__main__":
    main()
