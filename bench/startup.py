"""Where a start goes: from `chainlit run app.py` to the first streamed token, as a timeline.

    python -m bench.startup --model models/ernie-0.3b-random --preset 4gb --runs 2 [--profile]

Each run launches a real chat server, opens a chat the moment its page answers and sends one message, as
a user who types at once. Every line the server (and the engine processes it starts) prints is stamped
with the seconds since launch; the timeline shows the milestones (page served, vLLM's configuration,
weights, CUDA graphs, the engine ready, the first token) and every silence of a second or more, which is
where the time goes. `--profile` has py-spy sample the server and its engine processes for the whole start
(collapsed stacks and a summary by function, `bench/profile_app.py`'s). Writes JSON and the logs to
`bench/results/startup-*`.
"""

import argparse
import asyncio
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Lines worth a row even without a silence after them: what vLLM and the app say at each stage of a start.
MILESTONES = ("Your app is available", "Initializing a V1 LLM engine", "Loading weights took", "Model loading took",
              "torch.compile", "Graph capturing finished", "init engine", "KV cache", "engine ready",
              "API ready")
SILENCE_S = 1.0
REPLY_TOKENS = 32  # the first reply is short: its first token is what is timed


class StampedLog:
    """Follows a growing log file from a thread and stamps each new line with the seconds since `began`."""

    def __init__(self, path: Path, began: float):
        self.path, self.began, self.lines = path, began, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        while not self.path.exists() and not self._stop.is_set():
            time.sleep(0.02)
        with open(self.path, errors="replace") as file:
            partial = ""
            while True:
                chunk = file.read()
                if chunk:
                    now = round(time.monotonic() - self.began, 2)
                    *whole, partial = (partial + chunk).split("\n")
                    self.lines.extend((now, line) for line in whole if line.strip())
                elif self._stop.is_set():
                    return
                else:
                    time.sleep(0.02)

    def close(self) -> list[tuple[float, str]]:
        self._stop.set()
        self._thread.join(5)
        return self.lines


def timeline(lines: list[tuple[float, str]], events: dict[str, float]) -> list[tuple[float, str, float]]:
    """Milestone lines, lines followed by a silence, and the client's events: (seconds, what, silence after)."""
    rows = [(t, f"[client] {name}", 0.0) for name, t in events.items()]
    for index, (t, line) in enumerate(lines):
        after = (lines[index + 1][0] if index + 1 < len(lines) else t) - t
        if after >= SILENCE_S or any(m in line for m in MILESTONES):
            rows.append((t, line.strip()[:160], round(after, 2)))
    return sorted(rows)


async def answer(client, timeout: float = 600):
    """The model's reply once whole (its cost line shown); the start's notes are the app's, not the model's."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [m for m in client.replies("ERNIE Chat") if "reply tokens" in m.content]
        if done:
            return done[-1]
        await asyncio.sleep(0.05)
    raise TimeoutError(f"no reply within {timeout:.0f} s; the chat shows {client.all_text()[-300:]!r}")


async def one_start(model: str, preset: str, folder: Path, out: Path, run: int, profile: bool,
                    tree: Path = ROOT) -> dict:
    from harness.chat_client import ChatClient
    from harness.server import ChainlitServer

    log = folder / "chainlit.log"
    began = time.monotonic()
    stamped = StampedLog(log, began)
    env = {"CHAT_MODEL": model, "CHAT_PRESET": preset, "CHAT_MAX_TOKENS": str(REPLY_TOKENS)}
    server = ChainlitServer(env, log, root=tree).launch()
    spy = None
    if profile:
        spy = subprocess.Popen(["py-spy", "record", "--pid", str(server.proc.pid), "--subprocesses", "--rate", "50",
                                "--format", "raw", "--output", str(folder / "profile.txt"), "--nonblocking"],
                               stdout=subprocess.DEVNULL, stderr=open(folder / "py-spy.log", "w"))
    events = {}
    try:
        await asyncio.to_thread(server.wait_answering, 300)
        events["page answers"] = time.monotonic() - began
        client = await ChatClient(server.url).connect(wait_ready=False)
        await client.send("Hello! Who are you?")
        events["message sent"] = time.monotonic() - began
        reply = await answer(client)
        events["first token"] = (reply.tokens[0][0] if reply.tokens else reply.first_at) - began
        result_text = reply.content
        await client.close()
    finally:
        if spy is not None:
            spy.send_signal(2)  # SIGINT: py-spy writes what it sampled
            spy.wait(30)
        server.stop()
    lines = stamped.close()
    for name in ("chainlit.log", "profile.txt"):  # beside the JSON: the run's folder keeps the server's database
        if (folder / name).exists():
            shutil.copy(folder / name, out / f"run{run}-{name}")
    result = {"events": {k: round(v, 2) for k, v in events.items()}, "reply": result_text[:300],
              "timeline": timeline(lines, events)}
    if profile and (folder / "profile.txt").exists():
        from bench.profile_app import summarize

        result["profile"] = summarize(folder / "profile.txt", top=30)
    return result


def show(run: int, result: dict) -> None:
    print(f"\n== start {run}: " + ", ".join(f"{k} {v:.1f} s" for k, v in result["events"].items()))
    for t, what, silence in result["timeline"]:
        print(f"{t:7.2f}  {what}" + (f"   (then {silence:.1f} s of silence)" if silence >= SILENCE_S else ""))
    for name, pct in result.get("profile", {}).get("inclusive_pct", []):
        print(f"{pct:5.1f}%  {name}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--preset", default="4gb")
    parser.add_argument("--runs", type=int, default=2, help="starts one after another (the first may be cold)")
    parser.add_argument("--profile", action="store_true", help="py-spy on the server and its engine processes")
    parser.add_argument("--tree", type=Path, default=ROOT, help="another checkout's app (e.g. the previous commit's)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) / f"startup-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for run in range(1, args.runs + 1):
        folder = Path(tempfile.mkdtemp(prefix=f"start{run}-"))
        result = await one_start(args.model, args.preset, folder, out, run, args.profile, args.tree.resolve())
        show(run, result)
        runs.append(result)
    summary = {"command": " ".join(["python -m bench.startup", *sys.argv[1:]]), "host": platform.node(),
               "tree": str(args.tree.resolve()),
               "model": args.model, "preset": args.preset, "runs": runs}
    (out / "startup.json").write_text(json.dumps(summary, indent=1))
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    asyncio.run(main())
