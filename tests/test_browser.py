"""The app in a real browser: Debian's headless Chromium loads the page, chats, and opens the settings sidebar."""

import os
import shutil
from pathlib import Path

import pytest

SCREENSHOTS = Path(__file__).resolve().parent.parent / "docs"
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


def test_a_user_chats_in_the_browser_and_opens_the_settings(app_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 240)
    browser.get(app_server.url)
    box = wait.until(ready.element_to_be_clickable((By.ID, "chat-input")))
    assert "ERNIE Chat" in browser.title or "ERNIE" in browser.page_source
    box.send_keys("Hello from the browser!")
    box.send_keys(Keys.ENTER)
    wait.until(lambda d: "Hello from the browser!" in d.find_element(By.TAG_NAME, "body").text)
    wait.until(lambda d: "tok/s" in d.find_element(By.TAG_NAME, "body").text)  # the reply ended with its stats
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "reply tokens" in body and "first token" in body

    browser.find_element(By.ID, "chat-settings-header-button").click()
    panel = wait.until(ready.visibility_of_element_located((By.ID, "chat-settings-sidebar-content")))
    for label in ("Memory preset", "Temperature", "Max new tokens", "System prompt"):
        assert label in panel.text
    SCREENSHOTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOTS / "chat.png"))
