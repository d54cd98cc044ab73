"""The names the message box offers after an @: GET /library/names answers the signed-in user their own documents'
names and nobody else's, refuses a request without a sign-in, and is put on Chainlit's server once however often
the app loads (web/library_names.py); in a real browser, typing `@ke` offers the document, Enter puts its name in
the box without sending, and the question then sent is answered from it (public/library-names.js)."""

import json
import os
import shutil
from pathlib import Path

import pytest

from engine.settings import load_settings
from history import library
from history.layer import HistoryLayer
from history.schema import prepare
from web.library_names import PATH, names_route, serve_names

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
DOCUMENTS = json.loads((Path(__file__).parent / "data" / "library_set.json").read_text())["documents"]


@pytest.fixture
def signed_in(tmp_path, monkeypatch):
    """A client of an app serving the route over a real history (ada's two documents, bob's one), with Chainlit's
    password sign-in on; `token(user)` makes the sign-in's cookie value for a user."""
    import chainlit.data
    from chainlit import User
    from chainlit.auth import create_jwt
    from chainlit.config import config
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    settings = load_settings(history_db=tmp_path / "chats.db")
    prepare(settings)
    layer = HistoryLayer(settings)
    monkeypatch.setenv("CHAINLIT_AUTH_SECRET", "a-secret-for-these-tests-only-" + "x" * 32)
    monkeypatch.setattr(config.code, "password_auth_callback", lambda username, password: None)
    monkeypatch.setattr(chainlit.data, "_data_layer", layer)
    monkeypatch.setattr(chainlit.data, "_data_layer_initialized", True)

    async def add(user: str, name: str) -> None:
        await library.add(layer, user, name, 100, "\n\n".join(DOCUMENTS["kettle-manual.txt"]))

    app = FastAPI()
    app.router.routes.append(names_route(layer))
    with TestClient(app) as client:
        for user, name in (("ada", "kettle-manual.txt"), ("ada", "养花 笔记.txt"), ("bob", "bobs-secret-plan.md")):
            client.portal.call(add, user, name)
        yield client, lambda user: create_jwt(User(identifier=user))


def cookie(token: str) -> dict:
    """The headers of a request that carries the sign-in's cookie, as the browser sends it."""
    return {"Cookie": f"access_token={token}"}


def test_the_route_answers_each_user_their_own_names_and_refuses_a_request_without_a_sign_in(signed_in):
    import jwt

    client, token = signed_in
    ada = client.get(PATH, headers=cookie(token("ada")))
    assert ada.status_code == 200 and ada.json() == ["kettle-manual.txt", "养花 笔记.txt"], ada.text
    assert ada.headers["cache-control"] == "no-store"
    bob = client.get(PATH, headers={"Authorization": f"Bearer {token('bob')}"})
    assert bob.status_code == 200 and bob.json() == ["bobs-secret-plan.md"], bob.text
    assert client.get(PATH, headers=cookie(token("carol"))).json() == [], "a user without documents"

    assert client.get(PATH).status_code == 401, "no sign-in"
    assert client.get(PATH, headers=cookie("not-a-token")).status_code == 401
    forged = jwt.encode({"identifier": "ada", "metadata": {}}, "another-secret-" + "y" * 32, algorithm="HS256")
    assert client.get(PATH, headers=cookie(forged)).status_code == 401, "a token not signed by the app"


def test_the_route_is_put_ahead_of_chainlits_page_once_however_often_the_app_loads(monkeypatch):
    from chainlit.server import app

    monkeypatch.setattr(app.router, "routes", list(app.router.routes))
    # the app loaded by an earlier test may have put the route in already
    others = len([route for route in app.router.routes if getattr(route, "path", "") != PATH])
    serve_names(None)
    serve_names(None)  # a `-w` reload
    ours = [route for route in app.router.routes if getattr(route, "path", "") == PATH]
    assert len(ours) == 1 and app.router.routes[0] is ours[0] and len(app.router.routes) == others + 1


browser_only = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER) and not os.environ.get("CI"),
    reason="needs Debian's chromium and chromium-driver (scripts/setup.sh --dev installs them)")


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1200,800"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def suggested(driver) -> list[str]:
    """The names the list above the box offers now ([] while it is closed)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#library-names [role=option]')].map(o => o.textContent)")


def sent(driver) -> str:
    """The chat's user messages, as shown."""
    return driver.execute_script("return [...document.querySelectorAll('[data-step-type=user_message]')]"
                                 ".map(m => m.textContent).join('\\n')")


def box_value(driver) -> str:
    return driver.execute_script("return (document.getElementById('chat-input') || {}).value")


@browser_only
def test_typing_at_offers_the_libraries_names_and_enter_puts_one_in_the_box(app_server, browser, tmp_path):
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from test_browser import page_state
    from test_newcomer import body, click, waiter

    files = []
    for name in ("kettle-manual.txt", "养花笔记.txt"):
        files.append(tmp_path / name)
        files[-1].write_text("\n\n".join(DOCUMENTS[name]))
    wait = waiter(browser)
    browser.get(app_server.url)

    def attach(driver) -> bool:
        """Both files at once, once: a file attached twice would be added twice."""
        try:
            driver.find_element(By.ID, "upload-button-input").send_keys("\n".join(str(path) for path in files))
            return True
        except WebDriverException:
            return False

    refused = []  # why the box last refused the keys, for a wait that fails

    def typing(*keys):
        def typed(driver) -> bool:
            try:
                driver.find_element(By.ID, "chat-input").send_keys(*keys)
                return True
            except WebDriverException as error:
                refused[:] = [error.msg]
                return False
        return typed

    # the chips come from the chat's session: a file attached before it exists is refused by the upload
    wait.until(lambda d: d.find_elements(By.ID, "command-Library"), "the chat did not open")
    wait.until(attach)
    wait.until(lambda d: all(path.name in body(d) for path in files), "the files are not shown")
    wait.until(click("command-Library"), "no Library chip to click")
    # the chip sends the files at once, or marks the message to be sent: then Send sends it (and is off once it has)
    wait.until(lambda d: "Added to your library" in body(d) or click("chat-submit")(d) and False,
               "the Library chip with files attached did not add them")

    wait.until(typing("@花"))  # a Chinese name, found by a character inside it
    wait.until(lambda d: suggested(d) == ["@养花笔记.txt"], f"@花 offered {suggested(browser)}")
    wait.until(typing(Keys.ESCAPE))
    wait.until(lambda d: suggested(d) == [] and box_value(d) == "@花", "Escape did not close the list alone")
    wait.until(typing(Keys.BACKSPACE, Keys.BACKSPACE, "@ke"))
    try:
        wait.until(lambda d: suggested(d) == ["@kettle-manual.txt"])
    except TimeoutException:
        raise AssertionError(f"@ke offered {suggested(browser)}; {page_state(browser)}") from None
    above = browser.execute_script("const l = document.getElementById('library-names').getBoundingClientRect(), "
                                   "b = document.getElementById('chat-input').getBoundingClientRect(); "
                                   "return l.bottom <= b.top && l.height > 10 && l.left >= 0;")
    assert above, "the list is not shown above the message box"
    browser.save_screenshot(str(Path(os.environ.get("CHAT_NEWCOMER_SHOTS") or tmp_path) / "library-names.png"))
    wait.until(typing(Keys.ENTER))
    wait.until(lambda d: box_value(d) == "@kettle-manual.txt " and suggested(d) == [],
               f"Enter did not put the name in the box: {box_value(browser)!r}")
    assert "@kettle-manual.txt" not in sent(browser), "Enter sent the message while the list was open"

    wait.until(typing("How often should I descale it?", Keys.ENTER))
    try:
        wait.until(lambda d: "from your library" in body(d).lower())
    except TimeoutException:
        browser.save_screenshot(str(tmp_path / "answer.png"))
        raise AssertionError(f"the question with the picked name was not answered from the document; "
                             f"{page_state(browser)}; the page: {body(browser)[-1500:]}") from None
    assert "[1] kettle-manual.txt, passage 1" in body(browser).lower(), "the sources line names the document"
    assert "@kettle-manual.txt How often should I descale it?" in sent(browser), sent(browser)

    browser.set_window_size(390, 800)  # a phone: the list stays on the screen
    browser.get(app_server.url)
    try:
        wait.until(typing("@养"))
    except TimeoutException:
        browser.save_screenshot(str(tmp_path / "phone.png"))
        raise AssertionError(f"the box at a phone's width took no keys: {refused}; {page_state(browser)}") from None
    wait.until(lambda d: suggested(d) == ["@养花笔记.txt"], f"@养 offered {suggested(browser)}")
    inside = browser.execute_script("const l = document.getElementById('library-names').getBoundingClientRect(); "
                                    "return l.left >= 0 && l.right <= window.innerWidth && l.top >= 0;")
    assert inside, "the list does not fit a phone's width"
    browser.find_element(By.CSS_SELECTOR, "#library-names [role=option]").click()
    wait.until(lambda d: box_value(d) == "@养花笔记.txt ", f"a click put {box_value(browser)!r} in the box")
