"""An edit keeps the old branch: the question as it was and every turn after it stay a press of "◀ Question 2 / 2"
away under the reply to the edited question, the chat's prompt is the branch shown, and the history keeps every
branch across a restart (ui/branches.py).

Fast: the bookkeeping of the question's metadata, and the hooks inside a Chainlit context with a fake engine.
Slow: the real server with its SQLite history, restarted, and a socket.io client; then Chromium, whose picture of
the buttons goes to a temporary folder, or to CHAT_SCREENSHOT_BRANCHES (docs/edit-branches.png).
"""

import asyncio
import json
import os
import time

import pytest
from chainlit.chat_context import chat_context
from chainlit.context import init_http_context

import harness.fake_engine
import harness.recorder
from lifetime.runtime import RUNTIME
from harness.replies import shown_within
from ui import branches, broadcast, edits

os.environ["CHAT_HISTORY"] = "false"  # as tests/test_hooks.py: no database for the fast tier's hooks
RUNTIME.port_checked = True
import app  # noqa: E402

del os.environ["CHAT_HISTORY"]


# ---- the bookkeeping -------------------------------------------------------------------------------------------

def _later(*texts: str) -> list[dict]:
    return [{"id": f"s{i}", "type": "assistant_message", "output": t, "metadata": {"for": "q"}}
            for i, t in enumerate(texts)]


def test_an_edit_keeps_the_branch_it_replaces_and_shows_the_new_one():
    meta = branches.edited({}, "old question", _later("old reply"))
    assert branches.position(meta) == (1, 2), "the new branch is shown, the second of two"
    assert meta["branches"][0] == {"question": "old question", "later": _later("old reply")}
    again = branches.edited(meta, "newer question", _later("newer reply"))
    assert branches.position(again) == (2, 3)
    assert [b and b["question"] for b in again["branches"]] == ["old question", "newer question", None], \
        "a second edit keeps both earlier branches, oldest first"


def test_switching_keeps_the_branch_leaving_and_hands_over_the_one_shown():
    meta = branches.edited({"location": "x"}, "old question", _later("old reply"))
    meta, target = branches.switched(meta, 0, "new question", _later("new reply"))
    assert target == {"question": "old question", "later": _later("old reply")}
    assert branches.position(meta) == (0, 2) and meta["location"] == "x"
    assert meta["branches"] == [None, {"question": "new question", "later": _later("new reply")}]
    meta, target = branches.switched(meta, 1, "old question", _later("old reply"))
    assert target["question"] == "new question" and meta["branches"][0]["later"] == _later("old reply")


def test_the_buttons_say_which_version_of_the_question_is_shown():
    meta = branches.edited({}, "old", _later("r"))
    [back] = branches.buttons("reply-1", "q", meta)
    assert (back.name, back.label, back.forId, back.payload) == (
        branches.PREVIOUS, "◀ Question 2 / 2", "reply-1", {"question": "q", "to": 0})
    meta, _ = branches.switched(meta, 0, "new", _later("n"))
    [forward] = branches.buttons("reply-1", "q", meta)
    assert (forward.name, forward.label, forward.payload["to"]) == (branches.NEXT, "Question 1 / 2 ▶", 1)
    assert branches.buttons("reply-1", "q", {}) == [], "a question never edited has no buttons"
    assert branches.position({"branches": [None, None], "branch": 5}) is None, "a broken record shows none"


async def test_notices_are_not_part_of_a_branch():
    def message(kind, meta):
        return app.cl.Message(content="x", type=kind, metadata=meta)

    init_http_context()
    kept = branches.conversation([message("user_message", {}), message("assistant_message", {"for": "q"}),
                                  message("assistant_message", {}), message("assistant_message", '{"for": "q"}')])
    assert [k["type"] for k in kept] == ["user_message", "assistant_message", "assistant_message"]


# ---- the hooks, with a fake engine ------------------------------------------------------------------------------

class Recorder(harness.recorder.Recorder):
    """What the browser would be sent: each message's latest content, and the buttons shown."""

    def __init__(self, session):
        super().__init__(session)
        self.actions: list[dict] = []

    async def emit(self, event, data):
        if event == "action":
            self.actions.append(data)
        elif event == "remove_action":
            found = next((a for a in self.actions if a["id"] == data["id"]), None)
            if found is not None:
                self.actions.remove(found)


@pytest.fixture
async def chat(monkeypatch):
    context = init_http_context()
    context.emitter = Recorder(context.session)
    fake = harness.fake_engine.FakeEngine(app.engine.settings)
    monkeypatch.setattr(app, "engine", fake)
    monkeypatch.setattr(broadcast, "broadcast", lambda key, **values: asyncio.sleep(0))
    await app.start_chat()
    return context.emitter, fake


async def _ask(text: str) -> app.cl.Message:
    question = app.cl.Message(content=text, author="User", type="user_message")
    chat_context.add(question)  # as Chainlit's own handler of a sent message does
    await app.on_message(question)
    return question


async def _edit(question, text: str) -> None:
    """What ui/edits.py's handler of Chainlit's pencil does, without the socket."""
    chat = app.chat_state.made()
    shown = chat_context.get()
    index = shown.index(question)
    chat.edit = edits.Edit(question, question.content, shown[index + 1:], list(chat.turns))
    question.content = text
    await app.on_message(question)


async def _exported(fake) -> str:
    """The Markdown file of the Export chip."""
    from ui import chat_files

    made, original = [], chat_files.cl.File

    def file(**kwargs):
        made.append(kwargs)
        return original(**kwargs)

    chat_files.cl.File = file
    try:
        await chat_files.export(fake, None)
    finally:
        chat_files.cl.File = original
    return next(f["content"].decode() for f in made if f["name"].endswith(".md"))


def _button(shown: Recorder, name: str) -> app.cl.Action:
    found = [a for a in shown.actions if a["name"] == name]
    assert len(found) == 1, f"one {name} button, not {len(found)}: {shown.actions}"
    return app.cl.Action(**{k: found[0][k] for k in ("name", "payload", "id", "forId")})


async def test_an_edited_question_keeps_its_old_branch_and_switching_shows_it_and_makes_it_the_prompt(chat):
    shown, fake = chat
    first = await _ask("first")
    fake.deltas = ["Second answer"]
    await _ask("second")
    old_texts = set(shown.shown.values())
    fake.deltas = ["Edited answer"]
    await _edit(first, "first, edited")
    assert fake.seen[-1] == [{"role": "user", "content": "first, edited"}]
    assert not any("Second answer" in text for text in shown.shown.values()), "the old turns left the page"
    back = _button(shown, branches.PREVIOUS)
    assert [a["label"] for a in shown.actions if a["name"] == branches.PREVIOUS] == ["◀ Question 2 / 2"]

    app.chat_state.made().context_used = 9999  # what the edited branch took, say
    await app.switch_branch(back)
    assert app.chat_state.made().context_used == 31, "the context line counts the branch shown (30 + 1 tokens)"
    assert shown.shown[first.id] == "first" and set(shown.shown.values()) >= old_texts, \
        "the old question, its reply and the turn after it are shown again"
    assert not any("Edited answer" in text for text in shown.shown.values())
    assert [a["label"] for a in shown.actions if a["name"] == branches.NEXT] == ["Question 1 / 2 ▶"]
    assert not [a for a in shown.actions if a["name"] == branches.PREVIOUS], "the other button went"
    assert app.REGENERATE_ACTION in [a["name"] for a in shown.actions], "the latest reply has its tools again"
    fake.deltas = ["Third"]
    await _ask("third")
    assert fake.seen[-1] == [
        {"role": "user", "content": "first"}, {"role": "assistant", "content": "Hello there, friend."},
        {"role": "user", "content": "second"}, {"role": "assistant", "content": "Second answer"},
        {"role": "user", "content": "third"}], "the prompt is the branch shown"

    assert "Second answer" in await _exported(fake) and "Edited answer" not in await _exported(fake), \
        "the export writes the branch shown"

    await app.switch_branch(_button(shown, branches.NEXT))
    assert shown.shown[first.id] == "first, edited"
    assert not any(t in text for text in shown.shown.values() for t in ("Second answer", "Third"))
    await _ask("fourth")
    assert fake.seen[-1][:2] == [{"role": "user", "content": "first, edited"},
                                 {"role": "assistant", "content": "Edited answer"}]
    await app.switch_branch(_button(shown, branches.PREVIOUS))
    assert any("Third" in text for text in shown.shown.values()), "the branch keeps the turns asked in it"


async def test_a_switch_while_a_reply_is_written_is_refused_and_changes_nothing(chat):
    shown, fake = chat
    first = await _ask("first")
    await _edit(first, "first, edited")
    before, turns = dict(shown.shown), list(app.chat_state.made().turns)
    app.chat_state.made().request_id = "req-1"  # a reply being written
    await app.switch_branch(_button(shown, branches.PREVIOUS))
    app.chat_state.made().request_id = None
    assert "still being written" in list(shown.shown.values())[-1]
    assert {k: v for k, v in shown.shown.items() if k in before} == before
    assert app.chat_state.made().turns == turns
    await app.switch_branch(app.cl.Action(name=branches.PREVIOUS, payload={"question": first.id, "to": 1}))
    assert "no longer here" in list(shown.shown.values())[-1], "a button of a branch already shown changes nothing"
    assert app.chat_state.made().turns == turns


async def test_a_later_questions_own_branches_travel_with_the_branch_it_is_in(chat):
    shown, fake = chat
    first = await _ask("first")
    await _edit(first, "first, edited")
    second = await _ask("second")
    fake.deltas = ["Answer to the second, edited"]
    await _edit(second, "second, edited")
    assert len([a for a in shown.actions if a["name"] == branches.PREVIOUS]) == 2, "each edited question's reply"
    outer = next(a for a in shown.actions if a["name"] == branches.PREVIOUS and a["payload"]["question"] == first.id)
    await app.switch_branch(app.cl.Action(**{k: outer[k] for k in ("name", "payload", "id", "forId")}))
    assert second.id not in shown.shown and shown.shown[first.id] == "first"
    await app.switch_branch(_button(shown, branches.NEXT))
    assert shown.shown[first.id] == "first, edited" and shown.shown[second.id] == "second, edited"
    inner = next(a for a in shown.actions if a["name"] == branches.PREVIOUS and a["payload"]["question"] == second.id)
    await app.switch_branch(app.cl.Action(**{k: inner[k] for k in ("name", "payload", "id", "forId")}))
    assert shown.shown[second.id] == "second" and shown.shown[first.id] == "first, edited"
    await _ask("third")
    assert [t["content"] for t in fake.seen[-1] if t["role"] == "user"] == ["first, edited", "second", "third"]


async def test_a_reopened_chat_whose_edited_question_lost_its_new_reply_still_reaches_the_old_branch(chat):
    shown, fake = chat
    context = init_http_context()  # Chainlit reopens a chat in a session of its own
    context.emitter = shown = Recorder(context.session)
    old_reply = {"id": "r0", "type": "assistant_message", "name": "ERNIE Chat", "output": "Old answer",
                 "metadata": {"for": "q1", "answer": "Old answer"}, "createdAt": "2026-12-06T10:00:01Z"}
    meta = {"branches": [{"question": "old question", "later": [old_reply]}, None], "branch": 1}
    thread = {"id": "t1", "steps": [  # the server was killed before the edited question's reply was saved
        {"id": "q1", "type": "user_message", "output": "new question", "metadata": json.dumps(meta),
         "createdAt": "2026-12-06T10:00:00Z"}]}
    await app.resume_chat(thread)
    for step in thread["steps"]:  # as Chainlit does once on_chat_resume returns
        chat_context.add(app.cl.Message.from_dict(step))
    assert "This question was edited: its earlier versions are kept." in shown.shown.values()
    await app.switch_branch(_button(shown, branches.PREVIOUS))
    assert shown.shown["q1"] == "old question" and shown.shown["r0"] == "Old answer"
    assert "This question was edited: its earlier versions are kept." not in shown.shown.values()
    assert app.chat_state.made().turns == [{"id": "q1", "role": "user", "content": "old question"},
                                           {"role": "assistant", "content": "Old answer"}]
    assert [a["label"] for a in shown.actions if a["name"] == branches.NEXT] == ["Question 1 / 2 ▶"]


# ---- the real server, restarted ---------------------------------------------------------------------------------

REGENERATE = "regenerate_reply"


@pytest.fixture(scope="module")
def history(engine_env, tmp_path_factory):
    """The server's environment with its own history database; `start()` starts a server on it."""
    from harness.server import restartable_with_history

    with restartable_with_history(engine_env, tmp_path_factory.mktemp("branches")) as start:
        yield start




def _shown(client) -> list[tuple[str, str]]:
    """The questions and replies the page shows, in order."""
    return [(m.type, m.content) for m in client.messages.values()
            if m.type == "user_message" or m.author == "ERNIE Chat"]


def _branch_button(client, name: str, label: str):
    found = client.action(name)
    return found if found is not None and found.get("label") == label else None


async def _pressed(client, button: dict, question_id: str, question_text: str) -> None:
    """Press a branch button and wait until the page shows that branch's question."""
    await client.click(button)
    await shown_within(lambda: getattr(client.messages.get(question_id), "content", None) == question_text,
                 f"the question shown as {question_text!r}", client)
    await asyncio.sleep(0.5)  # the branch's messages follow the question


@pytest.mark.slow
async def test_both_branches_of_an_edit_survive_a_kill_9_and_switch_on_the_reopened_chat(history):
    import signal

    from harness.chat_client import ChatClient
    from harness.stored import step_texts

    server = history()
    client = await ChatClient(server.url).connect()
    await client.change_settings({"max_tokens": 12})
    await client.ask("Name a colour.")
    await client.ask("And another one?")
    old = _shown(client)
    first = next(m for m in client.messages.values() if m.type == "user_message")
    await client.edit(first.id, "Name a fruit.")
    await client.wait_idle()
    back = await shown_within(lambda: _branch_button(client, branches.PREVIOUS, "◀ Question 2 / 2"), "◀ Question 2 / 2",
                        client)
    new = _shown(client)
    assert [text for kind, text in new if kind == "user_message"] == ["Name a fruit."], "the later turns left"

    await _pressed(client, back, first.id, "Name a colour.")
    await shown_within(lambda: _shown(client) == old, "the old branch shown again", client)
    await shown_within(lambda: _branch_button(client, branches.NEXT, "Question 1 / 2 ▶"), "Question 1 / 2 ▶", client)
    await shown_within(lambda: (client.action(REGENERATE) or {}).get("forId") == client.replies("ERNIE Chat")[-1].id,
                 "Regenerate under the branch's latest reply", client)
    await client.change_settings({"max_tokens": 4096})
    await client.send("Tell me everything you know.")  # the server dies while this is written
    await client.wait_started()
    await asyncio.sleep(1.5)
    server.kill(signal.SIGKILL, group=True)
    await client.close(thread_within_s=0)

    server = history()
    reopened = await ChatClient(server.url, thread_id=client.thread_id).connect()
    try:
        assert step_texts(reopened.resumed)[:4] == old, "the history holds the branch shown"
        forward = await shown_within(lambda: _branch_button(reopened, branches.NEXT, "Question 1 / 2 ▶"),
                               "the branch buttons of the reopened chat", reopened)
        await _pressed(reopened, forward, first.id, "Name a fruit.")
        await shown_within(lambda: _shown(reopened) == new, "the edited branch, as it was shown", reopened)
        back = await shown_within(lambda: _branch_button(reopened, branches.PREVIOUS, "◀ Question 2 / 2"),
                            "◀ Question 2 / 2 after the switch", reopened)
        await reopened.change_settings({"max_tokens": 12})
        await reopened.ask("Which is sweetest?")
        assert [t for k, t in _shown(reopened) if k == "user_message"] == ["Name a fruit.", "Which is sweetest?"]
        await _pressed(reopened, back, first.id, "Name a colour.")
        await shown_within(lambda: _shown(reopened)[:4] == old, "the old branch again, after the restart", reopened)
    finally:
        await reopened.close()


# ---- Chromium ---------------------------------------------------------------------------------------------------

from test_browser import CHROMEDRIVER, CHROMIUM, browser, page_state  # noqa: E402,F401  (the browser fixture)


@pytest.mark.slow
@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER) and not os.environ.get("CI"),
                    reason="needs Debian's chromium and chromium-driver (scripts/setup.sh --dev installs them)")
def test_an_edit_in_the_browser_shows_2_of_2_and_switching_back_shows_the_old_reply(
        app_server, browser, tmp_path):  # noqa: F811  (test_browser's fixture)
    from pathlib import Path

    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 480, ignored_exceptions=[StaleElementReferenceException, WebDriverException])
    browser.get(app_server.url)
    wait.until(ready.element_to_be_clickable((By.ID, "chat-input")))

    def sent(driver) -> bool:  # Chainlit ignores Enter while a task runs: a question left in the box gets it again
        box = driver.find_element(By.ID, "chat-input")
        if not (box.get_attribute("value") or box.text or ""):
            box.send_keys("Name a colour.")
        box.send_keys(Keys.ENTER)
        return not (box.get_attribute("value") or box.text or "")

    wait.until(sent, "the question stayed in the input box")
    regenerate = (By.XPATH, "//button[contains(., 'Regenerate')]")
    wait.until(ready.element_to_be_clickable(regenerate), "no Regenerate under the reply")

    def chat_text(driver) -> str:  # the messages only (the sidebar names the chat after its first question)
        return "\n".join(step.text for step in driver.find_elements(By.CSS_SELECTOR, ".step"))

    def reply_text(driver) -> str:
        return driver.find_elements(By.CSS_SELECTOR, ".ai-message")[-1].text.split("\n")[0]

    old_reply = reply_text(browser)
    browser.execute_script("document.querySelector('.edit-message').click()")  # the pencil shows on hover
    box = wait.until(ready.element_to_be_clickable((By.ID, "edit-chat-input")))
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("Name a fruit.")
    browser.find_element(By.CSS_SELECTOR, ".confirm-edit").click()
    back = (By.XPATH, "//button[contains(., 'Question 2 / 2')]")
    try:
        wait.until(ready.element_to_be_clickable(back))
    except TimeoutException:
        raise AssertionError(f"no 'Question 2 / 2' under the edited question's reply: {page_state(browser)}") from None
    body = chat_text(browser)
    assert "Name a fruit." in body and "Name a colour." not in body
    picture = Path(os.environ.get("CHAT_SCREENSHOT_BRANCHES") or tmp_path / "edit-branches.png")
    browser.set_window_size(1400, 1600)  # the edited question and its reply's buttons in one picture
    browser.execute_script(  # the chat scrolled to its end: Chainlit's scroll-down arrow then covers no button
        "let e = arguments[0]; while (e && e.scrollHeight <= e.clientHeight + 1) e = e.parentElement;"
        "if (e) e.scrollTop = e.scrollHeight;", browser.find_element(*back))
    time.sleep(1)
    assert browser.save_screenshot(str(picture)) and picture.stat().st_size > 10_000
    browser.set_window_size(1400, 900)

    browser.find_element(*back).click()
    try:
        wait.until(ready.element_to_be_clickable((By.XPATH, "//button[contains(., 'Question 1 / 2')]")))
        wait.until(lambda d: "Name a colour." in chat_text(d))
    except TimeoutException:
        raise AssertionError(f"the old branch did not come back: {page_state(browser)}") from None
    body = chat_text(browser)
    assert old_reply in body and "Name a fruit." not in body, "the old question and its reply are shown again"
    wait.until(ready.element_to_be_clickable(regenerate), "the old branch's latest reply has its tools again")
