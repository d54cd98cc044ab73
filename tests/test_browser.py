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
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def test_a_user_chats_in_the_browser_and_opens_the_settings(app_server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 240)
    browser.get(app_server.url)
    box = wait.until(ready.element_to_be_clickable((By.ID, "chat-input")))
    assert "ERNIE Chat" in browser.title or "ERNIE" in browser.page_source
    box.send_keys("Hello from the browser! 你好")  # ChromeDriver types only BMP characters
    box.send_keys(Keys.ENTER)
    wait.until(lambda d: "Hello from the browser! 你好" in d.find_element(By.TAG_NAME, "body").text)
    wait.until(lambda d: "tok/s" in d.find_element(By.TAG_NAME, "body").text)  # the reply ended with its stats
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "reply tokens" in body and "first token" in body
    cost = browser.find_element(By.XPATH, "//code[contains(., 'reply tokens')]")
    reply_text = cost.find_element(By.XPATH, "../..")  # code < em < the paragraph
    size = float(cost.value_of_css_property("font-size").removesuffix("px"))
    assert size < float(reply_text.value_of_css_property("font-size").removesuffix("px")) * 0.9, \
        "the cost line must be smaller than the reply (public/style.css)"
    assert cost.value_of_css_property("font-weight") == "400" and float(cost.value_of_css_property("opacity")) < 1

    browser.find_element(By.ID, "chat-settings-header-button").click()
    panel = wait.until(ready.visibility_of_element_located((By.ID, "chat-settings-sidebar-content")))
    for label in ("Memory preset", "Temperature", "Max new tokens", "System prompt"):
        assert label in panel.text
    picture = Path(os.environ.get("CHAT_SCREENSHOT") or tmp_path / "chat.png")
    assert browser.save_screenshot(str(picture)) and picture.stat().st_size > 10_000


def test_the_browser_has_fonts_for_chinese_and_emoji():
    # Without them the pictures show boxes where users see text (scripts/setup.sh --dev installs them).
    families = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True).stdout
    assert "Noto Sans CJK SC" in families and "Noto Color Emoji" in families
