"""Files from the artifacts of one workflow run: a PR run's results for the fork-safe
comment job, and the shard results of the current run for the merge job.

Artifacts are untrusted input (a fork's run wrote them): they go through the size cap and
the digest check of the download and the safe zip reader, and only the named files are read.
An artifact the zip reader refuses is bad input (exit 2, one line), as unreadable Results
in it are: this job cannot tell a hostile artifact from a broken one, and neither is a fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InputError
from ..files.jsonpos import one_line
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
    An artifact that cannot be read safely is an InputError naming it; a download that does
    not match its digest, or fails, is a GitHubError (a fault: exit 3)."""
    found = []
    listing = gh.paginate(f"/repos/{repo}/actions/runs/{run_id}/artifacts", key="artifacts")
    for artifact in sorted(listing, key=lambda a: a["name"]):
        if not select(artifact["name"]) or artifact.get("expired"):
            continue
        data = gh.download_artifact(artifact["archive_download_url"], digest=artifact.get("digest"))
        source = f"artifact {artifact['name']} of run {run_id}"
        try:
            files = read_files(data, wanted, source=source)
        except ArtifactError as err:
            raise InputError(one_line(f"refused {err}")) from None
        found.append(ArtifactFiles(artifact["name"], files))
    return found


def artifact_id(gh: GitHub, repo: str, run_id: int | str, name: str) -> int | None:
    """The id of the run's unexpired artifact of this name (e.g. `report.html`, uploaded
    with `archive: false`), or None. Only the API's listing is read, no artifact."""
    listing = gh.paginate(f"/repos/{repo}/actions/runs/{run_id}/artifacts", key="artifacts")
    for artifact in listing:
        found = artifact.get("id")
        if artifact.get("name") == name and not artifact.get("expired") and type(found) is int:
            return found
    return None


__all__ = ["ArtifactFiles", "artifact_id", "run_artifact_files"]
