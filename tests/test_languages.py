"""The page in the browser's language: Debian's Chromium asking for Chinese (zh-CN) and for English finds the app's
chips, starters, a reply's cost line, the status table and the settings in that language (ui/words/), beside
Chainlit's own texts (.chainlit/translations).

`CHAT_NEWCOMER_SHOTS` names a folder to keep the Chinese page's picture in (docs/newcomer/page-in-chinese.png);
a temporary folder otherwise.
"""

import os
import shutil
from pathlib import Path

import pytest

from harness.presets import DEVICE

from test_browser import page_state

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER) and not os.environ.get("CI"),
    reason="needs Debian's chromium and chromium-driver (scripts/setup.sh --dev installs them)")

# What a reader sees in each language, written out here (not read from the app) so that the test says what a
# person would find on the page; the Chinese calls the memory a GPU's (显存) on a GPU, a computer's (内存) on a CPU
MEMORY = "显存" if DEVICE == "cuda" else "内存"
PAGES = {
    "zh-CN": {
        "name": "chinese",
        "chips": ("状态", "导出", "导入", "文档库"),
        "starters": ("讲讲 KV 缓存", "写段 Python", "安排一天"),
        "status": ("**引擎状态**", "运行中 / 排队中的请求", f"已用{MEMORY} / 预设所需", "KV 缓存占用"),
        "cost": ("tok/s", "提示 ", "回复 ", "缓存命中 "),
        "settings": (f"{MEMORY}预设", "温度", "最大新 token 数", "系统提示词", "显示每条回复的开销"),
        "foreign": ("Requests running / queued", "reply tokens", "Memory preset", "Explain KV caching"),
    },
    "en-US": {
        "name": "english",
        "chips": ("Status", "Export", "Import", "Library"),
        "starters": ("Explain KV caching", "Write Python", "Plan a day"),
        "status": ("Engine status", "Requests running / queued", "Memory used / the preset's size"),
        "cost": ("tok/s", "prompt +", "reply tokens", "cached"),
        "settings": ("Memory preset", "Temperature", "Max new tokens", "System prompt", "Show what each reply cost"),
        "foreign": ("运行中 / 排队中的请求", f"{MEMORY}预设", "讲讲 KV 缓存"),
    },
}


def chromium(language: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1400,900", f"--lang={language}"):
        options.add_argument(flag)
    # --lang sets the interface; the Accept-Language header (what the server reads) follows this preference
    options.add_experimental_option("prefs", {"intl.accept_languages": f"{language},{language[:2]}"})
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    options.add_experimental_option("perfLoggingPrefs", {"enableNetwork": True, "enablePage": False})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@pytest.mark.parametrize("language", ["zh-CN", "en-US"])
def test_the_page_speaks_the_browsers_language(app_server, language, tmp_path):
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    page = PAGES[language]
    browser = chromium(language)
    try:
        # the page re-renders while it signs in, the engine starts and the reply streams: a look that finds an
        # element gone, or a click that a navigation aborts, is asked again
        wait = WebDriverWait(browser, 240, ignored_exceptions=[StaleElementReferenceException, WebDriverException])

        def body(driver) -> str:
            return driver.find_element(By.TAG_NAME, "body").text

        def seen(what: str, texts, driver=browser) -> None:
            try:
                wait.until(lambda d: all(t in body(d) for t in texts))
            except TimeoutException:
                missing = [t for t in texts if t not in body(driver)]
                raise AssertionError(f"{language}: {what} lack {missing}; {page_state(driver)}") from None

        browser.get(app_server.url)
        wait.until(ready.element_to_be_clickable((By.ID, "chat-input")), "the chat page did not open")
        seen("the chips", page["chips"])

        def typed(driver) -> bool:
            driver.find_element(By.ID, "chat-input").send_keys("Say hello. 你好")
            return True

        def sent(driver) -> bool:  # Chainlit ignores Enter while a task runs (the chat's own start): press it again
            box = driver.find_element(By.ID, "chat-input")  # while the question is there (typed once: asked once)
            if "Say hello." in (box.get_attribute("value") or box.text or ""):
                box.send_keys(Keys.ENTER)
                return False
            return True

        wait.until(typed)
        wait.until(sent, "the question stayed in the input box")
        WebDriverWait(browser, 480, ignored_exceptions=[StaleElementReferenceException, WebDriverException]).until(
            lambda d: "tok/s" in body(d), "the reply has no cost line")  # the engine's start on a busy machine
        seen("the reply's cost line", page["cost"])

        browser.find_element(By.ID, "chat-settings-header-button").click()  # a side panel: the chat stays usable
        wait.until(ready.visibility_of_element_located((By.ID, "chat-settings-sidebar-content")))
        seen("the settings", page["settings"])
        # the picture shows the reply's end: the chat scrolled to its bottom, where Chainlit's scroll arrow goes
        browser.execute_script(
            "let box = arguments[0]; while (box && box.scrollHeight <= box.clientHeight + 1) box = box.parentElement;"
            "if (box) box.scrollTop = box.scrollHeight;",
            browser.find_element(By.XPATH, "(//code[contains(., 'tok/s')])[last()]"))
        try:
            WebDriverWait(browser, 5).until(ready.invisibility_of_element_located(
                (By.CSS_SELECTOR, "div.absolute.bottom-4 > button.rounded-full")))
        except TimeoutException:  # only the picture is the worse for it
            pass
        folder = Path(os.environ.get("CHAT_NEWCOMER_SHOTS") or tmp_path) if language == "zh-CN" else tmp_path
        picture = folder / f"page-in-{page['name']}.png"  # the reply, its cost line and tools, the chips, the settings
        assert browser.save_screenshot(str(picture)) and picture.stat().st_size > 10_000

        def click_chip(driver) -> bool:
            driver.find_element(By.ID, f"command-{page['chips'][0]}").click()
            return True

        wait.until(click_chip, "no status chip to click")
        seen("the status table", [t.strip("*") for t in page["status"]])
        shown = body(browser)

        # a new chat, the engine running: its welcome has the starters
        browser.get(app_server.url)
        wait.until(ready.element_to_be_clickable((By.ID, "chat-input")), "the new chat did not open")
        seen("the starters", page["starters"])
        shown += body(browser)
        assert not [t for t in page["foreign"] if t in shown], f"{language}: the other language's words show"
    finally:
        browser.quit()
