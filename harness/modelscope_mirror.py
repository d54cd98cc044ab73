"""A ModelScope mirror on 127.0.0.1 for the download tests: it serves one model folder, slowly, under a ModelScope id.

It answers what the `modelscope` client (1.40, which hands its downloads to `modelscope_hub` 0.5) asks the site
at `MODELSCOPE_ENDPOINT` while `snapshot_download(model_id, ...)` runs, in ModelScope's envelope
(`{"Code": 200, "Data": ..., "Success": true}`):
- `GET /api/v1/repos/internalAccelerationInfo`: whether the machine is inside Alibaba Cloud, where a nearer copy
  could be fetched; the mirror says it is not (no region to ask), so every file comes from the mirror itself;
- `GET /api/v1/models/{owner}/{name}/repo/files?Revision=master&Recursive=True`: the file list, each file's
  `Path`, `Size` and `Sha256` (the client checks both after the download);
- `GET /api/v1/models/{owner}/{name}/repo?Revision=master&FilePath={file}`: the file's bytes, from `Range:
  bytes=N-` when the client resumes a file it has part of (it does, within one call and across calls).
The client asks for no revision list: it takes `master` as it is. A revision other than `master` or the mirror's
commit, another model, or anything else is a 404 in the same envelope, kept in `misses`. Bytes go out slowly and
a cut stays down until restored, as in harness/hub_mirror.py, whose server this shares. The tests need it because
no machine here can reach ModelScope; what downloads from it is the real client.
"""

import re
import uuid
from pathlib import Path

from harness.hub_mirror import FolderMirror, Reply

ENDPOINT_VARIABLE = "MODELSCOPE_ENDPOINT"  # MODELSCOPE_DOMAIN is still read, with a FutureWarning
LFS = re.compile(r".*\.(safetensors|bin|model|pt|pth|gguf)$")  # what the repos keep in Git LFS


class ModelScopeMirror(FolderMirror):
    def __init__(self, model_id: str, folder: Path, bytes_per_s: int = 200_000):
        super().__init__(folder, bytes_per_s)
        self.model_id = model_id
        self.misses: list[str] = []  # the requests answered 404: what the client asked that the mirror lacks

    def environment(self) -> dict[str, str]:
        """What points the client at this mirror."""
        return {ENDPOINT_VARIABLE: self.url}

    def answer(self, reply: Reply, path: str, query: dict[str, str], body: bool) -> None:
        if path == "/api/v1/repos/internalAccelerationInfo":
            return reply.json(_envelope({"InternalRegionQueryAddress": ""}))
        repo = rf"/api/v1/models/{re.escape(self.model_id)}/repo"
        known_revision = query.get("Revision", "master") in ("master", self.commit)
        if re.fullmatch(rf"{repo}/files", path) and known_revision:
            return reply.json(_envelope({"Files": [self._entry(name) for name in self.files]}))
        if re.fullmatch(repo, path) and known_revision and query.get("FilePath") in self.files:
            return reply.file(query["FilePath"], body)
        self.misses.append(f"{reply.command} {reply.path}")
        reply.json({"Code": 404, "Message": f"{reply.command} {reply.path} is not on this mirror",
                    "Success": False, "RequestId": uuid.uuid4().hex}, status=404)

    def _entry(self, name: str) -> dict:
        return {"Name": name, "Path": name, "Type": "blob", "Size": len(self.files[name]),
                "Sha256": self.sha256(name), "Revision": self.commit, "IsLFS": bool(LFS.fullmatch(name))}


def _envelope(data) -> dict:
    return {"Code": 200, "Data": data, "Message": "success", "Success": True, "RequestId": uuid.uuid4().hex}
