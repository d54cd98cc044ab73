"""Users' API keys and usage without a server (the server's side: test_team.py): keys kept as hashes on a real
SQLite history, checked per request and refused at once when revoked; the API's key check with its throttle; usage
counted per user, day and source and written in batches; an API request's tokens read from vLLM's outputs."""

import asyncio
import sqlite3
import time
from types import SimpleNamespace

import pytest
from pydantic import SecretStr

from api.callers import MAX_KEY_FAILURES, Callers, Refusal
from engine.admission import API, CHAT, Ticket
from engine.openai_app import AdmittedClient
from engine.who import serving
from engine.settings import load_settings
from engine.who import THE_LOCAL_USER, THE_OPERATOR, Who
from history import keys, usage
from history.layer import HistoryLayer
from history.schema import prepare


@pytest.fixture
def layer(tmp_path):
    settings = load_settings(history_db=tmp_path / "chats.db")
    prepare(settings)
    return HistoryLayer(settings)


def every_value(database) -> str:
    """Every text value of every table of the SQLite file, as one string."""
    with sqlite3.connect(database) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(str(row) for table in tables for row in db.execute(f'SELECT * FROM "{table}"'))


async def test_a_key_is_shown_once_kept_as_its_hash_and_revoked_at_once(layer, tmp_path):
    key = await keys.make(layer, "ada", "laptop  script")
    assert keys.KEY_SHAPE.fullmatch(key)
    check = keys.KeyCheck(layer)
    assert await check.user_of(key) == "ada"
    stored = every_value(tmp_path / "chats.db")
    assert key not in stored and key[len(keys.KEY_PREFIX):] not in stored and keys.digest(key) in stored
    [listed] = await keys.listed(layer, "ada")
    assert listed.name == "laptop script" and await keys.listed(layer, "bob") == []
    await keys.revoke(layer, "bob", listed.id)  # another user's revoke finds nothing
    assert await check.user_of(key) == "ada"
    await keys.revoke(layer, "ada", listed.id)
    assert await check.user_of(key) is None, "refused from the next request on"


async def test_a_malformed_or_unknown_key_names_nobody(layer):
    check = keys.KeyCheck(layer)
    good = await keys.make(layer, "ada", "one")
    for wrong in ["chat-", good[:-1], good + "x", good[:-1] + "!", keys.new_key(), "'; DROP TABLE x; --"]:
        assert await check.user_of(wrong) is None, wrong


async def test_names_and_the_number_of_keys_are_bounded_with_a_reason(layer, monkeypatch):
    with pytest.raises(keys.KeyRefused, match="needs a name"):
        await keys.make(layer, "ada", "   ")
    with pytest.raises(keys.KeyRefused, match=f"at most {keys.MAX_NAME}"):
        await keys.make(layer, "ada", "x" * (keys.MAX_NAME + 1))
    with pytest.raises(keys.KeyRefused, match="only printable characters"):
        await keys.make(layer, "ada", "laptop\x00")
    monkeypatch.setattr(keys, "MAX_KEYS", 2)
    await keys.make(layer, "ada", "one")
    await keys.make(layer, "ada", "two")
    with pytest.raises(keys.KeyRefused, match="revoke one"):
        await keys.make(layer, "ada", "three")
    await keys.make(layer, "bob", "one")  # the limit is each user's own


async def test_tabs_pressing_new_at_once_never_pass_the_limit(layer, monkeypatch):
    monkeypatch.setattr(keys, "MAX_KEYS", 5)
    for n in range(4):
        await keys.make(layer, "eve", f"key {n}")
    made = await asyncio.gather(*(keys.make(layer, "eve", f"tab {n}") for n in range(5)), return_exceptions=True)
    assert sum(isinstance(result, str) for result in made) == 1, made
    assert all("revoke one" in str(result) for result in made if not isinstance(result, str))
    assert len(await keys.listed(layer, "eve")) == 5


async def test_when_a_key_was_last_used_is_written_at_most_once_a_minute(layer):
    clock = [1000.0]
    check = keys.KeyCheck(layer, now=lambda: clock[0])
    key = await keys.make(layer, "ada", "script")
    writes = []
    real = layer.execute_all

    async def counted(statements):
        writes.append(len(statements))
        await real(statements)

    layer.execute_all = counted
    for _ in range(50):
        assert await check.user_of(key) == "ada"
    await asyncio.sleep(0.1)
    assert writes == [1] and (await keys.listed(layer, "ada"))[0].last_used_at
    clock[0] += keys.LAST_USED_EVERY_S
    await check.user_of(key)
    await asyncio.sleep(0.1)
    assert writes == [1, 1]


def scope(authorization: str | None = None, client: str = "127.0.0.1", forwarded: bool = False) -> dict:
    headers = [(b"authorization", authorization.encode())] if authorization is not None else []
    headers += [(b"x-forwarded-for", b"203.0.113.9")] if forwarded else []
    return {"type": "http", "headers": headers, "client": (client, 5000)}


async def test_the_api_takes_a_users_key_the_operators_key_or_on_loopback_the_local_user(layer):
    key = await keys.make(layer, "ada", "script")
    keyed = Callers(load_settings(api_key=SecretStr("operator-key")), loopback=True)
    keyed.use_keys(layer)
    assert await keyed.check(scope("Bearer operator-key", client="192.0.2.7")) == THE_OPERATOR
    assert await keyed.check(scope("Bearer operator-key")) == THE_LOCAL_USER, "from this machine: its own user"
    assert await keyed.check(scope(f"Bearer {key}")) == Who("ada"), "a user's key: that user, no owner's role"
    with pytest.raises(Refusal, match="Missing or wrong API key") as refused:
        await keyed.check(scope("Bearer unused-on-loopback"))
    assert refused.value.status == 401
    with pytest.raises(Refusal, match="wrong, revoked or malformed"):
        await keyed.check(scope(f"Bearer {key}x"))

    open_loopback = Callers(load_settings(), loopback=True)
    open_loopback.use_keys(layer)
    assert await open_loopback.check(scope()) == THE_LOCAL_USER, "nothing changes for the local user"
    assert await open_loopback.check(scope("Bearer unused-on-loopback")) == THE_LOCAL_USER
    assert await open_loopback.check(scope(f"Bearer {key}")) == Who("ada"), "a key still names its user there"
    with pytest.raises(Refusal, match="wrong, revoked or malformed"):
        await open_loopback.check(scope("Bearer chat-revoked"))
    for proxied in (scope(forwarded=True), scope(client="192.0.2.7")):
        with pytest.raises(Refusal, match="Missing or wrong API key"):
            await open_loopback.check(proxied)
    with pytest.raises(Refusal, match="a user's own key does not open it"):
        keyed.operator(scope(f"Bearer {key}"))
    keyed.operator(scope("Bearer operator-key"))
    open_loopback.operator(scope())


async def test_wrong_keys_are_slowed_per_address_and_a_right_key_from_there_is_not(layer):
    key = await keys.make(layer, "ada", "script")
    revoked = await keys.make(layer, "ada", "old script")
    await keys.revoke(layer, "ada", next(k.id for k in await keys.listed(layer, "ada") if k.name == "old script"))
    callers = Callers(load_settings(), loopback=False)
    callers.use_keys(layer)
    for _ in range(MAX_KEY_FAILURES):  # a script that still sends its revoked key
        with pytest.raises(Refusal) as refused:
            await callers.check(scope(f"Bearer {revoked}", client="198.51.100.1"))
        assert refused.value.status == 401
    with pytest.raises(Refusal, match="Too many wrong API keys") as refused:
        await callers.check(scope("Bearer " + keys.new_key(), client="198.51.100.1"))
    assert refused.value.status == 429 and 0 < refused.value.retry_after <= 61
    assert await callers.check(scope(f"Bearer {key}", client="198.51.100.1")) == Who("ada"), \
        "the owner's right key from the same address is not slowed by the revoked one"


def ticket(who: str, kind: str, prompt: int, cached: int, reply: int) -> Ticket:
    return Ticket(who, 1, kind, 0, prompt=prompt, cached=cached, reply=reply)


async def test_the_warm_up_a_list_of_models_and_refused_requests_are_nobodys_usage(layer):
    from engine.admission import WARMUP

    book = usage.UsageBook(layer)
    book.count(ticket(WARMUP, CHAT, 12, 0, 8))  # the engine's own warm-up
    book.count(Ticket("ada", 0, API, 0))  # /v1/models: no sequence
    book.count(ticket("ada", API, 0, 0, 0))  # refused before the model read it (a 4xx, a question that cannot fit)
    assert not book.pending
    book.count(ticket("ada", CHAT, 5, 0, 1))
    assert list(book.pending) and all(who == "ada" for who, _, _ in book.pending)


async def test_usage_is_added_per_user_day_and_source_in_one_write_a_second(layer, monkeypatch):
    monkeypatch.setattr(usage, "FLUSH_S", 0.2)
    writes = []
    real = layer.execute_all

    async def counted(statements):
        writes.append(len(statements))
        await real(statements)

    layer.execute_all = counted
    first, second = usage.UsageBook(layer), usage.UsageBook(layer)  # two app processes on one database
    first.count(ticket("ada", CHAT, 100, 64, 20))
    first.count(ticket("ada", CHAT, 50, 0, 5))
    first.count(ticket("ada", API, 10, 0, 7))
    second.count(ticket("ada", CHAT, 1, 0, 1))
    second.count(ticket(API, API, 3, 0, 4))  # the operator's key
    await asyncio.sleep(0.5)
    assert sorted(writes) == [2, 2], "one transaction per process per second"
    rows = {(r.user, r.source): (r.requests, r.prompt_tokens, r.cached_tokens, r.reply_tokens)
            for r in await usage.read(layer, None, 1)}
    assert rows == {("ada", CHAT): (3, 151, 64, 26), ("ada", API): (1, 10, 0, 7), (usage.OPERATOR, API): (1, 3, 0, 4)}
    assert {r.user for r in await usage.read(layer, "ada", 7)} == {"ada"}


async def test_at_the_apps_end_pending_usage_is_written_at_once(layer, monkeypatch):
    monkeypatch.setattr(usage, "FLUSH_S", 60)
    book = usage.open_book(layer)
    book.count(ticket("ada", CHAT, 100, 0, 20))
    started = time.monotonic()
    await usage.write_pending()
    assert time.monotonic() - started < 5, "not after the write's usual wait"
    [row] = await usage.read(layer, "ada", 1)
    assert (row.requests, row.prompt_tokens, row.reply_tokens) == (1, 100, 20)


async def test_usage_that_could_not_be_written_waits_for_the_next_write(layer):
    book = usage.UsageBook(layer)
    book.pending[("ada", usage.today(), CHAT)] = [1, 10, 0, 2]
    real = layer.execute_all

    async def failing(statements):
        raise OSError("disk full")

    layer.execute_all = failing
    await book.flush()
    layer.execute_all = real
    book.pending[("ada", usage.today(), CHAT)][0] += 1
    await book.flush()
    [row] = await usage.read(layer, "ada", 1)
    assert (row.requests, row.prompt_tokens, row.reply_tokens) == (2, 10, 2)


def output(prompt: int, cached: int, *choices: tuple[int, int]):
    return SimpleNamespace(prompt_token_ids=list(range(prompt)), num_cached_tokens=cached,
                           outputs=[SimpleNamespace(index=i, token_ids=[0] * n) for i, n in choices])


@pytest.mark.parametrize("kind", ["DELTA", "FINAL_ONLY"])
async def test_an_api_request_runs_at_its_admissions_priority_and_its_tokens_are_read_from_its_outputs(kind):
    delta = kind == "DELTA"
    outputs = [output(12, 8, (0, 1), (1, 1)), output(12, 8, (0, 2), (1, 1))] if delta else \
        [output(12, 8, (0, 3), (1, 2))]

    priorities = []

    class Client:
        async def generate(self, prompt, params, request_id, priority=0):
            priorities.append(priority)
            for out in outputs:
                yield out

    used = Ticket("ada", 2, API, 7)
    client = AdmittedClient(Client())
    with serving(used):  # as the gate runs vLLM's app; a client's own priority is replaced by the admission's
        stream = client.generate("p", SimpleNamespace(output_kind=SimpleNamespace(name=kind)), "r1", priority=-5)
    assert [out async for out in stream] == outputs
    assert (used.prompt, used.cached, used.reply) == (12, 8, 5) and priorities == [7]
    outside = client.generate("p", SimpleNamespace(output_kind=None), "r2", priority=-5)  # not the gate's request
    assert [out async for out in outside] == outputs and priorities == [7, -5]
    assert (used.prompt, used.cached, used.reply) == (12, 8, 5)


async def test_a_fuzz_of_authorization_headers_and_key_names_gets_only_refusals_or_keys(layer, monkeypatch):
    """Outside input, seeded and bounded: any header is a 401 (or a 429 once an address has failed often), never
    another error; any name is a key or a KeyRefused."""
    import random

    rng = random.Random(53)
    callers = Callers(load_settings(api_key=SecretStr("operator-key")), loopback=False)
    callers.use_keys(layer)
    alphabet = "chat-Bearer _-/+=\x00\xff😀" + "".join(map(chr, range(32, 127)))
    for n in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80)))
        header = rng.choice([text.encode(), f"Bearer chat-{text}".encode(), rng.randbytes(rng.randrange(0, 60))])
        with pytest.raises(Refusal) as refused:
            await callers.check(scope(client=f"198.51.100.{n % 7}") | {"headers": [(b"authorization", header)]})
        assert refused.value.status in (401, 429)
    monkeypatch.setattr(keys, "MAX_KEYS", 1000)
    for _ in range(60):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 90)))
        try:
            assert keys.KEY_SHAPE.fullmatch(await keys.make(layer, "ada", name))
        except keys.KeyRefused:
            tidy = " ".join(name.split())
            assert not tidy or len(tidy) > keys.MAX_NAME or not tidy.isprintable()
