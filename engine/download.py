"""Getting the model's files before the engine starts: from the Hugging Face hub, a mirror of it, or ModelScope.

vLLM is handed the local folder this returns, so it never downloads inside its engine build, where no progress
can be shown. The hub's own client does the work: `snapshot_download(dry_run=True)` says which files are
missing and their sizes, `http_get` fetches each one, and `snapshot_download` then files them into the
hub's cache. A file's bytes go into `<blob>.partial` first and stay there when the network fails: the next
try asks only for the rest (HTTP `Range`; the client's own temporary files are deleted on failure). A mirror
is `HF_ENDPOINT` (e.g. https://hf-mirror.com), read at each start. `CHAT_MODEL_SOURCE=modelscope` downloads
with the `modelscope` package instead, which resumes by itself. While files arrive, the start's note says how
far it is every second; the log says it every few seconds.
"""

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlparse

from tqdm.auto import tqdm

from engine.errors import DownloadError, ModelNotFoundError
from engine.settings import Settings

log = logging.getLogger("engine")
# What vLLM reads from a model folder: config, tokenizer (a fast one or sentencepiece), chat template, weights.
# Other formats of the same weights (*.bin, *.pth, *.gguf) are left on the hub.
WANTED = ["*.json", "*.safetensors", "*.model", "*.jinja", "*.txt"]
MODELSCOPE_IDS = {"baidu/ERNIE-4.5-0.3B-PT": "PaddlePaddle/ERNIE-4.5-0.3B-PT"}
DEFAULT_HUB = "https://huggingface.co"
LOG_EVERY_S = 10.0
CHUNK_BYTES = 128 * 1024
SPEED_WINDOW_S = 5.0


def hub_endpoint() -> str:
    """The hub or mirror to download from: `HF_ENDPOINT` as it is now, not as it was when the client was imported."""
    return os.environ.get("HF_ENDPOINT", DEFAULT_HUB).rstrip("/")


def source_name(settings: Settings) -> str:
    if settings.model_source == "modelscope":
        return f"ModelScope ({modelscope_id(settings.model)})"
    endpoint = hub_endpoint()
    return "the Hugging Face hub" if endpoint == DEFAULT_HUB else f"the hub mirror {endpoint}"


def modelscope_id(model: str) -> str:
    """The model's name on ModelScope: ERNIE's there is PaddlePaddle's; any other id is taken as it is."""
    return MODELSCOPE_IDS.get(model, model)


def cached_snapshot(model: str, cache_dir: Path | None) -> Path | None:
    """The hub model's complete snapshot in the cache, without asking the network; None when it is not all there."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(model, cache_dir=cache_dir, allow_patterns=WANTED, local_files_only=True))
    except LocalEntryNotFoundError:  # also IncompleteSnapshotError: some files never arrived
        return None


class Transfer:
    """How far one download is: bytes there of the total, and how fast this try brings them."""

    def __init__(self, model: str):
        self.model = model
        self.total = 0
        self.done = 0  # on disk, also from earlier tries
        self.fetched = 0  # received in this try
        self.began = time.monotonic()
        self._samples = deque([(self.began, 0)])  # (when, fetched): the speed is that of the last few seconds

    def add(self, count: int) -> None:
        self.done += count
        self.fetched += count

    def describe(self) -> str:
        if not self.total:
            return f"Downloading {self.model}: looking up its files"
        scale = 1e6 if self.total >= 10e6 else 1e3
        unit = "MB" if scale == 1e6 else "kB"
        percent = min(100, int(100 * self.done / self.total))
        text = f"Downloading {self.model}: {self.done / scale:,.0f} of {self.total / scale:,.0f} {unit} ({percent}%)"
        now = time.monotonic()
        self._samples.append((now, self.fetched))
        while len(self._samples) > 2 and now - self._samples[1][0] >= SPEED_WINDOW_S:
            self._samples.popleft()
        since, fetched = self._samples[0]
        # a speed from less than a second, or from less than one piece the client hands on, says nothing yet
        measured = now - since >= 1.0 and self.fetched - fetched >= CHUNK_BYTES
        speed = (self.fetched - fetched) / (now - since) if measured else 0.0
        if speed > 0 and self.done < self.total:
            rate = f"{speed / 1e6:.1f} MB/s" if speed >= 1e6 else f"{speed / 1e3:.0f} kB/s"
            text += f", {rate}, {_duration((self.total - self.done) / speed)} left"
        return text

    def bar(self, kept: int = 0):
        """A stand-in for the client's tqdm class: each received chunk of a file lands here. `kept`: the bytes of
        it an earlier try left, counted as done already; the client starts over from 0 when the server ignores
        the range it asked for."""
        transfer = self

        class Bar:
            def __init__(self, *args, initial=0, **kwargs):
                transfer.done += initial - kept

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                pass

            def update(self, count=1):
                transfer.add(int(count or 0))

            def close(self):
                pass

        return Bar


def local_folder(settings: Settings) -> Path:
    """The folder of a model that needs no download: CHAT_MODEL itself, or its snapshot in the hub's cache."""
    folder = Path(settings.model).expanduser()
    return folder if folder.is_dir() else cached_snapshot(settings.model, settings.download_dir) or folder


def _duration(seconds: float) -> str:
    if seconds < 100:
        return f"{max(seconds, 1):.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 6000 else f"{seconds / 3600:.1f} h"


async def fetch(settings: Settings, report: Callable[[str], Awaitable[None]]) -> Path:
    """Download the model and return its folder; `report` gets the progress about once a second."""
    transfer = Transfer(settings.model)
    work = from_modelscope if settings.model_source == "modelscope" else from_hub
    task = asyncio.ensure_future(asyncio.to_thread(work, settings, transfer))
    logged = 0.0
    while not task.done():
        await report(transfer.describe())
        if time.monotonic() - logged >= LOG_EVERY_S and transfer.total:
            log.info("%s from %s", transfer.describe(), source_name(settings))
            logged = time.monotonic()
        await asyncio.wait([task], timeout=1.0)
    try:
        folder = task.result()
        await report(transfer.describe())  # the last of it: 100%
    except (DownloadError, ModelNotFoundError):
        raise
    except Exception as error:
        raise DownloadError(settings.model, source_name(settings), f"{type(error).__name__}: {error}",
                            transfer.done, transfer.total) from error
    log.info("downloaded %s from %s: %.1f MB in %.0f s", settings.model, source_name(settings),
             transfer.fetched / 1e6, time.monotonic() - transfer.began)
    return folder


def from_hub(settings: Settings, transfer: Transfer) -> Path:
    """Runs in a thread: the missing files from the hub (or its mirror) into its cache, then the snapshot's folder."""
    from huggingface_hub import constants, snapshot_download

    # The client hands on what it receives 10 MB at a time: progress would move, and a cut keep, 10 MB steps.
    constants.DOWNLOAD_CHUNK_SIZE = CHUNK_BYTES
    model, cache_dir, endpoint = settings.model, settings.download_dir, hub_endpoint()
    try:
        plan = snapshot_download(model, cache_dir=cache_dir, allow_patterns=WANTED, endpoint=endpoint, dry_run=True,
                                 tqdm_class=_Silent)
    except Exception as error:
        raise ModelNotFoundError(model, f"it is not in the local cache, and {source_name(settings)} cannot be "
                                        f"reached or has no such model: {type(error).__name__}: {error}") from error
    missing = [_Blob(model, info.filename, info.commit_hash, cache_dir, endpoint)
               for info in plan if info.will_download]
    transfer.total = sum(info.file_size or 0 for info in plan)
    transfer.done = transfer.total - sum(blob.size for blob in missing) + sum(blob.kept() for blob in missing)
    for blob in missing:
        blob.fetch(transfer)
    # the bytes are all there now: this only files them into the cache, with nothing to show
    return Path(snapshot_download(model, cache_dir=cache_dir, allow_patterns=WANTED, endpoint=endpoint,
                                  revision=plan[0].commit_hash if plan else None, tqdm_class=_Silent))


class _Silent(tqdm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "disable": True})


class _Blob:
    """One file of the snapshot, on its way into the cache's blob store through a `.partial` file of its own."""

    def __init__(self, model: str, filename: str, commit: str, cache_dir: Path | None, endpoint: str):
        from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url
        from huggingface_hub.file_download import repo_folder_name

        self.meta = get_hf_file_metadata(hf_hub_url(model, filename, revision=commit, endpoint=endpoint))
        self.size = self.meta.size or 0
        self.endpoint = endpoint
        cache = Path(cache_dir or constants.HF_HUB_CACHE).expanduser().resolve()
        folder = repo_folder_name(repo_id=model, repo_type="model")
        self.path = cache / folder / "blobs" / self.meta.etag
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.lock = cache / ".locks" / folder / f"{self.meta.etag}.partial.lock"  # where the client keeps its own
        if self.partial.exists() and self.partial.stat().st_size > self.size:
            self.partial.unlink()  # longer than the file is now: not a beginning of it

    def kept(self) -> int:
        return self.partial.stat().st_size if self.partial.exists() else 0

    def fetch(self, transfer: Transfer) -> None:
        """The rest of the file after what an earlier try kept (HTTP Range), then the file into its place."""
        from huggingface_hub.file_download import http_get
        from huggingface_hub.utils import WeakFileLock, build_hf_headers

        headers = build_hf_headers()
        if urlparse(self.meta.location).netloc != urlparse(self.endpoint).netloc:  # a signed CDN link: no token
            headers.pop("authorization", None)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock.parent.mkdir(parents=True, exist_ok=True)
        with WeakFileLock(str(self.lock)):  # another app process may be fetching the same file
            if self.path.exists():
                return
            with open(self.partial, "ab") as file:
                http_get(self.meta.location, file, resume_size=file.tell(), headers=headers,
                         expected_size=self.meta.size, tqdm_class=transfer.bar(file.tell()))
            self.partial.replace(self.path)


def from_modelscope(settings: Settings, transfer: Transfer) -> Path:
    """Runs in a thread: the model from ModelScope (its client resumes a cut file by itself)."""
    from modelscope.hub.callback import ProgressCallback
    from modelscope.hub.snapshot_download import snapshot_download

    class Counted(ProgressCallback):
        def __init__(self, filename: str, file_size: int):
            super().__init__(filename, file_size)
            transfer.total += file_size  # ModelScope names a file's size as its download starts

        def update(self, size: int) -> None:
            transfer.add(size)

    return Path(snapshot_download(modelscope_id(settings.model), cache_dir=settings.download_dir,
                                  allow_patterns=WANTED, progress_callbacks=[Counted]))
