"""Finding the baseline Results for a commit: from a push run's artifact (artifact mode).

The baseline is the Results of the commit a PR branched from (the merge-base), or of the
nearest older commit of the base branch that has them: a newer commit of the base branch
would blame the PR for changes it does not contain. Only successful `push` runs of the base
repository count (a fork's branch may be called `main` too). Anything that makes a candidate
unusable (expired, tampered, unreadable, newer schema, partial) is skipped with its reason
kept, and when nothing is found the answer is a `NoBaseline` whose reason is one plain
sentence for the reports (docs/action.md, "The baseline"): never a crash. GitHub being down (5xx after the
client's retries, or unreachable) is different: the GitHubError propagates (exit 3).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..compare.loading import load_baseline
from ..compare.record import MainRecord
from ..compare.record_file import RECORD_NAME, read_record
from ..compare.sanity import Bounded, ResultsRefused, check_bounded
from ..files import move
from ..results import Results
from . import artifacts, commits
from .client import ArtifactExpired, GitHub, GitHubError

MAX_COMMITS = 50  # ancestors walked from the merge-base, itself included
MAX_AGE_DAYS = 90  # GitHub's default artifact retention
MAX_RUN_PAGES = 5  # pages of 100 runs listed at most
HISTORY = 10  # older baselines collected for noise estimates (the action's `history` input)
MAX_HISTORY = 20
SKIPPED = 6  # downloads that may fail their checks before the walk gives up
RESULTS_NAME = "results.json"
_LIST_STATUSES = (403, 404, 409, 422)  # answers to a list call that mean "cannot see it"


def cannot_see(exc: GitHubError) -> bool:
    """A refusal to show something (no access, not found), not an outage or a rate limit."""
    return exc.status in _LIST_STATUSES and "rate limit" not in exc.message.lower()


@dataclass(frozen=True)
class BaselineFound:
    """A usable baseline written to `path` (and loaded: `results`), and where it came from."""

    path: Path
    sha: str
    relation: str  # for reports: "the merge-base abc1234", "abc1234, 3 commits before …"
    results: Results
    distance: int = 0  # commits before the merge-base (or start commit)
    run_id: int | None = None
    run_url: str | None = None
    artifact_id: int | None = None
    history: list[Path] = field(default_factory=list)  # older baselines, nearest first
    older: MainRecord = field(default_factory=MainRecord)  # main's record of those
    # candidates refused as not genuine, and a main record refused (the older ones read)
    refused: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NoBaseline:
    """No usable baseline; `reason` completes "No baseline: …" in every report."""

    reason: str
    refused: list[str] = field(default_factory=list)  # candidates refused as not genuine


def short(sha: str) -> str:
    return sha[:7]


def describe(sha: str, anchor: str, distance: int, *, pull: bool, what: str) -> str:
    """How a baseline commit relates to where the walk started, for the reports."""
    name = f"the merge-base {short(anchor)}" if pull else short(anchor)
    if distance == 0:
        return name
    commits_ = "commit" if distance == 1 else "commits"
    return f"{short(sha)}, {distance} {commits_} before {name} (the nearest with {what})"


def baseline_path(dest: Path, n: int = 0) -> Path:
    """Where a baseline goes in the directory `dest`: results.json, then history-N.json."""
    return dest / (RESULTS_NAME if n == 0 else f"history-{n}.json")


def install(path: Path, what: str, *, older: bool = False) -> tuple[Results | None, str | None]:
    """Load the candidate Results at `path` (streamed there from an artifact, or written
    from the data branch) as a baseline (`older`: for main's record only, its runs' turns
    let go unread): (the Results, None), or (None, why they are unusable), the file then
    removed. The file is this job's own, so the loader maps it rather than reading it in."""
    results, why = load_baseline(str(path), turns=not older, mapped=True)
    if results is None:
        why = why or "unreadable"
    elif results.partial:
        why = "the Results are partial (that run was cut short)"
    if why is not None:
        path.unlink(missing_ok=True)
        return None, f"{what}: {why}"
    return results, None


@dataclass
class Older:
    """Main's older baselines as a walk finds them: their files, folded into main's record
    as each is read (compare/record.py), never all loaded at once; or the main record the
    baseline's artifact carried (`carried`: its file the one path)."""

    paths: list[Path] = field(default_factory=list)
    record: MainRecord = field(default_factory=MainRecord)
    carried: bool = False


def carried_record(
    path: Path, what: str, history: int, bounded: Bounded | None
) -> Older | str | None:
    """Main's record that came with the baseline at `path` (its `history` nearest older
    baselines), None when there is none, or why it is refused (its file then removed)."""
    if not path.exists():
        return None
    try:
        record = read_record(path, f"{what}: {RECORD_NAME}", bounded, mapped=True)
    except ResultsRefused as err:
        path.unlink(missing_ok=True)
        return f"{what}: its {RECORD_NAME} is refused ({err}); the older baselines are read"
    return Older([path], record.first(history), carried=True)


def keep_older(
    older: Older,
    path: Path,
    results: Results,
    what: str,
    bounded: Bounded | None,
    skipped: list[str],
) -> bool:
    """Fold an older baseline into main's record, unless a score of a metric `bounded` says
    scores within [0, 1] is outside it (then its file is removed and the walk goes on)."""
    if bounded is not None:
        try:
            check_bounded(results, what, bounded)
        except ResultsRefused as err:
            path.unlink(missing_ok=True)
            skipped.append(f"{what}: refused ({err})")
            return False
    older.paths.append(path)
    older.record.add(results)
    return True


def none_found(
    anchor: str, pull: bool, chain: list[str], skipped: list[str], otherwise: str
) -> NoBaseline:
    """Why the walk found nothing: the candidates it skipped, else `otherwise` (which ends
    with the commits it looked at)."""
    where = f"the merge-base {short(anchor)}" if pull else short(anchor)
    scope = f"{where} or its {len(chain) - 1} nearest ancestors" if len(chain) > 1 else where
    if skipped:
        return NoBaseline(f"no usable baseline for {scope}: {summarise(skipped)}")
    return NoBaseline(otherwise.format(scope=scope))


def start_of_walk(
    gh: GitHub, repo: str, start_sha: str, head_sha: str | None
) -> tuple[str | None, str | None]:
    """(the commit to walk back from, None) or (None, why it cannot be found).

    For a PR (`head_sha` given) that is the merge-base of the base and head commits."""
    if head_sha is None:
        return start_sha, None
    try:
        return commits.merge_base(gh, repo, start_sha, head_sha), None
    except GitHubError as exc:
        if cannot_see(exc):
            return None, (
                f"the merge-base of {short(start_sha)} and {short(head_sha)} could not be "
                f"found ({exc.status}: {exc.message})"
            )
        raise


def walk(gh: GitHub, repo: str, anchor: str, max_commits: int) -> tuple[list[str], str | None]:
    """(`anchor` and its ancestors nearest first, None), or ([], why they cannot be listed)."""
    try:
        return commits.ancestors(gh, repo, anchor, max_commits), None
    except GitHubError as exc:
        if cannot_see(exc):
            return [], (
                f"the history of {short(anchor)} could not be listed ({exc.status}: {exc.message})"
            )
        raise


def commits_to_try(
    gh: GitHub, repo: str, start_sha: str, head_sha: str | None, max_commits: int
) -> tuple[str, list[str]] | NoBaseline:
    """(the merge-base or start commit, it and its ancestors nearest first), or why not."""
    anchor, why = start_of_walk(gh, repo, start_sha, head_sha)
    if anchor is None:
        return NoBaseline(why or "no start commit")
    chain, why = walk(gh, repo, anchor, max_commits)
    if why is not None:
        return NoBaseline(why)
    return anchor, chain


def _access_reason(exc: GitHubError, what: str) -> str:
    if exc.status == 403:
        return (
            f"the token may not read {what} ({exc.message}); the workflow needs "
            "`permissions: actions: read`"
        )
    return f"{what} could not be listed ({exc.status}: {exc.message})"


def _push_runs(
    gh: GitHub,
    repo: str,
    *,
    workflow: str | None,
    branch: str,
    since: datetime,
    repository_id: int | None,
) -> Iterator[dict[str, Any]]:
    """Successful push runs on `branch` of the base repository, newest first, bounded."""
    if workflow:
        path = f"/repos/{repo}/actions/workflows/{quote(workflow, safe='')}/runs"
    else:
        path = f"/repos/{repo}/actions/runs"
    params = {
        "branch": branch,
        "event": "push",
        "status": "success",
        "created": ">=" + since.strftime("%Y-%m-%d"),
        "exclude_pull_requests": "true",
    }
    for index, run in enumerate(gh.paginate(path, params, key="workflow_runs")):
        if index >= MAX_RUN_PAGES * 100:
            return
        head_repo = run.get("head_repository") or {}
        if repository_id is not None:
            if head_repo.get("id", run.get("head_repository_id")) != repository_id:
                continue
        elif str(head_repo.get("full_name", "")).lower() != repo.lower():
            continue
        if run.get("event") == "push" and run.get("conclusion") == "success":
            yield run


def same_workflow(run: dict[str, Any], workflow: str) -> bool:
    """Whether `run` is of `workflow`, a workflow file name or id."""
    if workflow.isdecimal():
        return str(run.get("workflow_id")) == workflow
    path = str(run.get("path") or "").split("@", 1)[0]
    return path.rsplit("/", 1)[-1] == workflow


def push_run_problem(
    run: dict[str, Any],
    *,
    repo: str,
    sha: str,
    branch: str,
    workflow: str | None,
    repository_id: int | None,
) -> str | None:
    """Why `run` is not a successful push run of `workflow` on `branch` of this repository
    for the commit `sha` (what makes a baseline's run genuine), or None when it is."""
    name = f"run {run.get('id')}"
    if run.get("event") != "push":
        return f"{name} was a {run.get('event')} run, not a push"
    head_repo = run.get("head_repository") or {}
    if repository_id is not None:
        foreign = head_repo.get("id", run.get("head_repository_id")) != repository_id
    else:
        foreign = str(head_repo.get("full_name", "")).lower() != repo.lower()
    if foreign:
        return f"{name} ran on a branch of another repository ({head_repo.get('full_name')})"
    if run.get("head_branch") != branch:
        return f"{name} ran on the branch {run.get('head_branch')!r}, not {branch!r}"
    if run.get("head_sha") != sha:
        return f"{name} was for the commit {short(str(run.get('head_sha')))}, not {short(sha)}"
    if workflow and not same_workflow(run, workflow):
        return f"{name} is of the workflow {run.get('path')}, not {workflow}"
    if run.get("status") != "completed" or run.get("conclusion") != "success":
        return f"{name} did not succeed ({run.get('conclusion') or run.get('status')})"
    return None


def _runs_by_sha(runs: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Runs grouped by commit, newest attempt (then newest run) first."""
    by_sha: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_sha.setdefault(run["head_sha"], []).append(run)
    for group in by_sha.values():
        group.sort(
            key=lambda r: (r.get("run_attempt") or 1, r.get("created_at") or "", r["id"]),
            reverse=True,
        )
    return by_sha


class _Candidates:
    """Downloads and checks one run's artifact; remembers why candidates were skipped."""

    def __init__(self, gh: GitHub, repo: str, artifact_name: str):
        self.gh, self.repo, self.name = gh, repo, artifact_name
        self.skipped: list[str] = []
        self.downloads = 0

    def artifact_of(self, run: dict[str, Any]) -> dict[str, Any] | None:
        what = f"run {run['id']} ({short(run['head_sha'])})"
        listed = self.gh.get(
            f"/repos/{self.repo}/actions/runs/{run['id']}/artifacts",
            params={"name": self.name, "per_page": 100},
        )
        found = [a for a in listed.get("artifacts", []) if a.get("name") == self.name]
        live = [a for a in found if not a.get("expired")]
        if not found:
            self.skipped.append(f"{what} has no artifact named {self.name}")
        elif not live:
            self.skipped.append(f"the artifact {self.name} of {what} has expired")
        return max(live, key=lambda a: a["id"]) if live else None

    def results_of(
        self, run: dict[str, Any], artifact: dict[str, Any], path: Path, *, record: bool = False
    ) -> bool:
        """Write the artifact's results.json to `path` (with `record`, and its main record
        beside it, when it has one); False when it is unusable (reason kept). Raises when
        GitHub is down. The artifact is streamed to a scratch folder beside `path` and its
        files from there: at 100,000 cases they are hundreds of MB, never held in memory."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".artifact-") as scratch:
            archive = Path(scratch) / "artifact.zip"
            if not self._download(run, artifact, archive):
                return False
            return self._extract(run, archive, Path(scratch) / "files", path, record=record)

    def _what(self, run: dict[str, Any]) -> str:
        return f"the artifact {self.name} of run {run['id']} ({short(run['head_sha'])})"

    def _download(self, run: dict[str, Any], artifact: dict[str, Any], archive: Path) -> bool:
        self.downloads += 1
        try:
            actual = self.gh.download_artifact(artifact["archive_download_url"], archive)
        except ArtifactExpired:
            self.skipped.append(f"{self._what(run)} has expired")
            return False
        except GitHubError as exc:
            limited = exc.status == 429 or "rate limit" in exc.message.lower()
            refused = exc.status is not None and 400 <= exc.status < 500 and not limited
            too_big = exc.status is None and exc.message.startswith("artifact ")  # size cap
            if refused or too_big:
                self.skipped.append(f"{self._what(run)} could not be downloaded ({exc.message})")
                return False
            raise
        digest = artifact.get("digest")
        if isinstance(digest, str) and digest.startswith("sha256:") and actual != digest:
            self.skipped.append(f"{self._what(run)} does not match its digest (got {actual[:19]}…)")
            return False
        return True

    def _extract(
        self, run: dict[str, Any], archive: Path, folder: Path, path: Path, *, record: bool
    ) -> bool:
        what = self._what(run)
        wanted = {RESULTS_NAME, RECORD_NAME} if record else {RESULTS_NAME}
        try:
            files = artifacts.extract_files(archive, wanted, folder, source=what)
        except artifacts.ArtifactError as exc:
            self.skipped.append(f"artifact unreadable: {exc}")
            return False
        if RESULTS_NAME not in files:
            held = ", ".join(artifacts.entry_names(archive)[:5]) or "nothing"
            self.skipped.append(f"{what} has no {RESULTS_NAME} at its root (it holds {held})")
            return False
        move(files[RESULTS_NAME], path)
        if RECORD_NAME in files:
            move(files[RECORD_NAME], path.parent / RECORD_NAME)
        return True


def summarise(skipped: list[str]) -> str:
    """The first reasons candidates were skipped, as the end of a sentence."""
    shown = "; ".join(skipped[:3])
    more = f" (and {len(skipped) - 3} more)" if len(skipped) > 3 else ""
    return shown + more


def find_artifact_baseline(
    gh: GitHub,
    repo: str,
    *,
    start_sha: str,
    head_sha: str | None = None,
    branch: str,
    workflow: str | None,
    artifact_name: str,
    dest: Path,
    repository_id: int | None = None,
    max_commits: int = MAX_COMMITS,
    max_age_days: int = MAX_AGE_DAYS,
    history: int = HISTORY,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    bounded: Bounded | None = None,
) -> BaselineFound | NoBaseline:
    """The baseline for a PR (`head_sha` given: walk from the merge-base of `start_sha`, the
    base commit, and `head_sha`) or for a commit (walk from `start_sha` itself).

    Writes the chosen Results to `dest`/results.json. Main's record of the `history` older
    baselines comes from the main record its artifact carries (`dest`/main-record.msgpack,
    compare/record_file.py), else from the older baselines themselves, written beside it and
    each folded as it is read. Either is refused where a score of a metric `bounded` says
    scores within [0, 1] is outside it (a refused record: the older baselines are read).
    `workflow` is the workflow file name or id whose push runs upload `artifact_name`
    (None: any workflow). Raises GitHubError only when GitHub fails (5xx, unreachable, a
    rate limit longer than the client waits)."""
    walk_from = commits_to_try(gh, repo, start_sha, head_sha, max_commits)
    if isinstance(walk_from, NoBaseline):
        return walk_from
    anchor, chain = walk_from
    of_workflow = f"workflow {workflow}" if workflow else "any workflow"
    since = clock() - timedelta(days=max_age_days)
    try:
        runs = _runs_by_sha(
            _push_runs(
                gh, repo, workflow=workflow, branch=branch, since=since,
                repository_id=repository_id,
            )
        )  # fmt: skip
    except GitHubError as exc:
        if cannot_see(exc):
            return NoBaseline(_access_reason(exc, f"the runs of {of_workflow}"))
        raise
    pull = head_sha is not None
    window = f"within the last {max_age_days} days"
    if not runs:
        return NoBaseline(f"no successful push run of {of_workflow} on {branch} {window}")
    candidates = _Candidates(gh, repo, artifact_name)
    found: tuple[int, str, dict[str, Any], dict[str, Any], Results] | None = None
    older = Older()
    refused: list[str] = []  # a main record that came with the baseline and was refused
    for distance, sha in enumerate(chain):
        if (found is not None and len(older.paths) >= history) or (
            candidates.downloads >= history + 1 + SKIPPED
        ):
            break
        for run in runs.get(sha, []):
            if candidates.downloads >= history + 1 + SKIPPED:
                break
            try:
                artifact = candidates.artifact_of(run)
            except GitHubError as exc:
                if cannot_see(exc):
                    return NoBaseline(_access_reason(exc, f"the artifacts of run {run['id']}"))
                raise
            path = baseline_path(dest, 0 if found is None else len(older.paths) + 1)
            first = found is None
            if artifact is None or not candidates.results_of(run, artifact, path, record=first):
                continue
            what = f"the {artifact_name} artifact of run {run['id']} ({short(sha)})"
            results, unusable = install(path, what, older=not first)
            if results is None:
                candidates.skipped.append(str(unusable))
                (dest / RECORD_NAME).unlink(missing_ok=True)  # came with unusable Results
                continue
            if first:
                found = (distance, sha, run, artifact, results)
                carried = carried_record(dest / RECORD_NAME, what, history, bounded)
                if isinstance(carried, str):
                    refused.append(carried)
                elif carried is not None:
                    older = carried
            elif keep_older(older, path, results, what, bounded, candidates.skipped):
                del results  # folded: let go before the next one is read
            break  # one baseline per commit
        if older.carried:
            break  # main's record came with the baseline
    if found is not None:
        distance, sha, run, artifact, results = found
        return BaselineFound(
            path=baseline_path(dest), sha=sha, distance=distance, results=results,
            relation=describe(sha, anchor, distance, pull=pull, what="an artifact"),
            run_id=run["id"], run_url=run.get("html_url"), artifact_id=artifact["id"],
            history=older.paths, older=older.record, refused=refused,
        )  # fmt: skip
    return none_found(
        anchor, pull, chain, candidates.skipped,
        f"no successful push run of {of_workflow} on {branch} for {{scope}} {window}",
    )  # fmt: skip
