"""The app in a real browser: Debian's headless Chromium loads the page, chats, and opens the settings sidebar.

The screenshot goes to a temporary folder; `bash scripts/screenshot.sh` refreshes the README's picture
(docs/chat.png) on purpose, by pointing CHAT_SCREENSHOT at it.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
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
                 "--window-size=1400,900"):
        options.add_argument(flag)
    # the page's socket events and requests, read back when a wait fails (`traffic`)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    options.add_experimental_option("perfLoggingPrefs", {"enableNetwork": True, "enablePage": False})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def cost_line_style(browser):
    """Computed font size, the reply's font size, weight and opacity of the cost line (None while it re-renders)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        cost = browser.find_element(
            By.XPATH, "(//span[contains(@class, 'italic')]/code[contains(., 'reply tokens')])[last()]")
        paragraph = cost.find_element(By.XPATH, "../..")  # code < span.italic < the paragraph
        return (float(cost.value_of_css_property("font-size").removesuffix("px")),
                float(paragraph.value_of_css_property("font-size").removesuffix("px")),
                cost.value_of_css_property("font-weight"), float(cost.value_of_css_property("opacity")))
    except (NoSuchElementException, StaleElementReferenceException):
        return None


def test_a_user_chats_in_the_browser_and_opens_the_settings(app_server, browser, tmp_path):
    from selenium.common.exceptions import (ElementNotInteractableException, StaleElementReferenceException,
                                            WebDriverException)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    # the page re-renders as the engine starts and the reply streams: an element found a moment ago can be gone;
    # and the chat's first message moves the page to the new thread's address, which aborts a command under way
    # ("aborted by navigation"): the wait asks again
    wait = WebDriverWait(browser, 240, ignored_exceptions=[StaleElementReferenceException, WebDriverException])
    browser.get(app_server.url)
    wait.until(ready.element_to_be_clickable((By.ID, "chat-input")))
    assert "ERNIE Chat" in browser.title or "ERNIE" in browser.page_source

    def send(driver) -> bool:  # the input is re-rendered after sign-in and while the engine starts: find it again
        try:
            box = driver.find_element(By.ID, "chat-input")
            box.send_keys("Hello from the browser! 你好")  # ChromeDriver types only BMP characters
            box.send_keys(Keys.ENTER)
            return True
        except (StaleElementReferenceException, ElementNotInteractableException):
            return False

    wait.until(send)
    wait.until(lambda d: "Hello from the browser! 你好" in d.find_element(By.TAG_NAME, "body").text)
    wait.until(lambda d: "tok/s" in d.find_element(By.TAG_NAME, "body").text)  # the reply ended with its stats
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "reply tokens" in body and "first token" in body
    size, text_size, weight, opacity = wait.until(cost_line_style)
    assert size < text_size * 0.9, "the cost line must be smaller than the reply (public/style.css)"
    assert weight == "400" and opacity < 1, "and light and muted, not Chainlit's bold code chip"

    browser.find_element(By.ID, "chat-settings-header-button").click()
    panel = wait.until(ready.visibility_of_element_located((By.ID, "chat-settings-sidebar-content")))
    wait.until(lambda d: "Memory preset" in panel.text, "the settings sidebar shows no widgets")  # drawn after it opens
    for label in ("Memory preset", "Temperature", "Max new tokens", "System prompt"):
        assert label in panel.text
    picture = Path(os.environ.get("CHAT_SCREENSHOT") or tmp_path / "chat.png")
    assert browser.save_screenshot(str(picture)) and picture.stat().st_size > 10_000

    # a new page lists the chat in the history sidebar; opening it shows it as it was
    shown = browser.find_element(By.TAG_NAME, "body").text
    browser.get(app_server.url)
    entry = (By.XPATH, "//*[@id='thread-history']//a[contains(., 'Hello from the browser')]")
    wait.until(ready.element_to_be_clickable(entry), "the chat is not listed in the history sidebar").click()
    wait.until(lambda d: "/thread/" in d.current_url and "tok/s" in d.find_element(By.TAG_NAME, "body").text,
               "the chat reopened from the history does not show its reply")
    reopened = browser.find_element(By.TAG_NAME, "body").text
    assert "Hello from the browser! 你好" in reopened
    cost = [line for line in shown.splitlines() if "reply tokens" in line][-1]
    assert cost in reopened, "the reply comes back with its cost line"
    history = Path(os.environ.get("CHAT_SCREENSHOT_HISTORY") or tmp_path / "history.png")
    assert browser.save_screenshot(str(history)) and history.stat().st_size > 10_000
    print(f"\nscreenshots: {picture} {history}")


def page_state(browser) -> str:
    """What a person would see when a wait fails: the buttons (greyed or not), whether the page shows its Stop
    button (Chainlit's sign that it believes a task of the chat still runs), and the page's last lines."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    try:
        buttons = [(b.text.strip() or b.get_attribute("id") or "?", b.is_enabled())
                   for b in browser.find_elements(By.TAG_NAME, "button") if b.is_displayed()]
        stop_shown = bool(browser.find_elements(By.ID, "stop-button"))
        lines = browser.find_element(By.TAG_NAME, "body").text.splitlines()[-6:]
    except WebDriverException as error:  # the page changed under the look
        return f"the page could not be read ({type(error).__name__})"
    return f"buttons {buttons}; Stop button shown: {stop_shown}; the page ends {lines}; {traffic(browser)}"


def traffic(browser, last: int = 40) -> str:
    """The page's last socket events (in and out, token streams counted, not listed) and its action requests with
    how they ended, in the order Chromium saw them: what the page was told, and what it asked, before a wait
    failed."""
    import json
    import re

    from selenium.common.exceptions import WebDriverException

    try:
        entries = browser.get_log("performance")
    except WebDriverException as error:
        return f"no network log ({type(error).__name__})"
    seen, requests, tokens = [], {}, 0
    for entry in entries:
        event = json.loads(entry["message"])["message"]
        method, params = event["method"], event.get("params", {})
        if method in ("Network.webSocketFrameReceived", "Network.webSocketFrameSent"):
            name = re.match(r'\d+\["([^"]+)"', params["response"]["payloadData"])
            if name is None:
                continue
            if name.group(1) == "stream_token":
                tokens += 1
                continue
            if tokens:
                seen.append(f"stream_token x{tokens}")
                tokens = 0
            seen.append(("<" if method.endswith("Received") else ">") + name.group(1))
        elif method == "Network.requestWillBeSent" and "/project/" in params["request"]["url"]:
            requests[params["requestId"]] = params["request"]["url"].split("/project/")[1]
            seen.append(f"{params['request']['method']} {requests[params['requestId']]}")
        elif method in ("Network.responseReceived", "Network.loadingFailed") and params["requestId"] in requests:
            outcome = params["response"]["status"] if "response" in params else params.get("errorText")
            seen.append(f"{requests[params['requestId']]} -> {outcome}")
    if tokens:
        seen.append(f"stream_token x{tokens}")
    return f"socket and requests, last {last}: {seen[-last:]}"


def test_regenerate_under_a_reply_and_the_export_chip(app_server, browser, tmp_path):
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 240, ignored_exceptions=[StaleElementReferenceException, WebDriverException])
    browser.get(app_server.url)
    wait.until(ready.element_to_be_clickable((By.ID, "chat-input")))

    def typed(driver) -> bool:
        driver.find_element(By.ID, "chat-input").send_keys("Name a colour.", Keys.ENTER)
        return True

    wait.until(typed)

    def sent(driver) -> bool:  # Chainlit ignores Enter while a task runs (the chat's own start, on a busy machine):
        box = driver.find_element(By.ID, "chat-input")  # a question left in the box gets Enter again, as from a person
        if "Name a colour." in (box.get_attribute("value") or box.text or ""):
            box.send_keys(Keys.ENTER)
            return False
        return True

    wait.until(sent, "the question stayed in the input box")
    regenerate = (By.XPATH, "//button[contains(., 'Regenerate')]")
    WebDriverWait(browser, 480, ignored_exceptions=[StaleElementReferenceException, WebDriverException]).until(
        ready.presence_of_element_located(regenerate), "no Regenerate button under the reply")  # a busy machine

    def costs(driver) -> list[str]:
        return [line for line in driver.find_element(By.TAG_NAME, "body").text.splitlines() if "reply tokens" in line]

    refused = []  # why the last press did not go through

    def press(locator):  # the page may re-render, or a tooltip cover the button, for a moment: press again
        def pressed(driver) -> bool:
            button = driver.find_element(*locator)
            if not button.is_enabled():  # shown but greyed: Chainlit enables a reply's actions when its task ends
                refused[:] = ["the button is greyed"]
                return False
            try:
                button.click()
            except WebDriverException as error:
                refused[:] = [f"{type(error).__name__}: {error.msg}"]
                raise
            return True
        return pressed

    # a reply's buttons at the bottom edge of the chat, as they are when it ends there, with Chainlit's scroll-down
    # arrow showing (the view is not at the very end): a click on them reaches them (public/style.css)
    wait.until(ready.element_to_be_clickable(regenerate))  # enabled once the reply's task ends
    browser.execute_script("arguments[0].scrollIntoView({block: 'end'})", browser.find_element(*regenerate))
    wait.until(ready.visibility_of_element_located((By.CSS_SELECTOR, "div.absolute.bottom-4 > button.rounded-full")),
               "Chainlit's scroll-down arrow did not show")
    assert browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return arguments[0].contains(document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2))",
        browser.find_element(*regenerate)), "the strip of Chainlit's scroll-down arrow covers the reply's buttons"
    assert browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return arguments[0].contains(document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2))",
        browser.find_element(By.CSS_SELECTOR, "div.absolute.bottom-4 > button.rounded-full")), "and the arrow works"

    first = costs(browser)
    try:
        wait.until(press(regenerate), "the Regenerate button could not be pressed")
    except TimeoutException:
        raise AssertionError(f"the Regenerate button could not be pressed ({refused}): {page_state(browser)}") from None
    try:
        wait.until(lambda d: len(costs(d)) == 1 and costs(d) != first, "the regenerated reply must replace the old one")
    except TimeoutException:
        raise AssertionError(f"the regenerated reply must replace the old one: before {first}, now {costs(browser)}; "
                             f"{page_state(browser)}") from None
    wait.until(ready.element_to_be_clickable(regenerate))  # the new reply has the tools again
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", browser.find_element(*regenerate))
    picture = Path(os.environ.get("CHAT_SCREENSHOT_TOOLS") or tmp_path / "chat-tools.png")
    assert browser.save_screenshot(str(picture)) and picture.stat().st_size > 10_000
    wait.until(press((By.ID, "command-Export")), "no Export chip to click")
    wait.until(lambda d: ".json" in d.find_element(By.TAG_NAME, "body").text, "the export's files are not shown")
    assert browser.save_screenshot(str(picture.with_name("chat-export.png")))


def test_the_status_chip_answers_without_pressing_send(app_server, browser):
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    # the page navigates after sign-in (to the login page and back): a look at it then is retried, not a failure
    wait = WebDriverWait(browser, 240, ignored_exceptions=[StaleElementReferenceException, WebDriverException])
    browser.get(app_server.url)
    wait.until(ready.element_to_be_clickable((By.ID, "chat-input")), "the chat page did not open")  # signed in

    def click_status(driver) -> bool:  # the page may still navigate after sign-in: click again if it did
        try:
            driver.find_element(By.ID, "command-Status").click()
            return True
        except WebDriverException:
            return False

    wait.until(click_status, "no Status chip to click")
    wait.until(lambda d: "Requests running / queued" in d.find_element(By.TAG_NAME, "body").text,
               "one click on Status must show the status table, without Send")


def test_a_file_attached_with_the_paperclip_is_answered_with_it_in_the_prompt(app_server, browser, tmp_path):
    import re

    from selenium.common.exceptions import (ElementNotInteractableException, StaleElementReferenceException,
                                            WebDriverException)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    notes = tmp_path / "meeting-notes.md"
    notes.write_text("# Meeting notes\n" + "".join(f"- point {i}: ship the attachments feature\n" for i in range(60)))
    wait = WebDriverWait(browser, 240, ignored_exceptions=[StaleElementReferenceException, WebDriverException])
    browser.get(app_server.url)
    wait.until(ready.element_to_be_clickable((By.ID, "upload-button")), "no paperclip in the chat input")

    def attach(driver) -> bool:  # the composer is drawn again after sign-in: find its file input again
        try:
            driver.find_element(By.ID, "upload-button-input").send_keys(str(notes))
            return True
        except (StaleElementReferenceException, ElementNotInteractableException):
            return False

    def send(driver) -> bool:
        try:
            box = driver.find_element(By.ID, "chat-input")
            box.send_keys("What do my notes say?")
            box.send_keys(Keys.ENTER)
            return True
        except (StaleElementReferenceException, ElementNotInteractableException):
            return False

    wait.until(attach)
    wait.until(lambda d: "meeting-notes.md" in d.find_element(By.TAG_NAME, "body").text, "the file is not shown")
    wait.until(send)
    wait.until(lambda d: "reply tokens" in d.find_element(By.TAG_NAME, "body").text, "the message was not answered")
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "What do my notes say?" in body and "not sent to the model" not in body
    prompt = int(re.search(r"(\d+) prompt \+ \d+ reply tokens", body).group(1))
    assert prompt > len(notes.read_text()) // 4, f"the file's text is in the prompt ({prompt} tokens)"


def test_the_browser_has_fonts_for_chinese_and_emoji():
    # Without them the pictures show boxes where users see text (scripts/setup.sh --dev installs them).
    families = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True).stdout
    assert "Noto Sans CJK SC" in families and "Noto Color Emoji" in families


def test_an_open_tab_goes_on_in_its_own_chat_after_the_server_restarts(engine_env, browser, tmp_path):
    import json
    import sqlite3
    import time

    from selenium.common.exceptions import (ElementNotInteractableException, StaleElementReferenceException,
                                            TimeoutException, WebDriverException)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    from harness.presets import APP_PRESET
    from harness.server import ChainlitServer

    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_HISTORY_DB": str(tmp_path / "chats.db"),
           "CHAT_MAX_TOKENS": "32"}
    ignored = [StaleElementReferenceException, WebDriverException]
    wait = WebDriverWait(browser, 240, ignored_exceptions=ignored)

    def replies(driver) -> int:
        return driver.find_element(By.TAG_NAME, "body").text.count("reply tokens")

    def replies_now(driver):  # a count, or False (retry) while the page is being drawn
        try:
            return (replies(driver),)
        except WebDriverException:
            return False

    def ask(text: str) -> None:
        """Type `text` and send it, again until it is answered: while the page signs in, starts the engine or
        reconnects to a restarted server, it re-renders its input or does not send (what is judged is where the
        answered message lands)."""
        def send(driver) -> bool:
            """Whether the page took the message: a page still reconnecting keeps it in the box."""
            try:
                box = driver.find_element(By.ID, "chat-input")
                box.send_keys(Keys.CONTROL, "a", Keys.DELETE)  # what an unsent try left there
                box.send_keys(text)
                box.send_keys(Keys.ENTER)
                WebDriverWait(driver, 2, ignored_exceptions=ignored).until(lambda d: text not in box.text)
                return True
            except (StaleElementReferenceException, ElementNotInteractableException, TimeoutException):
                return False
        for _ in range(3):
            (shown,) = wait.until(replies_now)
            try:
                wait.until(send)
            except Exception as error:
                raise AssertionError(f"the chat input could not be used to ask {text!r}; {page_state()}") from error
            try:
                WebDriverWait(browser, 150, ignored_exceptions=ignored).until(lambda d: replies(d) > shown)
                return
            except Exception:
                continue
        raise AssertionError(f"no reply to {text!r}; {page_state()}")

    def page_state() -> str:
        """Where the page is and what it shows, with the newest server's log, for a failure's message."""
        try:
            shown = f"the page at {browser.current_url} shows {browser.find_element(By.TAG_NAME, 'body').text[-600:]!r}"
        except WebDriverException as error:
            shown = f"the page cannot be read ({error.msg})"
        logs = sorted(tmp_path.glob("*.log"), key=lambda path: path.stat().st_mtime)
        return shown + (f"; {logs[-1].name} ends with {logs[-1].read_text()[-3000:]}" if logs else "")

    first = ChainlitServer(env, tmp_path / "first.log").start()
    try:
        browser.get(first.url)
        wait.until(ready.element_to_be_clickable((By.ID, "chat-input")))
        ask("Before the restart")
    finally:
        assert first.stop() == 0
    time.sleep(10)  # down long enough for the page to notice: its socket and its requests find nobody answering
    second = ChainlitServer(env, tmp_path / "second.log", port=first.port).start()
    try:
        ask("After the restart")  # the page reconnects by itself, with its session
        with sqlite3.connect(tmp_path / "chats.db") as db:
            threads = db.execute("SELECT id FROM threads").fetchall()
            asked = [row[0] for row in db.execute("SELECT output FROM steps WHERE type = 'user_message'")]
        assert len(threads) == 1 and "After the restart" in asked[asked.index("Before the restart"):], \
            (threads, asked)
    finally:
        assert second.stop() == 0


def test_a_document_added_to_the_library_answers_a_question_with_its_source(app_server, browser, tmp_path):
    """The Library chip with a file attached adds it; @name in a question answers from it, its source named under
    the reply and shown beside it. `bash scripts/screenshot.sh` keeps the picture as docs/library.png."""
    from selenium.common.exceptions import (ElementNotInteractableException, StaleElementReferenceException,
                                            WebDriverException)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    manual = tmp_path / "kettle-manual.txt"
    manual.write_text("\n\n".join(__import__("json").loads(
        (Path(__file__).parent / "data" / "library_set.json").read_text())["documents"]["kettle-manual.txt"]))
    wait = WebDriverWait(browser, 240, ignored_exceptions=[StaleElementReferenceException, WebDriverException])
    browser.get(app_server.url)
    wait.until(ready.element_to_be_clickable((By.ID, "upload-button")), "no paperclip in the chat input")

    def attach(driver) -> bool:
        try:
            driver.find_element(By.ID, "upload-button-input").send_keys(str(manual))
            return True
        except (StaleElementReferenceException, ElementNotInteractableException):
            return False

    def click(element_id: str):
        def clicking(driver) -> bool:
            try:
                driver.find_element(By.ID, element_id).click()
                return True
            except WebDriverException:
                return False
        return clicking

    def ask(driver) -> bool:
        try:
            box = driver.find_element(By.ID, "chat-input")
            box.send_keys("@kettle How often should I descale it?")
            box.send_keys(Keys.ENTER)
            return True
        except (StaleElementReferenceException, ElementNotInteractableException):
            return False

    wait.until(attach)
    wait.until(lambda d: "kettle-manual.txt" in d.find_element(By.TAG_NAME, "body").text, "the file is not shown")
    wait.until(click("command-Library"), "no Library chip to click")  # the chip sends the message with its file
    wait.until(lambda d: "Added to your library" in d.find_element(By.TAG_NAME, "body").text,
               "the Library chip with a file attached did not add it")
    wait.until(ask)
    wait.until(lambda d: "From your library" in d.find_element(By.TAG_NAME, "body").text,
               "the question that named the document was not answered from it")
    assert "[1] kettle-manual.txt, passage 1" in browser.find_element(By.TAG_NAME, "body").text
    chips = [link.text for link in browser.find_elements(By.CSS_SELECTOR, "a.element-link")]
    assert "[1] kettle-manual.txt, passage 1" in chips, f"the source chip does not spell the file's name: {chips}"
    sources = browser.find_element(By.XPATH, "(//*[contains(text(), 'From your library')])[last()]")
    browser.execute_script("arguments[0].scrollIntoView({block: 'end'})", sources)
    picture = Path(os.environ.get("CHAT_SCREENSHOT_LIBRARY") or tmp_path / "library.png")
    assert browser.save_screenshot(str(picture)) and picture.stat().st_size > 10_000
