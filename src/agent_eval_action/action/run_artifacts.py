"""Files from the artifacts of one workflow run: a PR run's results for the fork-safe
comment job, and the shard results of the current run for the merge job.

Artifacts are untrusted input (a fork's run wrote them): they go through the size cap and
the digest check of the download and the safe zip reader, and only the named files are read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..github.artifacts import ArtifactError, read_files
from ..github.client import GitHub


@dataclass(frozen=True)
class ArtifactFiles:
    name: str
    files: dict[str, bytes]


def run_artifact_files(
    gh: GitHub,
    repo: str,
    run_id: int | str,
    select: Callable[[str], bool],
    wanted: set[str],
) -> list[ArtifactFiles]:
    """The wanted files of each unexpired artifact of the run whose name `select` accepts.
    An artifact that cannot be read safely raises ArtifactError (naming it)."""
    found = []
    listing = gh.paginate(f"/repos/{repo}/actions/runs/{run_id}/artifacts", key="artifacts")
    for artifact in sorted(listing, key=lambda a: a["name"]):
        if not select(artifact["name"]) or artifact.get("expired"):
            continue
        data = gh.download_artifact(artifact["archive_download_url"], digest=artifact.get("digest"))
        source = f"artifact {artifact['name']} of run {run_id}"
        found.append(ArtifactFiles(artifact["name"], read_files(data, wanted, source=source)))
    return found


__all__ = ["ArtifactError", "ArtifactFiles", "run_artifact_files"]
