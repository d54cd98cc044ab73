"""A chat in Chinese reads Chinese everywhere: every text the app can write in a zh-CN chat (its word tables filled
with sample values, the engine's errors as the chat words them, an import's refusals, the library's sources, the
status table and the settings sidebar on a processor, the page scripts and Chainlit's own words) holds no English
sentence. Names stay as they are (ERNIE, vLLM, JSON, a file's name, a setting, code in backticks)."""

import json
import re
import string
from pathlib import Path

import pytest

from chainlit_door import sessions as door
from engine.errors import NoGpuError
from engine.reports import Progress, Status
from engine.settings import load_settings
from history import exchange
from history import words as history_words
from history.library import Passage
from ui import words

ROOT = Path(__file__).resolve().parent.parent
# words that stay as they are in a Chinese text: names, units, terms the Chinese words use too
NAMES = {"ERNIE", "vLLM", "API", "GPU", "GPUs", "CPU", "token", "tokens", "tok", "JSON", "Lines", "Markdown", "PDF",
         "PDFs", "URL", "NVIDIA", "NVML", "CUDA", "OpenAI", "Hugging", "Face", "ModelScope", "KV", "Top", "p", "MB",
         "GB", "GiB", "KB", "ms", "s", "UTC", "id", "UTF", "Python", "CSV", "Ctrl", "Enter", "Shift", "Esc", "FTS",
         "SQLite", "PostgreSQL", "fp", "bf", "int", "auto", "cpu", "remote", "gb", "bit", "Chainlit", "OK", "zip"}
ASCII = r"[!-_a-~]"  # a printable ASCII character but a space or a backtick
CODE = re.compile(rf"`[^`]*`|{ASCII}*[/\\=_.@<>]{ASCII}*|\{{[^}}]*\}}")  # code, addresses, paths, files, settings
WORD = re.compile(r"(?<![0-9A-Za-z])[A-Za-z]+(?:'[a-z]+)?")


def english(text: str) -> list[str]:
    """The English in `text`: its runs of three or more English words (words of NAMES break a run), and any
    lower-case English word that is not a name ("passage 1", "not started")."""
    found = [word for word in WORD.findall(CODE.sub("\x00", text)) if word.islower() and word not in NAMES]
    for piece in re.split(r"[^A-Za-z' ]+", CODE.sub("\x00", text)):
        run = []
        for word in piece.split(" ") + [""]:
            if WORD.fullmatch(word) and word not in NAMES:
                run.append(word)
                continue
            if len(run) >= 3 and not any(word in found for word in run):
                found.append(" ".join(run))
            run = []
    return found


def test_the_walk_finds_an_english_sentence_and_lets_names_be():
    assert english("未导入任何内容：the file is not valid JSON nor JSON Lines")[:3] == ["the", "file", "is"]
    assert english("[1] garden-notes.txt, passage 1") == ["passage"]
    assert english("Engine State Now") == ["Engine State Now"]
    assert not english("用 `new laptop script` 新建；CHAT_MODEL=baidu/ERNIE-4.5-0.3B-PT；Hugging Face 镜像站")


def samples(text: str) -> dict:
    """A sample for each placeholder of `text`: a number where the placeholder formats one."""
    return {name: 3 if spec else "值" for _, name, spec, _ in string.Formatter().parse(text) if name is not None}


def tables() -> list[tuple[str, str]]:
    said = [(f"ui/words/zh {key}", words.say(key, "zh", **samples(text))) for key, text in words.TABLES["zh"].items()]
    return said + [(f"history/words/zh {key}", history_words.say(key, "zh", **samples(text)))
                   for key, text in history_words.TABLES["zh"].items()]


def engine_errors() -> list[tuple[str, str]]:
    """Each engine error as the chat words it, less the values it was made with (a detail is the engine's own)."""
    from test_words import SAMPLES, engine_errors as made

    said = []
    for error in made():
        text = words.error_text(error, "zh-CN")
        for value in [*SAMPLES.values(), "it needs 2.0 GiB", "timed out"]:  # the last: made() variants' details
            text = text.replace(str(value), "值") if isinstance(value, (str, Exception)) else text
        said.append((f"error {type(error).__name__}", text))
    return said


BAD_IMPORTS = [b"\xff\xfe\x00", b"{not json", b"[" * 5000, b"{}", b"[]", b"[1]", b'[{"role": "tool", "content": "x"}]',
               b'[{"role": "user", "content": [{"type": "image"}]}]',
               b'[{"role": "user", "content": [{"type": "text"}]}]',
               b'[{"role": "user", "content": 3}]', b'[{"role": "user", "content": "' + b"x" * 100 + b'"}]',
               b'[{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]',
               b'[{"role": "assistant", "content": "a"}]',
               b'[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, '
               b'{"role": "assistant", "content": "c"}]', b'[{"role": "system", "content": "a"}]',
               json.dumps([{"role": "user", "content": "a"}] * (exchange.MAX_MESSAGES + 1)).encode()]


def import_refusals() -> list[tuple[str, str]]:
    from ui import chat_files, sidebar

    said = []
    for data in BAD_IMPORTS:
        with pytest.raises(exchange.ImportRefused) as refused:
            exchange.parse(data, 16)
        said.append((f"import {data[:30]!r}", chat_files.refusal("chat.json", refused.value)))
    imported = exchange.parse(b'{"title": 3, "sampling": [], "messages": [{"role": "user", "content": "a"}]}', 16)
    settings = load_settings()
    refused = sidebar.each_valid({"temperature": 5, "max_tokens": -1, "show_stats": 2},
                                 sidebar.defaults(settings, "cpu"), settings)[1]
    said.append(("import's left out", " ".join(chat_files.left_out_words(imported.dropped, refused))))
    return said


def library_sources(monkeypatch) -> list[tuple[str, str]]:
    from ui import library

    monkeypatch.setattr(library.cl, "Text", lambda **element: element)
    found = library.Found([Passage("1", "d", "garden-notes.txt", 0, "Tomatoes like sun.", 1.0),
                           Passage("2", "d", "garden-notes.txt", 3, "Water at dawn.", 0.5)], 120)
    return [("library sources", found.sources_line()),
            *(("library source", element["name"]) for element in library.source_elements(found))]


def status_tables() -> list[tuple[str, str]]:
    from ui import text

    cpu = dict(preset="cpu", purpose="No GPU: runs on the processor, 4k context", device="CPU (2 cores)",
               max_model_len=4096, needs_gib=None, memory_used_gib=1.5, kv_cache_usage=0.25, requests_running=1,
               requests_waiting=0)
    said = [(f"status {state}", text.status_text(Status(state=state, **cpu))) for state in
            ("starting", "ready", "asleep")]
    stopped = cpu | {"device": "not started", "max_model_len": None, "memory_used_gib": None, "kv_cache_usage": None}
    said.append(("status stopped", text.status_text(Status(state="stopped", **stopped))))
    failed = str(NoGpuError("4gb"))
    said.append(("status failed", text.status_text(Status(state="failed", problem=failed, **stopped))))
    server = "http://gpu-box:8000"
    remote = cpu | {"preset": "remote", "purpose": f"the vLLM server at {server}", "device": server}
    said.append(("status remote", text.status_text(Status(state="unreachable", **remote))))
    ready = Progress("Ready", 3.0, done=True, notice=f"Serving baidu/ERNIE-4.5-0.3B-PT from {server}.")
    said.append(("a remote engine's start", text.progress_line(words.say("start.starting"), ready)))
    return said


def sidebar_words() -> list[tuple[str, str]]:
    from ui import sidebar

    settings = load_settings(preset="cpu", device="cpu")
    said = []
    for widget in sidebar.widgets(settings, sidebar.defaults(settings, "cpu")):
        shown = widget.to_dict()
        said += [(f"sidebar {shown['id']}", shown.get(part) or "") for part in ("label", "description")]
        said += [(f"sidebar {shown['id']} item", item["label"]) for item in shown.get("items") or []]
        if isinstance(shown.get("initial"), str):
            said.append((f"sidebar {shown['id']} value", shown["initial"]))
    return said


def page_scripts() -> list[tuple[str, str]]:
    """What the page scripts could show: their strings outside comments, and the page words they take from
    Chainlit's zh-CN translations (Chainlit's own words too)."""
    said = []
    for script in sorted((ROOT / "public").glob("*.js")):
        code = re.sub(r"^\s*//.*$|/\*.*?\*/", "", script.read_text(), flags=re.MULTILINE | re.DOTALL)
        for quoted in re.findall(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'|`([^`]*)`', code):
            said.append((f"public/{script.name}", next(filter(None, quoted), "")))

    def texts(tree, path=""):
        for key, value in tree.items():
            yield from texts(value, f"{path}{key}.") if isinstance(value, dict) else [(path + key, value)]

    chinese = json.loads((ROOT / ".chainlit" / "translations" / "zh-CN.json").read_text())
    return said + [(f"zh-CN.json {key}", value) for key, value in texts(chinese)]


def test_a_chinese_chat_on_a_processor_writes_no_english_sentence(monkeypatch):
    monkeypatch.setattr(door, "language", lambda: "zh-CN")
    words.on_processor(True)
    try:
        said = [*tables(), *engine_errors(), *import_refusals(), *library_sources(monkeypatch), *status_tables(),
                *sidebar_words(), *page_scripts()]
    finally:
        words.on_processor(False)
    assert len(said) > 300, "the walk went through every text"
    english_left = {f"{where}: {runs} in {text[:120]!r}": runs for where, text in said if (runs := english(text))}
    assert not english_left, f"{len(english_left)} texts hold English:\n" + "\n".join(english_left)
    memory = [where for where, text in said if "显存" in text]
    assert not memory, f"on a processor the memory is 内存, never a GPU's 显存: {memory}"


@pytest.mark.browser
def test_a_chinese_page_says_a_refused_upload_briefly_and_starts_with_the_chinese_prompt(app_server, tmp_path):
    """Chainlit's upload says "File type must be one of text/*, application/json, ..." (some 80 types), "File is
    larger than 1 MB" and "Too many files" in English; the page says each in a short Chinese sentence. The settings
    panel shows a new chat's Chinese system prompt."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    from test_browser import page_state
    from test_languages import CHROMEDRIVER, CHROMIUM, chromium

    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("needs Debian's chromium and chromium-driver")
    picture, large = tmp_path / "photo.png", tmp_path / "notes.txt"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    large.write_text("word " * 300_000)  # 1.5 MB: over the upload's 1 MB
    browser = chromium("zh-CN")
    wait = WebDriverWait(browser, 120, ignored_exceptions=[StaleElementReferenceException, WebDriverException])

    def toasts(driver) -> str:
        return " ".join(t.text for t in driver.find_elements(By.CSS_SELECTOR, "[data-sonner-toast]"))

    def said(what: str, text: str) -> str:
        try:
            wait.until(lambda d: text in toasts(d))
        except TimeoutException:
            raise AssertionError(f"{what}: {toasts(browser)!r}; {page_state(browser)}") from None
        return toasts(browser)

    try:
        browser.get(app_server.url)
        wait.until(ready.element_to_be_clickable((By.ID, "chat-input")), "the chat page did not open")
        browser.find_element(By.ID, "upload-button-input").send_keys(str(picture))
        shown = said("a picture refused", "无法附上这种文件")
        assert "File type" not in shown and "application/" not in shown and len(shown) < 80, shown
        browser.get(app_server.url)  # the input keeps the files it was given: a fresh page gives it one file
        wait.until(ready.element_to_be_clickable((By.ID, "chat-input")), "the chat page did not open again")
        browser.find_element(By.ID, "upload-button-input").send_keys(str(large))
        assert "File is larger" not in said("a file over 1 MB refused", "1 MB 的上限")
        browser.get(app_server.url)
        wait.until(ready.element_to_be_clickable((By.ID, "chat-input")), "the chat page did not open again")
        notes = [tmp_path / f"note-{n}.txt" for n in range(6)]
        for note in notes:
            note.write_text("a note")
        browser.find_element(By.ID, "upload-button-input").send_keys("\n".join(map(str, notes)))
        assert "Too many" not in said("six files at once refused", "最多附上 5 个文件")
        # the panel's button comes with the chat's sidebar, sent once the chat is made (later on a busy machine)
        settings = wait.until(ready.presence_of_element_located((By.ID, "chat-settings-header-button")),
                              "the chat's settings never came")
        browser.execute_script("arguments[0].click()", settings)  # the toast may lie over it
        wait.until(ready.visibility_of_element_located((By.ID, "chat-settings-sidebar-content")))
        prompt = "你是一个乐于助人的助手。"
        wait.until(lambda d: prompt in d.find_element(By.ID, "system_prompt").get_attribute("value"),
                   "a new Chinese chat's system prompt is not the Chinese default")
    finally:
        browser.quit()
