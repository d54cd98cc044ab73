"""Does the page keep up: one chat's reply in headless Chromium, alone and while other chats stream.

    python -m bench.smoothness                                   # tiny model on the CPU, 1 and 32 chats
    python -m bench.smoothness --model models/ernie-0.3b-random --preset 4gb --chats 1 32

The browser's chat is a real page of the real server; the other chats are socket.io clients asking one
long reply after another. In the page, a MutationObserver notes each time the page's text changes while
the reply streams (each is a render of the streamed message: nothing else on the page changes then), and
an animation-frame loop notes the longest time between two frames (a page that freezes shows it there).
Prints a table, writes JSON and a plot to bench/results/smoothness-<time>.*. Needs Debian's chromium and
chromium-driver (`bash scripts/setup.sh --dev`).
"""

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# 32 sequences on the CPU, so that 32 chats stream together rather than half of them queue
CPU_32 = {"name": "custom", "purpose": "bench", "device": "cpu", "kv_cache_gib": 1.0, "max_model_len": 4096,
          "max_num_seqs": 32, "max_num_batched_tokens": 2048, "cuda_graphs": False}
WATCH = """
window.bench = {changes: [], longestFrameMs: 0, length: document.body.textContent.length};
new MutationObserver(() => {
  const length = document.body.textContent.length;
  if (length !== window.bench.length) { window.bench.changes.push(performance.now()); window.bench.length = length; }
}).observe(document.body, {childList: true, subtree: true, characterData: true});
let last = performance.now();
(function frame(now) {
  window.bench.longestFrameMs = Math.max(window.bench.longestFrameMs, now - last); last = now;
  requestAnimationFrame(frame);
})(last);
"""
RESTART = "window.bench.changes = []; window.bench.longestFrameMs = 0; window.bench.sentAt = performance.now();"


def open_browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--window-size=1400,900"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def browser_reply(browser, url: str, question: str) -> dict:
    """Open a new chat, ask, wait for the reply's cost line; what the page saw while it streamed."""
    from selenium.common.exceptions import (ElementNotInteractableException, StaleElementReferenceException,
                                            TimeoutException)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 300, ignored_exceptions=[StaleElementReferenceException])
    browser.get(url)

    def type_question(driver) -> bool:  # the input re-renders after sign-in: find it again until typing works
        try:
            box = driver.find_element(By.ID, "chat-input")
            driver.execute_script(WATCH)
            box.send_keys(question)
            return True
        except (StaleElementReferenceException, ElementNotInteractableException):
            return False

    def send(driver) -> bool:  # an Enter pressed while the page re-renders (other chats' threads) can be lost
        try:
            box = driver.find_element(By.ID, "chat-input")
            if question not in box.text:
                return True  # sent: the input is empty again
            driver.execute_script(RESTART)  # typing changed the page too: count from the Enter key on
            box.send_keys(Keys.ENTER)
            time.sleep(0.5)
            return question not in driver.find_element(By.ID, "chat-input").text
        except (StaleElementReferenceException, ElementNotInteractableException):
            return False

    wait.until(type_question)
    wait.until(send)
    try:
        wait.until(lambda d: "tok/s" in d.find_element(By.TAG_NAME, "body").text)
    except TimeoutException:
        browser.save_screenshot(str(Path(tempfile.gettempdir()) / "smoothness-timeout.png"))
        raise RuntimeError(f"no reply in the page: {browser.find_element(By.TAG_NAME, 'body').text[-600:]!r}")
    seen = browser.execute_script("return window.bench")
    changes = [t - seen["sentAt"] for t in seen["changes"]]
    streaming = changes[1:-1]  # the question appearing and the cost line are not renders of the reply
    span_s = (streaming[-1] - streaming[0]) / 1000 if len(streaming) > 1 else 0.0
    gaps = [b - a for a, b in zip(streaming, streaming[1:])]
    return {"renders": len(streaming), "streaming_s": span_s,
            "renders_per_s": (len(streaming) - 1) / span_s if span_s else 0.0,
            "longest_gap_ms": max(gaps, default=0.0), "longest_frame_ms": seen["longestFrameMs"],
            "change_times_ms": changes}


async def measure(url: str, chats: int, browser, max_tokens: int) -> dict:
    from harness.chat_client import ChatClient

    others = [await ChatClient(url).connect() for _ in range(chats - 1)]
    await asyncio.gather(*(c.change_settings({"max_tokens": max_tokens}) for c in others))
    done = asyncio.Event()

    async def keep_asking(client, index: int) -> None:
        turn = 0
        while not done.is_set():
            await client.ask(f"chat {index}, turn {turn}: tell me a long story")
            turn += 1

    talking = [asyncio.create_task(keep_asking(c, i)) for i, c in enumerate(others)]
    await asyncio.sleep(2 if others else 0)  # the other chats are streaming when the browser asks
    try:
        seen = await asyncio.to_thread(browser_reply, browser, url, "Tell me a long story about a lighthouse.")
    finally:
        done.set()
        for task in talking:
            task.cancel()
        await asyncio.gather(*talking, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in others), return_exceptions=True)
    return {"chats": chats, **seen}


def plot(rows: list[dict], stem: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for row in rows:
        times = [t / 1000 for t in row["change_times_ms"]]
        ax.step(times, range(1, len(times) + 1), where="post",
                label=f"{row['chats']} chat(s): {row['renders_per_s']:.1f} renders/s")
    ax.set(xlabel="seconds since the question was sent", ylabel="renders of the page's text",
           title="The browser's chat: its reply as the page shows it")
    ax.legend()
    ax.grid(alpha=0.3)
    path = Path(f"{stem}-renders.png")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "tiny-ernie"))
    parser.add_argument("--preset", default="cpu-32", help="a preset name, or cpu-32 (32 sequences on the CPU)")
    parser.add_argument("--chats", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--max-tokens", type=int, default=1024, help="the other chats' reply length")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()

    from harness.server import ChainlitServer

    preset = {"CHAT_PRESET": "custom", "CHAT_CUSTOM_PRESET": json.dumps(CPU_32)} if args.preset == "cpu-32" \
        else {"CHAT_PRESET": args.preset}
    env = {"CHAT_MODEL": args.model, **preset}
    server = ChainlitServer(env, Path(tempfile.mkdtemp()) / "chainlit.log").start()
    browser = await asyncio.to_thread(open_browser)
    rows = []
    try:
        from harness.chat_client import ChatClient

        first = await ChatClient(server.url).connect()
        await first.ask("Start the engine.", timeout=600)
        await first.close()
        for chats in args.chats:
            rows.append(await measure(server.url, chats, browser, args.max_tokens))
    finally:
        await asyncio.to_thread(browser.quit)
        server.stop()

    from bench.run import device_name

    print(f"\n{device_name()} · {args.model} · preset {args.preset}\n")
    print("| chats | renders | streaming s | renders/s | longest gap between renders ms | longest frame ms |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['chats']} | {row['renders']} | {row['streaming_s']:.1f} | {row['renders_per_s']:.1f} "
              f"| {row['longest_gap_ms']:.0f} | {row['longest_frame_ms']:.0f} |")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"smoothness-{time.strftime('%Y%m%d-%H%M%S')}"
    report = {"command": " ".join(["python -m bench.smoothness", *sys.argv[1:]]), "device": device_name(),
              "model": args.model, "preset": args.preset, "rows": rows}
    Path(f"{stem}.json").write_text(json.dumps(report, indent=1))
    print(f"\njson: {stem}.json\nplot: {plot(rows, stem)}")


if __name__ == "__main__":
    asyncio.run(main())
