"""A document's text as passages of a few hundred tokens, and the words the library's full-text search indexes.

Both databases index the same words, made here (`terms`), so that a question finds the same passages on SQLite
(FTS5, its unicode61 tokenizer) as on PostgreSQL (text search with the `simple` configuration): words of
letters and digits, lower-cased; and Chinese, Japanese and Korean text, which has no spaces between its words,
as overlapping pairs of characters (a single character where it stands alone). Neither database segments
Chinese by itself: FTS5's default tokenizer takes a whole run of Chinese as one word, its trigram tokenizer
finds nothing shorter than three characters (most Chinese words have two), and PostgreSQL's parsers have no
Chinese. Pairs of characters find every two-character word without a dictionary to download
(docs/library.md has the measurement).
"""

import re

PASSAGE_TOKENS = 300  # about this many tokens a passage (the model's tokenizer: ~4 characters of English a token)
# What counts as a token here: a word of Latin script or digits, or one character of Chinese, Japanese or Korean
# (ERNIE's tokenizer takes about one token for one or two such characters).
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|\w+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def size(text: str) -> int:
    """About how many tokens `text` is, as passages are cut (not the model's count)."""
    return len(_TOKEN.findall(text))


def split(text: str, most: int = PASSAGE_TOKENS) -> list[str]:
    """`text` as passages of at most about `most` tokens, cut at paragraph ends, else at line ends, else at
    sentence ends, else between words; none empty, and nothing of the text left out but blank space."""
    passages: list[str] = []
    current: list[str] = []
    held = 0
    for piece in _pieces(text, most):
        tokens = size(piece)
        if current and held + tokens > most:
            passages.append("\n".join(current).strip())
            current, held = [], 0
        current.append(piece)
        held += tokens
    if current:
        passages.append("\n".join(current).strip())
    return [passage for passage in passages if passage]


def _pieces(text: str, most: int) -> list[str]:
    """Paragraphs, each cut further (lines, sentences, words) until no piece is longer than `most` tokens."""
    pieces = []
    for paragraph in re.split(r"\n\s*\n", text):
        pieces += _cut(paragraph.strip(), most, [r"\n", r"(?<=[.!?。！？；;])\s*", r"\s+"])
    return [piece for piece in pieces if piece.strip()]


def _cut(text: str, most: int, separators: list[str]) -> list[str]:
    if size(text) <= most:
        return [text]
    if not separators:  # one run without any break (a long line of Chinese): cut by characters
        step = max(most, 1)
        return [text[start:start + step] for start in range(0, len(text), step)]
    parts = [part for part in re.split(separators[0], text) if part.strip()]
    if len(parts) == 1:
        return _cut(text, most, separators[1:])
    joined, current, held = [], [], 0
    for part in parts:
        for piece in _cut(part, most, separators[1:]):
            tokens = size(piece)
            if current and held + tokens > most:
                joined.append(" ".join(current))
                current, held = [], 0
            current.append(piece)
            held += tokens
    if current:
        joined.append(" ".join(current))
    return joined


def terms(text: str) -> list[str]:
    """The words the search indexes for `text` (a passage or a question): lower-cased words, and each run of
    Chinese, Japanese or Korean characters as its overlapping pairs."""
    found = []
    for word in _WORD.findall(text.lower()):
        for part in re.split(f"({_CJK.pattern})", word):
            if not part:
                continue
            if _CJK.fullmatch(part):
                found += [part] if len(part) == 1 else [part[i:i + 2] for i in range(len(part) - 1)]
            else:
                found.append(part)
    return found


# Words too common to tell passages apart, left out of a question's search (the index keeps them): with any word
# of the question matching, they would rank long texts that merely use them often (docs/library.md).
STOPWORDS = frozenset("""a an and are as at be by can could do does did for from had has have how i if in into is
it its me my of on or our should so that the their then there these this to was we were what when where which
who why will with would you your""".split())


def question_terms(question: str) -> list[str]:
    """The words a question is searched by: its terms without the STOPWORDS, each once (all of them when the
    question has nothing else)."""
    words = list(dict.fromkeys(terms(question)))
    return [word for word in words if word not in STOPWORDS] or words


def indexed(text: str) -> str:
    """The text the full-text index holds for a passage: its terms, separated by spaces."""
    return " ".join(terms(text))
