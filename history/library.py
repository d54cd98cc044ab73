"""Each user's library: documents kept across chats in the history's database, split into passages, and searched
with the database's own full-text search (no model to download).

A document is added whole or not at all (one transaction: its row, its passages and their index entries), listed
and removed by its owner only: every statement names the user, so another user's document id finds nothing.
Search ranks passages by SQLite FTS5's bm25() or PostgreSQL's ts_rank over the same indexed words
(history/passages.py), any of the question's words matching.
"""

import time
import uuid
from dataclasses import dataclass

from history import passages
from history.words import Refusal

MAX_DOCUMENTS = 1000  # a user's library holds at most this many documents
MAX_TEXT_CHARS = 50 * 2**20  # and at most this much text in all (a 300-page book is about 1 MB of text)


class LibraryFull(Refusal):
    """A document that does not fit the user's library; the text says which limit and what to do (history/words/'s
    `library.` keys, in the chat's language by `in_language`)."""


@dataclass
class Document:
    id: str
    name: str
    bytes: int
    chars: int
    passages: int
    created_at: str


@dataclass
class Passage:
    id: str
    document_id: str
    document: str  # the document's name
    position: int  # 0 for the document's first passage
    text: str
    score: float  # higher is better


_DOCUMENTS = ('SELECT "id", "name", "bytes", "chars", "passages", "created_at" FROM chat_library_documents '
              'WHERE "user_identifier" = :user ORDER BY "created_at", "name"')
_USAGE = ('SELECT COUNT(*) AS documents, COALESCE(SUM("chars"), 0) AS chars FROM chat_library_documents '
          'WHERE "user_identifier" = :user')
_ADD_DOCUMENT = ('INSERT INTO chat_library_documents ("id", "user_identifier", "name", "bytes", "chars", "passages", '
                 '"created_at") VALUES (:id, :user, :name, :bytes, :chars, :passages, :created_at)')
_ADD_PASSAGE = ('INSERT INTO chat_library_passages ("id", "document_id", "position", "user_identifier", "text"{terms}) '
                'VALUES (:id, :document, :position, :user, :text{value})')
_SQLITE_PASSAGE = _ADD_PASSAGE.format(terms="", value="")
_POSTGRES_PASSAGE = _ADD_PASSAGE.format(terms=', "terms"', value=", to_tsvector('simple', :terms)")
_SQLITE_INDEX = 'INSERT INTO chat_library_index (terms, passage_id, user_identifier) VALUES (:terms, :id, :user)'
_REMOVE_INDEX = ('DELETE FROM chat_library_index WHERE passage_id IN (SELECT "id" FROM chat_library_passages '
                 'WHERE "document_id" = :id AND "user_identifier" = :user)')
_REMOVE_PASSAGES = 'DELETE FROM chat_library_passages WHERE "document_id" = :id AND "user_identifier" = :user'
_REMOVE_DOCUMENT = 'DELETE FROM chat_library_documents WHERE "id" = :id AND "user_identifier" = :user'
_SQLITE_SEARCH = (
    'SELECT p."id", p."document_id", d."name" AS document, p."position", p."text", '
    '-bm25(chat_library_index) AS score FROM chat_library_index '
    'JOIN chat_library_passages p ON p."id" = chat_library_index.passage_id '
    'JOIN chat_library_documents d ON d."id" = p."document_id" '
    'WHERE chat_library_index MATCH :query AND chat_library_index.user_identifier = :user {only}'
    'ORDER BY bm25(chat_library_index) LIMIT :most')
_POSTGRES_SEARCH = (
    'SELECT p."id", p."document_id", d."name" AS document, p."position", p."text", '
    'ts_rank(p."terms", to_tsquery(\'simple\', :query)) AS score FROM chat_library_passages p '
    'JOIN chat_library_documents d ON d."id" = p."document_id" '
    'WHERE p."user_identifier" = :user AND p."terms" @@ to_tsquery(\'simple\', :query) {only}'
    'ORDER BY score DESC LIMIT :most')

_OPENING = (
    'SELECT p."id", p."document_id", d."name" AS document, p."position", p."text", 0.0 AS score '
    'FROM chat_library_passages p JOIN chat_library_documents d ON d."id" = p."document_id" '
    'WHERE p."user_identifier" = :user {only}ORDER BY p."position", d."created_at", d."name" LIMIT :most')


MOST_PASSAGES = 6  # at most this many passages go with a question
MOST_TOKENS = 2048  # and at most about this many tokens of them
TOKENS_PER_UNIT = 1.3  # the model's tokens for one of passages.size's units (a word of English: about 1.3)
INSTRUCTION = "Passages from the user's documents, numbered; answer from them and cite the numbers you use."


def tokens(text: str) -> int:
    """About how many of the model's tokens `text` is."""
    return int(passages.size(text) * TOKENS_PER_UNIT) + 1


def fitting(found: list["Passage"], room: int) -> tuple[list["Passage"], int]:
    """The best passages of `found` (best first) while their tokens fit `room`, and those tokens."""
    kept, used = [], 0
    for passage in found:
        cost = tokens(passage.text)
        if used + cost > room:
            break
        kept.append(passage)
        used += cost
    return kept, used


def place(number: int, passage: "Passage") -> str:
    """A passage's place as the model reads it in the prompt (the chat names its sources in its own language:
    ui/library.py)."""
    return f"[{number}] {passage.document}, passage {passage.position + 1}"


def prompt_text(kept: list["Passage"]) -> str:
    """The passages as the model reads them: numbered, each with its document and place, after the instruction."""
    return INSTRUCTION + "\n\n" + "\n\n".join(f"{place(n, p)}:\n{p.text}" for n, p in enumerate(kept, 1))


def _rows(result) -> list[dict]:
    return result if isinstance(result, list) else []


async def documents(layer, user: str) -> list[Document]:
    """The user's documents, oldest first."""
    return [Document(**row) for row in _rows(await layer.execute_sql(_DOCUMENTS, {"user": user}))]


async def add(layer, user: str, name: str, size: int, text: str) -> Document:
    """Keep `text` (a file of `size` bytes named `name`) in `user`'s library: all of it or, on any error, none.
    Raises LibraryFull when a limit would be passed, naming it."""
    usage = _rows(await layer.execute_sql(_USAGE, {"user": user}))
    held = usage[0] if usage else {"documents": 0, "chars": 0}
    if held["documents"] >= MAX_DOCUMENTS:
        raise LibraryFull("library.full", count=held["documents"])
    if held["chars"] + len(text) > MAX_TEXT_CHARS:
        raise LibraryFull("library.too_much_text", mb=MAX_TEXT_CHARS // 2**20)
    pieces = passages.split(text)
    if not pieces:
        raise LibraryFull("library.no_text")
    document = Document(id=uuid.uuid4().hex, name=name, bytes=size, chars=len(text), passages=len(pieces),
                        created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    statements = [(_ADD_DOCUMENT, {"id": document.id, "user": user, "name": name, "bytes": size,
                                   "chars": document.chars, "passages": document.passages,
                                   "created_at": document.created_at})]
    for position, piece in enumerate(pieces):
        values = {"id": f"{document.id}:{position}", "document": document.id, "position": position, "user": user,
                  "text": piece, "terms": passages.indexed(piece)}
        if layer.sqlite:
            statements += [(_SQLITE_PASSAGE, values), (_SQLITE_INDEX, values)]
        else:
            statements.append((_POSTGRES_PASSAGE, values))
    await layer.execute_all(statements)
    return document


async def remove(layer, user: str, document_id: str) -> bool:
    """Remove one of `user`'s documents with its passages; False when the user has no such document."""
    values = {"id": document_id, "user": user}
    if not _rows(await layer.execute_sql('SELECT "id" FROM chat_library_documents WHERE "id" = :id AND '
                                         '"user_identifier" = :user', values)):
        return False
    await layer.execute_all(([(_REMOVE_INDEX, values)] if layer.sqlite else [])
                            + [(_REMOVE_PASSAGES, values), (_REMOVE_DOCUMENT, values)])
    return True


def _only(document_ids: list[str] | None, values: dict) -> str:
    """The SQL that keeps a query to `document_ids` (all the user's documents when None), its values put in
    `values`."""
    if not document_ids:
        return ""
    values.update({f"doc{n}": document_id for n, document_id in enumerate(document_ids)})
    return f'AND p."document_id" IN ({", ".join(f":doc{n}" for n in range(len(document_ids)))}) '


async def search(layer, user: str, question: str, most: int = 5, only: list[str] | None = None) -> list[Passage]:
    """The `most` passages of `user`'s library that best match `question`, best first; `only`: these document ids.
    None when the question has no word to search by."""
    words = passages.question_terms(question)
    if not words:
        return []
    values: dict = {"user": user, "most": most}
    only_sql = _only(only, values)
    if layer.sqlite:
        values["query"] = " OR ".join(f'"{word}"' for word in words)
        sql = _SQLITE_SEARCH.format(only=only_sql)
    else:
        values["query"] = " | ".join(words)
        sql = _POSTGRES_SEARCH.format(only=only_sql)
    return [Passage(**row) for row in _rows(await layer.execute_sql(sql, values))]


async def opening(layer, user: str, document_ids: list[str], most: int = 5) -> list[Passage]:
    """The first `most` passages of `user`'s documents `document_ids`, taken in turn from each (its first
    passage, then each one's second, ...): what a question that names documents but matches none of their
    words ("summarise @report") is about."""
    values: dict = {"user": user, "most": most}
    sql = _OPENING.format(only=_only(document_ids, values))
    return [Passage(**row) for row in _rows(await layer.execute_sql(sql, values))]
