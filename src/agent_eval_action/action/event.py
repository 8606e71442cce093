"""The event that started the workflow (`$GITHUB_EVENT_PATH`), and the mode it selects.

Only the fields the action uses are read (docs/action.md, "Modes"); a missing one is a
one-line InputError naming the event file and the field.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .settings import Settings

if TYPE_CHECKING:
    from ..github.pulls import PullRequest

# workflow_dispatch inputs that may carry the number of a PR to compare against
DISPATCH_PR_INPUTS = ("pr-number", "pr_number", "pr")
PR_EVENTS = ("pull_request", "pull_request_target")
# A merge group's branch, made by GitHub's merge queue: gh-readonly-queue/<base>/pr-<N>-<sha>
QUEUE_PREFIX = "gh-readonly-queue/"
_QUEUE_REF = re.compile(r"(?:refs/heads/)?gh-readonly-queue/.+/pr-(?P<n>\d{1,19})(?:-[0-9a-f]+)?")


def queue_pr_number(ref: str) -> int | None:
    """The PR a merge queue branch was made for (`refs/heads/gh-readonly-queue/<base>/pr-<N>-<sha>`);
    None for any other name."""
    match = _QUEUE_REF.fullmatch(ref)
    return int(match.group("n")) if match else None


class Mode(enum.StrEnum):
    PR = "pr"  # fetch the baseline, run, compare, comment, check
    BASELINE = "baseline"  # run on the default branch and write the baseline for upload
    RUN = "run"  # run only
    COMPARE = "compare"  # run and compare with the baseline; publish nothing (fork-safe part 1)
    COMMENT = "comment"  # publish a finished run's artifact (workflow_run, fork-safe)
    MERGE = "merge"  # merge shard results
    IGNORE = "ignore"  # nothing to do for this event


@dataclass(frozen=True)
class PullRequestEvent:
    number: int
    head_sha: str
    head_ref: str
    base_sha: str
    base_ref: str
    head_repo: str | None  # None: the fork was deleted
    base_repo: str
    labels: tuple[str, ...]
    default_branch: str | None = None

    @property
    def is_fork(self) -> bool:
        return self.head_repo != self.base_repo


@dataclass(frozen=True)
class MergeGroupEvent:
    head_sha: str
    head_ref: str
    base_sha: str
    base_ref: str
    default_branch: str | None = None

    @property
    def pr_number(self) -> int | None:
        """The PR the merge queue made this group for, from its branch
        (`refs/heads/gh-readonly-queue/<base>/pr-<N>-<sha>`); None for another branch name."""
        return queue_pr_number(self.head_ref)


@dataclass(frozen=True)
class PushEvent:
    ref: str
    after: str
    default_branch: str

    @property
    def to_default_branch(self) -> bool:
        return self.ref == f"refs/heads/{self.default_branch}"


@dataclass(frozen=True)
class WorkflowRunEvent:
    id: int
    conclusion: str | None  # None while the run is not completed
    event: str  # the event of the triggering run
    head_sha: str
    head_branch: str | None
    pull_requests: tuple[int, ...]  # empty for fork PRs: find the PR another way
    head_repo: str | None
    repo: str
    head_repo_id: int | None = None  # None: the payload names none (a deleted fork?)
    workflow_path: str | None = None  # the triggering run's workflow file, for its baseline
    default_branch: str | None = None

    @property
    def is_fork(self) -> bool:
        return self.head_repo != self.repo

    @property
    def of_pull_request(self) -> bool:
        return self.event in PR_EVENTS


def run_head_moved(event: WorkflowRunEvent, pull: PullRequest) -> str | None:
    """Whether `pull`, as GitHub has it now, is the PR the triggering run ran for: the same
    head repository (by id: a name can be taken again), head branch and head commit as the
    event names (GitHub's payload, not the artifact's pr.json). A PR's head repository and
    branch never change, so another one, or one that cannot be told (a deleted fork, an
    event without the id), means the artifact names a PR this run was not for: InputError
    (exit 2), nothing posted. Then only the commit may differ: the head moved on since the
    run, the line to print (exit 0, nothing posted); None when all three are the same."""
    number = f"PR #{pull.number}"
    if event.head_repo_id is None:
        raise InputError(
            "workflow_run event: no field workflow_run.head_repository.id, so no PR can be "
            "tied to the run's head repository: posting nothing"
        )
    run_repo = f"{event.head_repo or 'unnamed'}, id {event.head_repo_id}"
    if pull.head_repo_id is None:
        raise InputError(
            f"{number}'s head repository is gone (a deleted fork): it cannot be tied to "
            f"the run's ({run_repo}); posting nothing"
        )
    if pull.head_repo_id != event.head_repo_id:
        raise InputError(
            f"{number} is not this run's PR: its head repository is id {pull.head_repo_id}, "
            f"the run's is {run_repo}; posting nothing"
        )
    if pull.head_ref != event.head_branch:
        raise InputError(
            f"{number} is not this run's PR: its head branch is {pull.head_ref!r}, the "
            f"run's is {event.head_branch!r}; posting nothing"
        )
    if pull.head_sha != event.head_sha:
        return (
            f"{number}'s head is {pull.head_sha[:12]}, not {event.head_sha[:12]} "
            "(moved on since the run): posting nothing"
        )
    return None


@dataclass(frozen=True)
class WorkflowDispatchEvent:
    inputs: dict[str, str]
    pr_number: int | None
    default_branch: str | None = None


@dataclass(frozen=True)
class OtherEvent:
    name: str


Event = (
    PullRequestEvent
    | MergeGroupEvent
    | PushEvent
    | WorkflowRunEvent
    | WorkflowDispatchEvent
    | OtherEvent
)


class _Payload:
    """Field access into the event JSON, with errors that name the file and the field."""

    def __init__(self, data: Any, path: str, event_name: str):
        self.data, self.path, self.event_name = data, path, event_name

    def _missing(self, dotted: str, what: str = "missing") -> InputError:
        return InputError(f"{self.event_name} event: {what} field {dotted}", file=self.path)

    def get(self, dotted: str, kind: type, *, nullable: bool = False) -> Any:
        value = self.data
        for key in dotted.split("."):
            if not isinstance(value, dict) or key not in value:
                raise self._missing(dotted)
            value = value[key]
        if value is None and nullable:
            return None
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise self._missing(dotted, "wrong type of")
        return value

    def optional(self, dotted: str, kind: type) -> Any:
        try:
            return self.get(dotted, kind, nullable=True)
        except InputError:
            return None


def load_event(event_name: str | None, event_path: str | None) -> Event:
    """The event payload as the action uses it; events it does not read are OtherEvent."""
    if not event_name:
        raise InputError("GITHUB_EVENT_NAME is not set: is this running in GitHub Actions?")
    parse = _PARSERS.get(event_name)
    if parse is None:
        return OtherEvent(event_name)
    if not event_path:
        raise InputError(f"GITHUB_EVENT_PATH is not set for the {event_name} event")
    from ..files import jsonpos, read_text

    data = jsonpos.loads(read_text(Path(event_path), event_path), event_path)
    if not isinstance(data, dict):
        raise InputError("the event file is not a JSON object", file=event_path)
    return parse(_Payload(data, event_path, event_name))


def _pull_request(p: _Payload) -> PullRequestEvent:
    labels = p.optional("pull_request.labels", list) or []
    return PullRequestEvent(
        number=p.get("pull_request.number", int),
        head_sha=p.get("pull_request.head.sha", str),
        head_ref=p.get("pull_request.head.ref", str),
        base_sha=p.get("pull_request.base.sha", str),
        base_ref=p.get("pull_request.base.ref", str),
        # head.repo is null when the fork was deleted: then it is not the base repository
        head_repo=p.optional("pull_request.head.repo.full_name", str),
        base_repo=p.get("repository.full_name", str),
        labels=tuple(
            label["name"]
            for label in labels
            if isinstance(label, dict) and isinstance(label.get("name"), str)
        ),
        default_branch=p.optional("repository.default_branch", str),
    )


def _merge_group(p: _Payload) -> MergeGroupEvent:
    return MergeGroupEvent(
        head_sha=p.get("merge_group.head_sha", str),
        head_ref=p.get("merge_group.head_ref", str),
        base_sha=p.get("merge_group.base_sha", str),
        base_ref=p.get("merge_group.base_ref", str),
        default_branch=p.optional("repository.default_branch", str),
    )


def _push(p: _Payload) -> PushEvent:
    return PushEvent(
        ref=p.get("ref", str),
        after=p.get("after", str),
        default_branch=p.get("repository.default_branch", str),
    )


def _workflow_run(p: _Payload) -> WorkflowRunEvent:
    pulls = p.get("workflow_run.pull_requests", list)
    return WorkflowRunEvent(
        id=p.get("workflow_run.id", int),
        conclusion=p.get("workflow_run.conclusion", str, nullable=True),
        event=p.get("workflow_run.event", str),
        head_sha=p.get("workflow_run.head_sha", str),
        head_branch=p.get("workflow_run.head_branch", str, nullable=True),
        pull_requests=tuple(
            pr["number"]
            for pr in pulls
            if isinstance(pr, dict) and isinstance(pr.get("number"), int)
        ),
        head_repo=p.optional("workflow_run.head_repository.full_name", str),
        repo=p.get("repository.full_name", str),
        head_repo_id=p.optional("workflow_run.head_repository.id", int),
        workflow_path=p.optional("workflow_run.path", str),
        default_branch=p.optional("repository.default_branch", str),
    )


def _workflow_dispatch(p: _Payload) -> WorkflowDispatchEvent:
    raw = p.optional("inputs", dict) or {}
    inputs = {str(k): "" if v is None else str(v) for k, v in raw.items()}
    number = None
    for key in DISPATCH_PR_INPUTS:
        text = inputs.get(key, "").strip().removeprefix("#")
        if text:
            # isdigit() alone lets "²" through, which int() refuses
            if not (text.isascii() and text.isdigit() and len(text) < 20) or int(text) < 1:
                raise InputError(
                    f"workflow_dispatch event: inputs.{key} must be a PR number, got {text!r}",
                    file=p.path,
                )
            number = int(text)
            break
    return WorkflowDispatchEvent(
        inputs=inputs,
        pr_number=number,
        default_branch=p.optional("repository.default_branch", str),
    )


_PARSERS: dict[str, Callable[[_Payload], Event]] = {
    "pull_request": _pull_request,
    "merge_group": _merge_group,
    "push": _push,
    "workflow_run": _workflow_run,
    "workflow_dispatch": _workflow_dispatch,
}


def select_mode(settings: Settings, event: Event) -> Mode:
    """What this step does: the `mode` input, or with `mode: auto` what the event asks for."""
    if settings.mode != "auto":
        return Mode(settings.mode)
    match event:
        case PullRequestEvent() | MergeGroupEvent():
            return Mode.PR
        case PushEvent():
            return Mode.BASELINE if event.to_default_branch else Mode.RUN
        case WorkflowRunEvent():
            return Mode.COMMENT if event.of_pull_request else Mode.IGNORE
        case WorkflowDispatchEvent():
            return Mode.PR if event.pr_number is not None else Mode.RUN
    # e.g. pull_request_target, which would run the PR's code with write access and secrets
    raise InputError(
        f"mode: auto does not handle the {event.name} event; "
        "use pull_request, merge_group, push, workflow_run or workflow_dispatch, "
        "or set the mode input (run, compare, comment, merge)"
    )
