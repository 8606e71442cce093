"""Files from the artifacts of one workflow run: a PR run's results for the fork-safe
comment job, and the shard results of the current run for the merge job.

Artifacts are untrusted input (a fork's run wrote them): they go through the size cap and
the digest check of the download and the safe zip reader, and only the named files are taken
out. Both stream to files (a 100,000-case results.json is hundreds of MB, never held in
memory): callers get paths. An artifact the zip reader refuses is bad input (exit 2, one
line), as unreadable Results in it are: this job cannot tell a hostile artifact from a broken
one, and neither is a fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..files.jsonpos import one_line
from ..github.artifacts import ArtifactError, extract_files
from ..github.client import GitHub


@dataclass(frozen=True)
class ArtifactFiles:
    name: str
    files: dict[str, Path]  # the wanted files it holds, by name, each a file of its own


def run_artifact_files(
    gh: GitHub,
    repo: str,
    run_id: int | str,
    select: Callable[[str], bool],
    wanted: set[str],
    dest: Path,
) -> list[ArtifactFiles]:
    """The wanted files of each unexpired artifact of the run whose name `select` accepts,
    written under the folder `dest` (a folder of its own for each artifact, by number: an
    artifact's name is not a path). An artifact that cannot be read safely is an InputError
    naming it; a download that does not match its digest, or fails, is a GitHubError (a
    fault: exit 3)."""
    found = []
    listing = gh.paginate(f"/repos/{repo}/actions/runs/{run_id}/artifacts", key="artifacts")
    chosen = [a for a in listing if select(a["name"]) and not a.get("expired")]
    for index, artifact in enumerate(sorted(chosen, key=lambda a: a["name"])):
        archive = dest / f"{index}.zip"
        gh.download_artifact(
            artifact["archive_download_url"], archive, digest=artifact.get("digest")
        )
        source = f"artifact {artifact['name']} of run {run_id}"
        try:
            files = extract_files(archive, wanted, dest / str(index), source=source)
        except ArtifactError as err:
            raise InputError(one_line(f"refused {err}")) from None
        finally:
            archive.unlink(missing_ok=True)
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
