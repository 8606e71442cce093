"""The sticky PR comment (github/comments.py) against the fake GitHub."""

from __future__ import annotations

import pytest
from fakes.github import BOT, REPO

from agent_eval_action.github.client import GitHub, GitHubError
from agent_eval_action.github.comments import (
    ID_LINE,
    Author,
    find_sticky,
    is_ours,
    token_author,
    update_sticky,
    upsert_sticky,
)

MARKER = "<!-- agent-eval-action:agent-eval -->"
PR = 7
PAT = "ghp_maintainersPersonalToken"
APP_TOKEN = "ghs_appInstallationToken"


def body(text: str) -> str:
    return f"{MARKER}\n{text}"


def stamped(comment_id: int, text: str) -> str:
    """A body as this action leaves it: the marker, the comment's id, the report."""
    return f"{MARKER}\n{ID_LINE.format(id=comment_id)}\n{text}"


@pytest.fixture
def gh(github_fake) -> GitHub:
    return GitHub("tok", github_fake.url, backoff=0, sleep=lambda s: None)


def client(github_fake, token: str) -> GitHub:
    return GitHub(token, github_fake.url, backoff=0, sleep=lambda s: None)


def ours(github_fake, text: str, login: str = BOT) -> dict:
    """A sticky comment an earlier run of this action left."""
    comment = github_fake.add_comment(PR, "", login=login)
    comment["body"] = stamped(comment["id"], text)
    return comment


def sticky(github_fake) -> list[dict]:
    """The comments on the PR that are this action's (by github-actions[bot])."""
    return [c for c in github_fake.comments_on(PR) if is_ours(c, MARKER, Author(BOT))]


def test_creates_then_updates_on_rerun(gh: GitHub, github_fake) -> None:
    github_fake.add_comment(PR, "a human's comment", login="octocat")
    first = upsert_sticky(gh, REPO, PR, body("run 1"), MARKER)
    assert first["body"] == stamped(first["id"], "run 1")
    second = upsert_sticky(gh, REPO, PR, body("run 2"), MARKER)
    assert second["id"] == first["id"]
    assert second["html_url"].endswith(f"#issuecomment-{first['id']}")
    assert [c["body"] for c in sticky(github_fake)] == [stamped(first["id"], "run 2")]
    assert len(github_fake.calls("create_comment")) == 1
    # the id is written once the comment has one; the rerun writes its report
    assert len(github_fake.calls("update_comment")) == 2
    # the body starts with the marker, so the report still does
    assert github_fake.comments[first["id"]]["body"].startswith(MARKER + "\n")


def test_an_unchanged_report_is_not_written_again(gh: GitHub, github_fake) -> None:
    first = upsert_sticky(gh, REPO, PR, body("same"), MARKER)
    updates = len(github_fake.calls("update_comment"))
    again = upsert_sticky(gh, REPO, PR, body("same"), MARKER)
    assert again["id"] == first["id"]
    assert len(github_fake.calls("update_comment")) == updates


def test_finds_the_sticky_comment_beyond_the_first_page(gh: GitHub, github_fake) -> None:
    for i in range(150):
        github_fake.add_comment(PR, f"chatter {i}", login="octocat")
    old = ours(github_fake, "old")
    upsert_sticky(gh, REPO, PR, body("new"), MARKER)
    assert github_fake.comments[old["id"]]["body"] == stamped(old["id"], "new")
    assert github_fake.calls("create_comment") == []


def test_ignores_the_marker_in_another_authors_comment(gh: GitHub, github_fake) -> None:
    quoted = github_fake.add_comment(PR, body("quoted by a human"), login="octocat")
    mine = upsert_sticky(gh, REPO, PR, body("report"), MARKER)
    assert mine["id"] != quoted["id"]
    assert github_fake.comments[quoted["id"]]["body"] == body("quoted by a human")
    assert find_sticky(gh, REPO, PR, MARKER, Author(None)) == [
        {k: v for k, v in github_fake.comments[mine["id"]].items() if not k.startswith("_")}
    ]


# ---- takeover (security issue, finding 2) ----------------------------------------------------
def test_a_lint_bot_quoting_the_marker_is_not_overwritten(gh: GitHub, github_fake) -> None:
    """Every workflow comments as github-actions[bot]: a lint bot quoting PR text that holds
    our marker wrote a comment with the marker inside. It is not ours: never updated."""
    lint = f"Lint found 2 problems in the PR description:\n> {MARKER}\n> hello"
    linted = github_fake.add_comment(PR, lint)
    mine = upsert_sticky(gh, REPO, PR, body("report"), MARKER)
    assert mine["id"] != linted["id"]
    assert github_fake.comments[linted["id"]]["body"] == lint
    assert [c["id"] for c in sticky(github_fake)] == [mine["id"]]
    patched = {int(r.path.rsplit("/", 1)[1]) for r in github_fake.calls("update_comment")}
    assert patched == {mine["id"]}


def test_a_bot_echoing_text_that_starts_with_the_marker_is_not_ours(
    gh: GitHub, github_fake
) -> None:
    """A bot echoing the PR description verbatim starts with our marker (and even with an
    id line, copied from one of our comments): without its own id, it is not ours."""
    echo = github_fake.add_comment(PR, body("PR description, echoed"))
    copied = github_fake.add_comment(PR, stamped(echo["id"], "copied id line"))
    mine = upsert_sticky(gh, REPO, PR, body("report"), MARKER)
    assert mine["id"] not in (echo["id"], copied["id"])
    assert github_fake.comments[echo["id"]]["body"] == body("PR description, echoed")
    assert github_fake.comments[copied["id"]]["body"] == stamped(echo["id"], "copied id line")
    assert github_fake.calls("delete_comment") == []


def test_a_security_scan_mentioning_the_marker_is_not_deleted(gh: GitHub, github_fake) -> None:
    """Two of our comments (a race left a duplicate) and a newer github-actions[bot] comment
    that mentions the marker: the duplicate goes, the scan stays."""
    kept = ours(github_fake, "a")
    duplicate = ours(github_fake, "b")
    scan = f"Security scan: hidden HTML in the PR: `{MARKER}`\n{MARKER}"
    scanned = github_fake.add_comment(PR, scan)
    upsert_sticky(gh, REPO, PR, body("c"), MARKER)
    assert duplicate["id"] not in github_fake.comments
    assert github_fake.comments[scanned["id"]]["body"] == scan
    assert github_fake.comments[kept["id"]]["body"] == stamped(kept["id"], "c")
    deleted = [int(r.path.rsplit("/", 1)[1]) for r in github_fake.calls("delete_comment")]
    assert deleted == [duplicate["id"]]


def test_a_person_cannot_pass_their_comment_off_as_ours(gh: GitHub, github_fake) -> None:
    """A PR author edits their own (older) comment to look exactly like ours: it is neither
    written to nor kept in place of ours."""
    forged = ours(github_fake, "looks like a report", login="pr-author")
    mine = upsert_sticky(gh, REPO, PR, body("report"), MARKER)
    assert mine["id"] != forged["id"]
    assert github_fake.comments[forged["id"]]["body"] == stamped(
        forged["id"], "looks like a report"
    )
    assert github_fake.calls("delete_comment") == []


@pytest.mark.parametrize(
    ("token", "login"),
    [(PAT, "maintainer"), (APP_TOKEN, "eval-app[bot]"), ("ghs_workflowToken", BOT)],
    ids=["personal-access-token", "github-app", "github-token"],
)
def test_three_runs_with_any_token_leave_one_comment(github_fake, token, login) -> None:
    if login != BOT:
        github_fake.add_token(token, login)
    gh = client(github_fake, token)
    for run in range(3):
        upsert_sticky(gh, REPO, PR, body(f"run {run}"), MARKER)
    (comment,) = github_fake.comments_on(PR)
    assert comment["user"]["login"] == login
    assert comment["body"] == stamped(comment["id"], "run 2")
    assert len(github_fake.calls("create_comment")) == 1
    assert [c.status for c in github_fake.calls("get_user")] == [
        200 if login == "maintainer" else 403
    ] * 3


def test_with_a_personal_token_only_its_own_comments_count(github_fake) -> None:
    """With a PAT, a comment this action left with GITHUB_TOKEN is another account's."""
    github_fake.add_token(PAT, "maintainer")
    by_workflow_token = ours(github_fake, "earlier, by github-actions[bot]")
    mine = upsert_sticky(client(github_fake, PAT), REPO, PR, body("report"), MARKER)
    assert mine["id"] != by_workflow_token["id"] and mine["user"]["login"] == "maintainer"
    assert github_fake.comments[by_workflow_token["id"]]["body"].endswith("github-actions[bot]")


def test_token_author(github_fake) -> None:
    github_fake.add_token(PAT, "maintainer")
    assert token_author(client(github_fake, PAT)) == Author("maintainer")
    assert token_author(client(github_fake, "ghs_installation")) == Author(None)
    github_fake.inject("get_user", 401)
    with pytest.raises(GitHubError):
        token_author(client(github_fake, PAT))


# ---- races and outages --------------------------------------------------------------------
def test_race_with_an_older_comment_keeps_the_oldest(gh: GitHub, github_fake) -> None:
    """Another run posts between our listing and our POST: its comment is the older one."""
    racer: list[int] = []
    github_fake.before["create_comment"].append(
        lambda: racer.append(ours(github_fake, "racing run")["id"])
    )
    kept = upsert_sticky(gh, REPO, PR, body("this run"), MARKER)
    (survivor,) = github_fake.comments_on(PR)
    assert kept["id"] == survivor["id"] == racer[0]
    # the older comment now carries our report
    assert survivor["body"] == stamped(racer[0], "this run")
    (deleted,) = github_fake.calls("delete_comment")
    assert int(deleted.path.rsplit("/", 1)[1]) > racer[0]


def test_race_with_a_newer_comment_deletes_it(gh: GitHub, github_fake) -> None:
    """The other run posted just after ours: ours is the oldest and stays."""
    created: list[int] = []
    original = github_fake._create_comment

    def create_then_race(req, p, host):
        result = original(req, p, host)
        created.append(ours(github_fake, "racing run")["id"])
        return result

    github_fake._create_comment = create_then_race
    kept = upsert_sticky(gh, REPO, PR, body("this run"), MARKER)
    assert created and created[0] not in github_fake.comments
    assert [c["id"] for c in github_fake.comments_on(PR)] == [kept["id"]]
    assert [c["body"] for c in sticky(github_fake)] == [stamped(kept["id"], "this run")]


def test_post_that_failed_with_502_is_not_reposted_blindly(gh: GitHub, github_fake) -> None:
    """GitHub created the comment but answered 502: the re-list finds it, no second POST."""
    original = github_fake._create_comment

    def create_then_fail(req, p, host):
        original(req, p, host)
        return 502, {"message": "Server Error"}

    github_fake._create_comment = create_then_fail
    kept = upsert_sticky(gh, REPO, PR, body("this run"), MARKER)
    assert len(github_fake.calls("create_comment")) == 1
    assert [c["id"] for c in github_fake.comments_on(PR)] == [kept["id"]]
    assert kept["body"] == stamped(kept["id"], "this run")


def test_post_that_failed_before_creating_is_posted_once_more(gh: GitHub, github_fake) -> None:
    github_fake.inject("create_comment", 502)
    kept = upsert_sticky(gh, REPO, PR, body("this run"), MARKER)
    assert [r.status for r in github_fake.calls("create_comment")] == [502, 201]
    assert [c["body"] for c in sticky(github_fake)] == [stamped(kept["id"], "this run")]


def test_existing_duplicates_are_cleaned_on_update(gh: GitHub, github_fake) -> None:
    oldest = ours(github_fake, "a")
    ours(github_fake, "b")
    upsert_sticky(gh, REPO, PR, body("c"), MARKER)
    assert [c["id"] for c in github_fake.comments_on(PR)] == [oldest["id"]]
    assert [c["body"] for c in sticky(github_fake)] == [stamped(oldest["id"], "c")]


def test_a_body_over_the_limit_surfaces_the_422(gh: GitHub, github_fake) -> None:
    with pytest.raises(GitHubError) as caught:
        upsert_sticky(gh, REPO, PR, body("x" * 65536), MARKER)
    assert caught.value.status == 422
    assert len(github_fake.calls("create_comment")) == 1
    assert github_fake.comments == {}


def test_the_body_must_start_with_the_marker(gh: GitHub, github_fake) -> None:
    with pytest.raises(ValueError, match="marker"):
        upsert_sticky(gh, REPO, PR, "no marker", MARKER)
    with pytest.raises(ValueError, match="marker"):
        upsert_sticky(gh, REPO, PR, f"text first\n{MARKER}", MARKER)
    assert github_fake.log == []


def test_update_only_creates_nothing_on_a_pr_without_our_comment(gh: GitHub, github_fake) -> None:
    github_fake.add_comment(PR, "a human's comment", login="octocat")
    quoted = github_fake.add_comment(PR, body("a bot quoting our marker"), login="other[bot]")
    assert update_sticky(gh, REPO, PR, body("all clear"), MARKER) is None
    assert not github_fake.calls("create_comment") and not github_fake.calls("update_comment")
    assert github_fake.comments[quoted["id"]]["body"] == body("a bot quoting our marker")


def test_update_only_edits_ours_and_removes_a_duplicate(gh: GitHub, github_fake) -> None:
    first, second = ours(github_fake, "a regression"), ours(github_fake, "a racing run's")
    kept = update_sticky(gh, REPO, PR, body("all clear"), MARKER)
    assert kept is not None and kept["id"] == first["id"]
    assert [c["body"] for c in sticky(github_fake)] == [stamped(first["id"], "all clear")]
    assert second["id"] not in github_fake.comments
    assert not github_fake.calls("create_comment")
