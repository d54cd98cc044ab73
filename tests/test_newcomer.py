"""What a newcomer does on the first day, in a real browser against a real server: begin a chat with a chip, open
the first page while the engine starts, import a chat, regenerate an answer from the library.

Each test saves what the page showed (`CHAT_NEWCOMER_SHOTS`: a folder to keep the pictures in, as docs/newcomer/
does; a temporary folder otherwise).
"""

import os
import shutil
from pathlib import Path

import pytest

from test_browser import page_state

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER) and not os.environ.get("CI"),
    reason="needs Debian's chromium and chromium-driver (scripts/setup.sh --dev installs them)")

# Records whether the page ever drew its Stop button (Chainlit's sign that the chat's task runs), however briefly.
# React may turn the Send button into Stop by changing its id alone, so ids are watched as well as added nodes.
WATCH_STOP = """
window.stopSeen = false;
new MutationObserver(() => { if (document.getElementById('stop-button')) window.stopSeen = true; })
  .observe(document.body, {childList: true, subtree: true, attributes: true, attributeFilter: ['id']});
"""


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
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    options.add_experimental_option("perfLoggingPrefs", {"enableNetwork": True, "enablePage": False})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def shot(browser, tmp_path, name: str) -> Path:
    folder = Path(os.environ.get("CHAT_NEWCOMER_SHOTS") or tmp_path)
    picture = folder / name
    assert browser.save_screenshot(str(picture)) and picture.stat().st_size > 5_000
    return picture


def waiter(browser, seconds: float = 240):
    """A wait whose timeout also says why the last try failed (a step that records it in `why`, as press does)."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    class Waiter(WebDriverWait):
        def until(self, method, message: str = ""):
            try:
                return super().until(method, message)
            except TimeoutException as timeout:
                if not getattr(method, "why", ""):
                    raise
                raise TimeoutException(f"{message}; last try: {method.why}") from timeout

    return Waiter(browser, seconds, ignored_exceptions=[StaleElementReferenceException, WebDriverException])


def body(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def click(element_id: str):
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    def clicking(driver) -> bool:
        try:
            driver.find_element(By.ID, element_id).click()
            return True
        except WebDriverException:
            return False
    return clicking


def typed(text: str):
    """Type `text` and press Enter, again while the page keeps it in the box (a task of the chat still runs)."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    def sending(driver) -> bool:
        try:
            box = driver.find_element(By.ID, "chat-input")
            if text not in (box.get_attribute("value") or box.text or ""):
                box.send_keys(Keys.CONTROL, "a", Keys.DELETE)
                box.send_keys(text)
            box.send_keys(Keys.ENTER)
            return text not in (driver.find_element(By.ID, "chat-input").text or "")
        except WebDriverException:
            return False
    return sending


def test_a_chat_begun_with_the_status_chip_gets_its_address_its_name_and_stop(app_server, browser, tmp_path):
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By

    wait = waiter(browser)
    browser.get(app_server.url)
    wait.until(click("command-Status"), "no Status chip to click")
    wait.until(lambda d: "Requests running / queued" in body(d), "the Status chip did not answer")
    # the Status chip's own task shows Stop until it ends: watch for the reply's Stop from then on
    wait.until(lambda d: not d.find_elements(By.ID, "stop-button"), "the Status chip's task never ended")
    browser.execute_script(WATCH_STOP)
    question = "Tell a long story about a kettle."
    wait.until(typed(question))
    wait.until(lambda d: "reply tokens" in body(d), "the question was not answered")
    try:
        waiter(browser, 30).until(lambda d: "/thread/" in d.current_url)
    except TimeoutException:
        raise AssertionError(f"the chat begun with a chip did not move to its own address ({browser.current_url}); "
                             f"{page_state(browser)}") from None
    finally:
        shot(browser, tmp_path, "chip-chat.png")
    assert browser.execute_script("return window.stopSeen"), "the reply never showed a Stop button"
    entry = (By.XPATH, f"//*[@id='thread-history']//a[contains(., '{question[:20]}')]")
    wait.until(lambda d: d.find_elements(*entry), "the history does not list the chat by its question")
    assert "Untitled Conversation" not in browser.find_element(By.ID, "thread-history").text


def test_an_imported_chat_opens_in_the_same_tab_and_is_listed_there(app_server, browser, tmp_path):
    import json

    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.common.by import By

    chat = tmp_path / "descaling.json"
    chat.write_text(json.dumps([{"role": "user", "content": "How do I descale an old kettle?"},
                                {"role": "assistant", "content": "Boil vinegar and water in it, then rinse."}]))
    wait = waiter(browser)
    browser.get(app_server.url)

    def attach(driver) -> bool:
        try:
            driver.find_element(By.ID, "upload-button-input").send_keys(str(chat))
            return True
        except WebDriverException:
            return False

    # the chips come from the chat's session: a file attached before it exists is refused by the upload
    wait.until(lambda d: d.find_elements(By.ID, "command-Import"), "the chat did not open")
    wait.until(attach)
    wait.until(lambda d: "descaling.json" in body(d), "the file is not shown")
    wait.until(click("command-Import"), "no Import chip to click")  # the chip acts at once: no Send to press
    try:
        wait.until(lambda d: "Imported 2 messages" in body(d))
    except TimeoutException:
        raise AssertionError(f"the import was not confirmed; {page_state(browser)}") from None
    tabs = browser.window_handles
    wait.until(lambda d: d.find_element(By.LINK_TEXT, "open it").click() is None, "no link to the imported chat")
    entry = (By.XPATH, "//*[@id='thread-history']//a[contains(., 'How do I descale')]")
    try:
        wait.until(lambda d: len(d.window_handles) > len(tabs) or (
            "/thread/" in d.current_url and "Boil vinegar and water" in body(d) and d.find_elements(*entry)))
    except TimeoutException:
        raise AssertionError(f"the imported chat did not open at {browser.current_url}, or is not listed in this "
                             f"tab's history; {page_state(browser)}") from None
    shot(browser, tmp_path, "import.png")
    assert len(browser.window_handles) == len(tabs), "the imported chat opened in a new tab"


def test_the_first_page_keeps_its_welcome_while_the_engine_starts_and_new_chat_says_chats_are_kept(
        engine_env, browser, tmp_path):
    import json

    from selenium.webdriver.common.by import By

    from harness.presets import APP_PRESET
    from harness.server import ChainlitServer

    server = ChainlitServer({**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET)},
                            tmp_path / "chainlit.log").start()
    try:
        wait = waiter(browser)
        browser.get(server.url)
        try:
            wait.until(lambda d: "Explain KV caching" in body(d) and d.find_elements(By.ID, "command-Status"),
                       "the first page shows no starters")
        finally:
            shot(browser, tmp_path, "welcome.png")

        def start_line(driver) -> str:
            shown = driver.find_elements(By.ID, "engine-start-line")
            return shown[0].text if shown else ""
        # the start is seen before anything is sent: a line by the message box, none in the chat
        wait.until(lambda d: "Starting the model engine" in start_line(d), "the start was not shown on the page")
        shot(browser, tmp_path, "start-line.png")
        assert "Explain KV caching" in body(browser), "the start line took the welcome's place"
        wait.until(lambda d: server_ready(server), "the engine did not start")
        wait.until(lambda d: not start_line(d), "the start line stayed after the engine was ready")
        # the progress went to each open chat before the engine was ready: none took the welcome's place
        wait.until(lambda d: "Explain KV caching" in body(d))
        shot(browser, tmp_path, "welcome.png")
        assert "Starting the model engine" not in body(browser), "a start note took the place of the welcome"
        wait.until(click("new-chat-button"), "no New chat button")
        wait.until(lambda d: "Create New Chat" in body(d), "no New chat dialog")
        said = body(browser)
        shot(browser, tmp_path, "new-chat.png")
        assert "clear your current chat history" not in said and "stays in your history" in said, said[-300:]
    finally:
        assert server.stop() == 0


def attach_to(element_id: str, path: Path):
    """Give `path` to the file input `element_id` (the message box's, or an upload box's in the chat)."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    def attaching(driver) -> bool:
        try:
            driver.find_element(By.ID, element_id).send_keys(str(path))
            return True
        except WebDriverException:
            return False
    return attaching


def press(button: str):
    """Press the latest button of the chat that the XPath condition `button` picks, e.g. "normalize-space(.)='Go'",
    as a user does: brought to the middle of the chat and pointed at first, which closes the tooltip of whatever the
    pointer rested on (a chip's tooltip stands over the end of the chat while the pointer stays on the chip)."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    def pressing(driver) -> bool:
        try:
            found = driver.find_elements(By.XPATH, f"//button[{button}]")[-1]
            if not found.is_enabled():
                pressing.why = "the button is disabled (the chat is busy)"
                return False
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", found)
            ActionChains(driver).move_to_element(found).perform()
            found.click()
            return True
        except (WebDriverException, IndexError) as error:
            pressing.why = f"{type(error).__name__}: {(getattr(error, 'msg', None) or str(error)).splitlines()[0]}"
            return False
    pressing.why = ""
    return pressing


def test_the_import_chip_with_nothing_attached_asks_for_the_file_in_the_chat(app_server, browser, tmp_path):
    import json

    chat = tmp_path / "repotting.json"
    chat.write_text(json.dumps([{"role": "user", "content": "When should I repot a fern?"},
                                {"role": "assistant", "content": "In spring, when its roots fill the pot."}]))
    wait = waiter(browser)
    browser.get(app_server.url)
    wait.until(click("command-Import"), "no Import chip to click")
    wait.until(lambda d: "Drop a chat's JSON file here" in body(d), "pressing Import alone asked for nothing")
    shot(browser, tmp_path, "import-ask.png")
    wait.until(attach_to("ask-button-input", chat), "the chat's upload box takes no file")
    wait.until(lambda d: "Imported 2 messages" in body(d), "the file picked in the upload box was not imported")
    assert "Drop a chat's JSON file here" not in body(browser), "the upload box stayed after its file came"


def test_the_library_is_driven_by_pointing_the_chip_adds_lists_and_removes(app_server, browser, tmp_path):
    from selenium.webdriver.common.by import By

    manual = tmp_path / "lawnmower-manual.txt"
    manual.write_text("Sharpen the lawnmower blade every spring, and clean the deck after each cut.\n")
    wait = waiter(browser)
    browser.get(app_server.url)
    wait.until(click("command-Library"), "no Library chip to click")  # the chip acts at once: no Send to press
    wait.until(press("normalize-space(.)='Add documents'"), "the library has no Add documents button")
    wait.until(attach_to("ask-button-input", manual), "Add documents opened no upload box")
    wait.until(lambda d: "Added to your library" in body(d) and "lawnmower-manual.txt" in body(d),
               "the file picked in the upload box was not added")
    wait.until(click("command-Library"), "no Library chip to click")
    remove = "starts-with(normalize-space(.), 'Remove') and contains(., 'lawnmower-manual.txt')"
    wait.until(lambda d: d.find_elements(By.XPATH, f"//button[{remove}]"), "the listed document has no Remove button")
    shot(browser, tmp_path, "library-buttons.png")
    wait.until(press(remove), "the Remove button could not be pressed")
    wait.until(lambda d: "Remove lawnmower-manual.txt from your library?" in body(d), "Remove did not ask first")
    wait.until(press("normalize-space(.)='Yes, remove lawnmower-manual.txt'"), "the asking has no Yes, remove button")
    wait.until(lambda d: "Removed lawnmower-manual.txt from your library" in body(d),
               "pressing Remove did not remove the document")


def test_api_keys_are_made_and_revoked_by_pointing(app_server, browser, tmp_path):
    import re

    from selenium.webdriver.common.by import By

    wait = waiter(browser)
    browser.get(app_server.url)
    wait.until(click("command-Keys"), "no Keys chip to click")  # the chip acts at once: no Send to press
    wait.until(press("normalize-space(.)='New key'"), "the keys' list has no New key button")
    wait.until(lambda d: re.search(r"Your new API key, named “(key \d+)”", body(d)), "New key made no key")
    name = re.search(r"Your new API key, named “(key \d+)”", body(browser)).group(1)
    wait.until(click("command-Keys"), "no Keys chip to click")
    revoke = f"starts-with(normalize-space(.), 'Revoke') and contains(., ': {name}')"
    wait.until(lambda d: d.find_elements(By.XPATH, f"//button[{revoke}]"), f"{name} has no Revoke button")
    shot(browser, tmp_path, "keys-buttons.png")
    wait.until(press(revoke), "the Revoke button could not be pressed")
    wait.until(lambda d: f"Revoked {name}" in body(d), "pressing Revoke did not revoke the key")


def test_at_phone_width_every_chip_shows_its_name(app_server, browser, tmp_path):
    from selenium.webdriver.common.by import By

    from ui.chips import CHIPS

    browser.set_window_size(390, 844)
    wait = waiter(browser)
    browser.get(app_server.url)
    chips = [f"command-{chip.name}" for chip in CHIPS]
    wait.until(lambda d: all(d.find_elements(By.ID, chip) for chip in chips), "the chips are not all there")
    shown = {chip: browser.find_element(By.ID, chip).text.strip() for chip in chips}
    shot(browser, tmp_path, "chips-at-390.png")
    assert shown == {f"command-{chip.name}": chip.name for chip in CHIPS}, shown
    width = browser.execute_script("return document.documentElement.clientWidth")
    overflowing = [chip for chip in chips
                   if browser.find_element(By.ID, chip).rect["x"] + browser.find_element(By.ID, chip).rect["width"]
                   > width]
    assert not overflowing, f"chips past the screen's edge at 390 px: {overflowing}"


def test_the_status_table_gets_no_thumbs_a_reply_keeps_its_own(app_server, browser, tmp_path):
    from selenium.webdriver.common.by import By

    thumbs = "//button[.//*[contains(@class, 'lucide-thumbs-up')]]"
    wait = waiter(browser)
    browser.get(app_server.url)
    wait.until(typed("Say hello in three words."))
    wait.until(lambda d: "reply tokens" in body(d), "the question was not answered")
    # every reply done (a busy page can take the typed question twice): each has its thumbs
    wait.until(lambda d: not d.find_elements(By.ID, "stop-button") and d.find_elements(By.XPATH, thumbs)
               and len(d.find_elements(By.XPATH, thumbs)) == body(d).count("reply tokens"),
               "the model's reply has no thumbs to rate it")
    replies = len(browser.find_elements(By.XPATH, thumbs))
    wait.until(click("command-Status"), "no Status chip to click")
    wait.until(lambda d: "Engine status" in body(d) and not d.find_elements(By.ID, "stop-button"),
               "the Status chip showed no status")
    shot(browser, tmp_path, "status-without-thumbs.png")
    rated = [button.find_element(By.XPATH, "ancestor::*[starts-with(@id, 'step-')][1]").text[:80]
             for button in browser.find_elements(By.XPATH, thumbs)]
    assert len(rated) == replies, f"the status table can be rated as if the model wrote it: {rated}"


def test_the_settings_say_what_auto_runs_and_offer_what_this_device_runs(app_server, browser, tmp_path):
    from selenium.webdriver.common.by import By

    wait = waiter(browser)
    browser.get(app_server.url)
    wait.until(click("chat-settings-header-button"), "no settings button to click")
    wait.until(lambda d: "Memory preset" in d.find_element(By.ID, "chat-settings-sidebar-content").text,
               "the settings sidebar shows no widgets")
    panel = browser.find_element(By.ID, "chat-settings-sidebar-content").text
    assert "GPU presets need an NVIDIA GPU" in panel, panel[:600]
    wait.until(click("preset"), "the preset list does not open")
    options = (By.XPATH, "//*[@role='option']")
    wait.until(lambda d: len(d.find_elements(*options)) >= 3 and d.execute_script(
        "return getComputedStyle(document.querySelector('[role=listbox]')).opacity") == "1",
        "the preset list shows no presets")
    shot(browser, tmp_path, "settings-presets.png")
    offered = [option.text.strip() for option in browser.find_elements(*options)]
    assert "auto (now: cpu)" in offered, offered
    assert not [label for label in offered if "gb" in label and "cpu" not in label], offered


def server_ready(server) -> bool:
    """Whether the server's engine is up, by its log (the page is not asked: asking would add a message)."""
    return "engine ready:" in server.log_path.read_text()


def test_the_settings_panels_reset_brings_the_defaults_back_applied_and_said(app_server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    wait = waiter(browser)
    browser.get(app_server.url)

    def prompt_field(driver):
        return driver.find_element(By.ID, "system_prompt")

    def open_panel():
        wait.until(click("chat-settings-header-button"), "no settings button to click")
        wait.until(lambda d: prompt_field(d).is_displayed(), "the settings panel shows no system prompt")

    open_panel()
    field = prompt_field(browser)
    field.send_keys(Keys.CONTROL, "a", Keys.DELETE)
    field.send_keys("You are a pirate.")
    wait.until(click("confirm-sidebar"), "no Confirm button")
    open_panel()
    assert prompt_field(browser).get_attribute("value") == "You are a pirate.", "the change was not kept"
    reset = browser.find_element(By.XPATH, "//button[@id='confirm-sidebar']/parent::*/button[1]")
    reset.click()
    wait.until(lambda d: "back to the app's defaults" in body(d), "Reset said nothing in the chat")
    wait.until(lambda d: prompt_field(d).get_attribute("value") == "You are a helpful assistant.",
               "the panel does not show the default system prompt after Reset")
    shot(browser, tmp_path, "settings-reset.png")
    wait.until(click("confirm-sidebar"), "no Confirm button after Reset")
    open_panel()
    assert prompt_field(browser).get_attribute("value") == "You are a helpful assistant.", "Reset was not applied"


def test_the_contexts_fill_is_in_sight_by_the_box_after_a_reply(app_server, browser, tmp_path):
    import re

    from selenium.webdriver.common.by import By

    wait = waiter(browser)
    browser.get(app_server.url)

    def gauge(driver) -> str:
        shown = driver.find_elements(By.ID, "context-line")
        return shown[0].text if shown else ""

    assert not gauge(browser), "a chat with no reply shows no fill"
    wait.until(typed("Hello"), "the message could not be sent")
    wait.until(lambda d: re.fullmatch(r"context [\d,]+ / 10,240 tokens", gauge(d)), "no context line after a reply")
    shot(browser, tmp_path, "context-line.png")
    assert re.search(r"context [\d,]+ / 10,240 tokens", body(browser)), "the cost line says it too"
    assert "warn" not in browser.find_element(By.ID, "context-line").get_attribute("class")

    def paste(text: str):  # as a paste would: React owns the box's value, set through its native setter
        browser.execute_script(
            "const box = document.getElementById('chat-input');"
            "const setter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(box), 'value').set;"
            "setter.call(box, arguments[0]); box.dispatchEvent(new Event('input', { bubbles: true }));", text)

    paste("The garden needs water. " * 2500)  # more than the preset's context leaves beside the chat
    long_draft = r"context [\d,]+ \+ [\d,]+ in your message / 10,240 tokens · the next message will drop the " \
                 r"oldest turns"
    wait.until(lambda d: re.fullmatch(long_draft, gauge(d)), "a long paste does not show in the gauge before sending")
    assert "warn" in browser.find_element(By.ID, "context-line").get_attribute("class"), "the warning is not marked"
    shot(browser, tmp_path, "context-line-long-paste.png")
    paste("Thanks!")
    wait.until(lambda d: re.fullmatch(r"context [\d,]+ \+ \d in your message / 10,240 tokens", gauge(d)),
               "a short draft is not counted as short")


def test_on_loopback_there_is_no_logout_that_signs_the_same_user_back_in(app_server, browser, tmp_path):
    """On this machine the page signs in as the local user by itself: a Logout would lead straight back in, so the
    user menu (that name and Logout) is not offered."""
    import time

    from selenium.webdriver.common.by import By

    wait = waiter(browser)
    browser.get(app_server.url)
    wait.until(lambda d: d.find_elements(By.ID, "command-Status"), "the chat did not open")
    time.sleep(3)  # the page's scripts have asked who is signed in
    shot(browser, tmp_path, "loopback-no-logout.png")
    shown = [b for b in browser.find_elements(By.ID, "user-nav-button") if b.is_displayed()]
    assert not shown, "the user menu with Logout is offered to the local user"
