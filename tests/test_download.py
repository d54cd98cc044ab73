"""Getting the model before the engine starts (engine/download.py), against a hub mirror and a ModelScope mirror
on 127.0.0.1.

The hub mirror (harness/hub_mirror.py) serves the tiny model slowly under a hub id, and `HF_ENDPOINT` points at it,
as a user's would point at https://hf-mirror.com; the download is the real `huggingface_hub` client's. A cut
mirror stays silent until it is restored, so the first try fails as a lost network does. The ModelScope mirror
(harness/modelscope_mirror.py) serves the repo's first layout, what ModelScope's copy held in July 2025, under
its ModelScope id, and `MODELSCOPE_ENDPOINT` points the real `modelscope` client at it; a cut there is back
before the client's retries run out, which resume the file.
"""

import asyncio
import fnmatch
import json
import re
import threading
import time

import httpx
import pytest

from harness.chat_client import ChatClient
from harness.hub_mirror import HubMirror
from harness.modelscope_mirror import ENDPOINT_VARIABLE, ModelScopeMirror
from harness.presets import APP_PRESET, TEST_PRESET
from harness.replies import ask
from harness.server import ChainlitServer

REPO = "mirror-org/tiny-ernie"
PERCENT = re.compile(r"Downloading mirror-org/tiny-ernie: [\d,.]+ of [\d,.]+ kB \((\d+)%\)")
MODELSCOPE_ID = "PaddlePaddle/ERNIE-4.5-0.3B-PT"
ERNIE_PERCENT = re.compile(r"Downloading baidu/ERNIE-4.5-0.3B-PT: [\d,.]+ of [\d,.]+ MB \((\d+)%\)")
# cut a little past half of the tiny model's 0.8 MB: three of the client's 128 KiB pieces are on disk by then
CUT_AFTER = 450_000


def percents(texts: list[str]) -> list[int]:
    return [int(found.group(1)) for text in texts if (found := PERCENT.search(text))]


@pytest.fixture
def online(monkeypatch):
    """The tests run with HF_HUB_OFFLINE=1 (conftest): this one may reach its mirror."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


async def test_a_cut_download_continues_where_it_stopped_and_the_engine_then_answers(tiny_model, tmp_path,
                                                                                     monkeypatch, online):
    from engine.engine import ChatEngine
    from engine.errors import DownloadError
    from engine.settings import Sampling, load_settings

    with HubMirror(REPO, tiny_model, bytes_per_s=150_000) as mirror:
        monkeypatch.setenv("HF_ENDPOINT", mirror.url)
        total = sum(len(data) for data in mirror.files.values())
        engine = ChatEngine(load_settings(model=REPO, preset="custom", custom_preset=TEST_PRESET,
                                          download_dir=tmp_path / "cache"))
        stages = []
        mirror.cut_after(CUT_AFTER)
        with pytest.raises(DownloadError) as failed:
            await engine.ensure_started(lambda progress: stages.append(progress.stage))
        for words in ("stopped at", f"the hub mirror {mirror.url}", "Try again", "continues where it stopped",
                      "HF_ENDPOINT=https://hf-mirror.com", "CHAT_MODEL_SOURCE=modelscope", "CHAT_MODEL=/path"):
            assert words in str(failed.value)
        first_try = percents(stages)
        assert first_try and 0 < max(first_try) < 100, stages
        assert re.search(r"\d kB/s, \d+ (s|min) left", " ".join(stages)), "speed and time left are shown"
        sent_before = mirror.sent
        mirror.restore()
        stages.clear()
        try:
            await engine.ensure_started(lambda progress: stages.append(progress.stage), retry=True)
            fetched_again = mirror.sent - sent_before
            assert fetched_again <= total - 3 * 128 * 1024, "the second try asks only for what is missing"
            second_try = percents(stages)
            assert second_try[0] >= 40 and second_try == sorted(second_try) and second_try[-1] == 100, stages
            assert stages.index(next(s for s in stages if "(100%)" in s)) < stages.index("Ready")
            reply = [item async for item in engine.stream([{"role": "user", "content": "hello"}],
                                                          Sampling(max_tokens=8)) if isinstance(item, str)]
            assert "".join(reply), "the engine built from the downloaded folder answers"
            assert engine.client.model_config.served_model_name == REPO, "users and the API see the model's id"
        finally:
            engine.shutdown()


async def click(chat: ChatClient, action: dict, timeout: float = 300) -> None:
    """Press an action button as the browser does: Chainlit runs its callback for this chat's session."""
    token = await chat.sign_in()
    async with httpx.AsyncClient(base_url=chat.url, timeout=timeout,
                                 cookies={"access_token": token} if token else None) as http:
        response = await http.post("/project/action", json={"sessionId": chat.session_id, "action": action})
        assert response.status_code == 200, response.text


async def test_the_chat_shows_the_download_and_try_again_resumes_it(tiny_model, tmp_path):
    with HubMirror(REPO, tiny_model, bytes_per_s=150_000) as mirror:
        mirror.cut_after(CUT_AFTER)
        env = {"CHAT_MODEL": REPO, "HF_ENDPOINT": mirror.url, "HF_HUB_OFFLINE": "0",
               "CHAT_DOWNLOAD_DIR": str(tmp_path / "cache"), "CHAT_PRESET": "custom",
               "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET)}
        server = ChainlitServer(env, tmp_path / "chainlit.log").start()
        try:
            chat = await ChatClient(server.url).connect()
            asked = await chat.send("hello?")  # waits for the start that opening the chat began
            other = await ChatClient(server.url).connect()  # another tab, only open: its welcome page stays
            await chat.wait_idle(180)
            first_try = percents(chat.ever_shown)
            assert first_try and 0 < max(first_try) < 100, "the waiting chat's note shows the bytes and percent"
            assert not percents(other.ever_shown), "a tab that sent nothing keeps its welcome page while it downloads"
            assert any("❌" in m.content for m in other.messages.values()), "but is told that the start failed"
            failed = next(m for m in chat.messages.values() if "❌" in m.content)
            assert "Try again" in failed.content and "continues where it stopped" in failed.content
            retry = next(a for a in chat.actions if a["forId"] == failed.id)
            mirror.restore()
            shown_before = len(chat.ever_shown)
            await click(chat, retry)
            second_try = percents(chat.ever_shown[shown_before:])
            assert second_try and second_try[0] >= 40 and second_try[-1] == 100, chat.ever_shown[shown_before:]
            for _ in range(600):  # "Try again" answers the message that waited for the engine
                if any(m.content for m in chat.replies("ERNIE Chat")):
                    break
                await asyncio.sleep(0.5)
            assert any(m.content for m in chat.replies("ERNIE Chat")), f"no reply to {asked}"
            assert "from the hub mirror" in (tmp_path / "chainlit.log").read_text(), "the log shows the download"
            await chat.close()
            await other.close()
        finally:
            assert server.stop() == 0


def back_soon(mirror: ModelScopeMirror, after_s: float = 0.5) -> threading.Thread:
    """A network that comes back: the mirror is restored `after_s` after its cut, while the client retries."""
    def watch() -> None:
        while not mirror.down:
            time.sleep(0.05)
        time.sleep(after_s)
        mirror.restore()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


@pytest.mark.slow
async def test_modelscope_gets_the_first_layout_under_its_modelscope_id_resuming_a_cut(first_layout_model, tmp_path,
                                                                                      monkeypatch):
    from engine import download
    from engine.settings import load_settings

    with ModelScopeMirror(MODELSCOPE_ID, first_layout_model, bytes_per_s=8_000_000) as mirror:
        monkeypatch.setenv(ENDPOINT_VARIABLE, mirror.url)
        settings = load_settings(model_source="modelscope", download_dir=tmp_path / "cache")
        wanted = {name: data for name, data in mirror.files.items()
                  if any(fnmatch.fnmatch(name, pattern) for pattern in download.WANTED)}
        assert "tokenizer.model" in wanted and "tokenization_ernie4_5.py" in mirror.files
        mirror.cut_after(len(mirror.files["model.safetensors"]) // 2)
        watcher = back_soon(mirror)
        reports = []

        async def report(text: str) -> None:
            reports.append(text)

        folder = await download.fetch(settings, report)
        watcher.join(timeout=5)
        assert folder == tmp_path / "cache" / "models" / "PaddlePaddle--ERNIE-4.5-0.3B-PT" / "snapshots" / "master"
        assert {path.name: path.read_bytes() for path in folder.iterdir()} == wanted, "not the remote code (*.py)"
        assert mirror.misses == [], "the mirror answered all the client asked"
        assert "model.safetensors" in [name for name, start in mirror.resumes if start > 0], mirror.requests
        assert mirror.sent - sum(map(len, wanted.values())) < 256 * 1024, "the rest of the cut file, not all again"
        megabytes = f"{sum(map(len, wanted.values())) / 1e6:,.0f}"
        assert reports[-1] == f"Downloading baidu/ERNIE-4.5-0.3B-PT: {megabytes} of {megabytes} MB (100%)", reports
        assert any(0 < int(found.group(1)) < 100 for text in reports if (found := ERNIE_PERCENT.search(text))), \
            "the note shows how far the download is"
        assert download.source_name(settings) == "ModelScope (PaddlePaddle/ERNIE-4.5-0.3B-PT)"

        sent_before = mirror.sent
        assert await download.fetch(settings, report) == folder
        assert mirror.sent == sent_before, "a second start finds every file in the cache and fetches none"


async def test_the_app_downloads_the_first_layout_from_modelscope_and_a_chat_answers(first_layout_model, tmp_path):
    with ModelScopeMirror(MODELSCOPE_ID, first_layout_model, bytes_per_s=8_000_000) as mirror:
        env = {"CHAT_MODEL_SOURCE": "modelscope", **mirror.environment(), "CHAT_DOWNLOAD_DIR": str(tmp_path / "cache"),
               "CHAT_PRESET": "custom", "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET)}
        log = tmp_path / "chainlit.log"
        server = ChainlitServer(env, log).start()
        try:
            chat = await ChatClient(server.url).connect()
            assert await ask(chat, "hello"), "the model from the mirror answers"
            shown = [int(found.group(1)) for text in chat.ever_shown if (found := ERNIE_PERCENT.search(text))]
            assert shown and shown[-1] == 100, chat.ever_shown
            assert mirror.misses == [] and "from ModelScope (PaddlePaddle/ERNIE-4.5-0.3B-PT)" in log.read_text()
            await chat.close()
        finally:
            assert server.stop() == 0


def test_an_unknown_model_source_is_refused_with_the_choices():
    from engine.errors import SettingsError
    from engine.settings import load_settings

    with pytest.raises(SettingsError) as refused:
        load_settings(model_source="hf-mirror")
    assert "CHAT_MODEL_SOURCE" in str(refused.value) and "'huggingface' or 'modelscope'" in str(refused.value)
