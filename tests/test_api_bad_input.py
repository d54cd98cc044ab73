"""Bad input to the OpenAI-compatible API, as a careless client or an attacker sends it: a `library` field of
500,000 names, a request through a proxy asking for this machine's library, bodies that are not JSON or nest
thousands deep, an API key that is not ASCII. Each gets a 4xx in the API's error shape with a short sentence,
quickly, and the server keeps answering. The gate on its own first (a fake library), then a real server with the
tiny model, a key and a library, and a seeded fuzz of the `library` field against it."""

import asyncio
import json
import random
import re
import time

import httpx
import pytest

from api import library_field
from api.gate import MAX_DEPTH, ApiGate, BodyRefused, parsed
from engine.engine import ChatEngine
from engine.settings import load_settings
from harness.chat_client import ChatClient
from harness.presets import APP_PRESET, TEST_PRESET
from harness.server import ChainlitServer
from history.library import MAX_DOCUMENTS, Document

KEY = "clé-ключ-鍵-a-key-that-is-not-ascii"
CHAT = "/v1/chat/completions"
ASKED = [{"role": "user", "content": "How often should I descale the kettle?"}]
MANUAL = "\n\n".join(f"Descale the kettle every {n} weeks with white vinegar, then rinse it." for n in range(2, 9))
PROXIES = [{"X-Forwarded-For": "203.0.113.9"}, {"Forwarded": "for=203.0.113.9"}, {"X-Real-IP": "203.0.113.9"}]


def nested(depth: int) -> bytes:
    """A chat request whose message content is a list nested `depth` deep."""
    return b'{"model": "m", "messages": [{"role": "user", "content": ' + b"[" * depth + b"]" * depth + b"}]}"


class FakeLibrary:
    """A history layer holding `count` documents of the local user, answering the library's two queries."""

    sqlite = True

    def __init__(self, count: int):
        self.rows = [Document(id=f"d{i}", name=f"report-{i:04}.txt", bytes=1, chars=1, passages=1,
                              created_at="2026-01-01T00:00:00Z").__dict__ for i in range(count)]

    async def execute_sql(self, sql: str, values: dict):
        return self.rows if "chat_library_documents" in sql else []


async def refusal(request: dict, layer=None, user="local") -> str:
    with pytest.raises(library_field.FieldRefused) as refused:
        await library_field.apply(request, layer or FakeLibrary(MAX_DOCUMENTS), user)
    return str(refused.value)


async def test_a_huge_list_of_names_is_refused_at_once_naming_the_limit_not_the_names():
    started = time.perf_counter()
    said = await refusal({"messages": ASKED, "library": ["z"] * 500_000})
    assert time.perf_counter() - started < 0.5, "refused before any name is matched"
    assert "500000 names" in said and f"at most {library_field.MAX_NAMES}" in said and len(said) < 300
    said = await refusal({"messages": ASKED, "library": ["z" * 100_000]})
    assert f"at most {library_field.MAX_NAME_CHARS}" in said and len(said) < 300


async def test_an_unknown_name_lists_a_few_of_the_documents_not_the_whole_library():
    names = [f"missing-{i}-" + "x" * 200 for i in range(library_field.MAX_NAMES)]
    started = time.perf_counter()
    said = await refusal({"messages": ASKED, "library": names})
    assert time.perf_counter() - started < 0.5, "100 names against 1,000 documents is quick"
    assert "and 95 more" in said, "five of the names asked are quoted"
    assert "report-0019.txt" in said and "report-0020.txt" not in said and "and 980 more" in said
    assert len(said) < 1500


@pytest.mark.parametrize("operator_key", [None, "the-operators-key"])
async def test_a_request_not_from_this_machine_never_reads_the_local_users_library(operator_key):
    engine = ChatEngine(load_settings(model="no-model", preset="custom", custom_preset=TEST_PRESET,
                                      api_key=operator_key))
    gate = ApiGate(engine)
    gate.use_library(FakeLibrary(3))
    keyed = {"Authorization": f"Bearer {operator_key}"} if operator_key else {}
    for headers, client in [*((proxy, ("127.0.0.1", 5000)) for proxy in PROXIES), ({}, ("203.0.113.9", 5000))]:
        transport = httpx.ASGITransport(app=gate, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            for wanted in (True, ["unknown"]):
                answer = await http.post(CHAT, headers={**headers, **keyed}, json={"model": "m", "messages": ASKED,
                                                                                   "library": wanted})
                if operator_key is None:  # without a key such a request is nobody's: not let in at all
                    assert answer.status_code == 401 and "Missing or wrong API key" in answer.text, answer.text
                    continue
                assert answer.status_code == 400, (headers, client, answer.text)
                assert "this machine's own user" in answer.json()["error"]["message"]
                assert "report-" not in answer.text, "no document name is told to such a request"


def test_a_body_that_is_not_json_or_nests_too_deep_is_refused_with_a_sentence():
    assert parsed(nested(MAX_DEPTH - 4))["model"] == "m"
    for body, said in [(nested(MAX_DEPTH), "nests more than"), (nested(100_000), "nests more than"),
                       (b"", "not JSON (Expecting value)"), (b"{not json", "not JSON"),
                       (b'{"model": "\xff"}', "not JSON (it is not UTF-8 text)")]:
        with pytest.raises(BodyRefused, match=re.escape(said)):
            parsed(body)


async def test_the_gate_answers_a_deep_or_broken_body_with_a_400_in_the_apis_shape():
    engine = ChatEngine(load_settings(model="no-model", preset="custom", custom_preset=TEST_PRESET))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=ApiGate(engine)), base_url="http://t") as http:
        for path in (CHAT, "/v1/completions"):
            for body in (nested(100_000), b"{not json", b'\xff\xfe'):
                answer = await http.post(path, content=body, headers={"Content-Type": "application/json"})
                assert answer.status_code == 400, answer.text
                assert answer.json()["error"]["type"] == "BadRequestError"


async def test_a_key_that_is_not_ascii_matches_and_a_malformed_header_is_a_401():
    engine = ChatEngine(load_settings(model="no-model", preset="custom", custom_preset=TEST_PRESET, api_key=KEY))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=ApiGate(engine)), base_url="http://t") as http:
        keyed = await http.get("/v1/models", headers={"Authorization": f"Bearer {KEY}".encode()})
        assert keyed.status_code != 401, "the key as a client sends it (UTF-8) is let in"
        for wrong in (b"Bearer \xff\xfe", f"Bearer {KEY}".encode("utf-16"), f"Bearer {KEY}".encode("latin-1",
                      "replace"), b"Bearer " + KEY.encode()[:-1]):
            answer = await http.get("/v1/models", headers={"Authorization": wrong})
            assert answer.status_code == 401 and "Missing or wrong API key" in answer.json()["error"]["message"]


@pytest.fixture(scope="module")
async def keyed(engine_env, tmp_path_factory):
    """A loopback server with a (non-ASCII) API key whose local user keeps one document, and an httpx client that
    sends the key."""
    folder = tmp_path_factory.mktemp("keyed")
    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_API_KEY": KEY,
           "CHAT_HISTORY_DB": str(folder / "chats.db")}
    server = ChainlitServer(env, folder / "server.log").start()
    try:
        chat = await ChatClient(server.url).connect()
        uploaded = await chat.upload("kettle-manual.txt", MANUAL.encode(), "text/plain")
        assert uploaded.status_code == 200, uploaded.text
        await chat.send("", command="Library", files=[uploaded.json()["id"]])
        await chat.wait_idle()
        await chat.close()
        headers = {"Authorization": f"Bearer {KEY}".encode()}  # httpx sends str headers as ASCII only
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=httpx.Timeout(300, connect=60)) \
                as http:
            yield http
    finally:
        assert server.stop() == 0


@pytest.fixture(scope="module")
def model(engine_env) -> str:
    return engine_env["CHAT_MODEL"]


def chat_request(model: str, **extra) -> dict:
    return {"model": model, "messages": ASKED, "max_tokens": 1, **extra}


async def test_the_key_that_is_not_ascii_opens_the_api_of_a_real_server(keyed, model):
    listed = await keyed.get("/v1/models")
    assert listed.status_code == 200, listed.text
    answered = await keyed.post(CHAT, json=chat_request(model, library=["kettle"]))
    assert answered.status_code == 200, answered.text
    assert answered.headers["x-library-sources"].startswith("[1] kettle-manual.txt"), "the library is read"


async def test_500000_names_are_refused_at_once_in_a_short_sentence_and_the_server_keeps_answering(keyed, model):
    big = keyed.post(CHAT, json=chat_request(model, library=["z"] * 500_000))
    pings = []

    async def ping():
        while len(pings) < 3:  # the page answers while the big request is read and refused
            pings.append((await keyed.get("/auth/config")).status_code)

    refused, _ = await asyncio.gather(big, ping())
    assert refused.status_code == 400, refused.text[:300]
    error = refused.json()["error"]
    assert error["param"] == "library" and "500000 names; it may list at most 100" in error["message"]
    assert len(refused.content) < 1000, "the refusal does not echo the names back"
    assert pings == [200] * 3


async def test_through_a_proxy_the_key_does_not_open_this_machines_library(keyed, model):
    for proxy in PROXIES:
        for wanted in (True, ["kettle"], ["unknown"]):
            answer = await keyed.post(CHAT, headers=proxy, json=chat_request(model, library=wanted))
            assert answer.status_code == 400, (proxy, wanted, answer.text)
            assert "this machine's own user" in answer.json()["error"]["message"]
            assert "kettle-manual" not in answer.text and "x-library-sources" not in answer.headers
        plain = await keyed.post(CHAT, headers=proxy, json=chat_request(model))
        assert plain.status_code == 200, "without the field the key still serves a proxied request"


async def test_a_deep_or_broken_body_gets_a_400_in_the_apis_shape_never_a_500(keyed, model):
    for path in (CHAT, "/v1/completions"):
        for body in (nested(100_000), nested(MAX_DEPTH), b"{not json", b"", b'{"model": "\xff"}'):
            answer = await keyed.post(path, content=body, headers={"Content-Type": "application/json"})
            assert answer.status_code == 400, (path, body[:40], answer.status_code, answer.text[:200])
            error = answer.json()["error"]
            assert error["type"] == "BadRequestError" and "send" in error["message"], error
    assert (await keyed.post(CHAT, json=chat_request(model))).status_code == 200


def random_text(rng: random.Random, most: int = 300) -> str:
    alphabet = rng.choice(["kettle", "abcxyz ", "水壶说明书", "\u0000\ud800\U0001f600\"\\", "../|*%"])
    return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 5, 40, most])))


def random_value(rng: random.Random, depth: int = 0):
    """Any JSON value: scalars of each type, strings of any length and script, lists and objects nested."""
    kind = rng.choice(["true", "false", "null", "int", "float", "str", "str", "list", "names", "object"])
    if kind in ("list", "object", "names") and depth > 6:
        kind = "str"
    if kind == "str":
        return random_text(rng)
    if kind == "names":
        count = rng.choice([0, 1, 3, 101, 5000, 200_000])
        return [random_value(rng, 7) for _ in range(count)] if count < 1000 else [random_text(rng, 3)] * count
    if kind == "list":
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind == "object":
        return {random_text(rng) if rng.random() < 0.5 else "library": random_value(rng, depth + 1)
                for _ in range(rng.randint(0, 3))}
    return {"true": True, "false": False, "null": None, "int": rng.randint(-10**20, 10**20),
            "float": rng.random() * 1e300}[kind]


def fuzzed_body(rng: random.Random, model: str) -> bytes:
    """A chat request with a random `library` field, now and then random messages, a deep nesting or a cut."""
    request = chat_request(model, library=random_value(rng))
    roll = rng.random()
    if roll < 0.2:
        request["messages"] = random_value(rng)
    elif roll < 0.5:
        request["messages"] = [{"role": "user", "content": random_text(rng)}]
    body = json.dumps(request).encode()
    roll = rng.random()
    if roll < 0.05:
        return body[:rng.randint(0, len(body))]
    if roll < 0.1:
        depth = rng.choice([MAX_DEPTH - 5, MAX_DEPTH + 1, 990, 5000])
        return body[:-1] + b', "library": ' + b"[" * depth + b"]" * depth + b"}"
    return body


async def test_a_fuzz_of_the_library_field_gets_a_2xx_or_a_4xx_and_the_server_keeps_answering(keyed, model):
    rng, answered = random.Random(51), []
    deadline = time.monotonic() + 60
    while len(answered) < 200 and time.monotonic() < deadline:
        body = fuzzed_body(rng, model)
        answer = await keyed.post(CHAT, content=body, headers={"Content-Type": "application/json"})
        answered.append(answer.status_code)
        assert answer.status_code < 500, (body[:300], answer.status_code, answer.text[:300])
        if answer.status_code >= 400:
            assert "message" in answer.json()["error"], answer.text[:300]
    assert len(answered) >= 50 and 200 in answered and 400 in answered, answered
    assert (await keyed.post(CHAT, json=chat_request(model))).status_code == 200
