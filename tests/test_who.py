"""One "who" (engine/who.py): a chat and an API request get their user from the same function, the local user is
spelled once, and a role comes from how a person came in, never from a name (fast; no server).
tests/test_team.py and tests/test_each_way_in.py show the same through real servers."""

import asyncio
from types import SimpleNamespace

import pytest

from engine import who
from engine.admission import API, Admission
from engine.who import LOCAL, OPERATOR, THE_LOCAL_USER, THE_OPERATOR, Who
from engine.who import RESERVED_NAMES
from ui import who as chats


def a_chat_of(user, monkeypatch) -> None:
    monkeypatch.setattr(chats.door, "session_or_none", lambda: SimpleNamespace(user=user))
    monkeypatch.setattr(who, "_chats_user", [chats.chats_user])


def test_a_chats_user_is_who_signed_in_and_only_the_local_provider_makes_the_machines_owner(monkeypatch):
    a_chat_of(SimpleNamespace(identifier=LOCAL, metadata={"provider": chats.LOCAL_PROVIDER}), monkeypatch)
    assert who.asking() == THE_LOCAL_USER and who.asking().is_operator([])
    a_chat_of(SimpleNamespace(identifier="ada", metadata={"provider": "password"}), monkeypatch)
    assert who.asking() == Who("ada") and not who.asking().is_operator([])
    assert who.asking().is_operator(["ada"]), "CHAT_ADMINS names the operators among the signed-in users"
    a_chat_of(SimpleNamespace(identifier=LOCAL, metadata={"provider": "password"}), monkeypatch)
    assert not who.asking().is_operator([]), "the name 'local' alone grants nothing"
    a_chat_of(None, monkeypatch)
    assert who.asking() == Who(LOCAL) and not who.asking().is_operator([]), "nobody signed in: no owner's role"


def test_no_reserved_name_can_be_made_an_operator_by_naming_it_in_chat_admins():
    for name in RESERVED_NAMES:
        assert not Who(name).is_operator(list(RESERVED_NAMES)), name
    assert {LOCAL, OPERATOR} <= set(RESERVED_NAMES), "no login may take the local user's or the operator's name"
    assert THE_OPERATOR.is_operator([]) and THE_LOCAL_USER.is_operator([])


async def test_an_api_request_acts_as_its_caller_over_any_chat_and_only_within_its_own_task(monkeypatch):
    a_chat_of(SimpleNamespace(identifier="bob", metadata={}), monkeypatch)
    seen = {}

    admission = Admission()

    async def request(name: str):
        async with admission.admit(Who(name), 1, API) as ticket:
            with who.serving(ticket):  # as api/gate.py does
                await asyncio.sleep(0.01)  # the other request runs meanwhile
                seen[name] = who.asking().name

    await asyncio.gather(request("ada"), request("cy"))
    assert seen == {"ada": "ada", "cy": "cy"}, "each request its own caller, also while both are in flight"
    assert who.asking() == Who("bob"), "after the request, the chat's user again"


def test_nobody_is_guessed_where_neither_a_chat_nor_a_request_is_served(monkeypatch):
    monkeypatch.setattr(chats.door, "session_or_none", lambda: None)
    monkeypatch.setattr(who, "_chats_user", [chats.chats_user])
    with pytest.raises(LookupError, match="nobody is asking"):
        who.asking()
