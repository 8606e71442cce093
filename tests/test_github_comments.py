"""The sticky PR comment (github/comments.py) against the fake GitHub."""

from __future__ import annotations

import pytest
from fakes.github import REPO

from agent_eval_action.github.client import GitHub, GitHubError
from agent_eval_action.github.comments import find_sticky, upsert_sticky

MARKER = "<!-- agent-eval-action:agent-eval -->"
PR = 7


def body(text: str) -> str:
    return f"{MARKER}\n{text}"


@pytest.fixture
def gh(github_fake) -> GitHub:
    return GitHub("tok", github_fake.url, backoff=0, sleep=lambda s: None)


def sticky_bodies(github_fake) -> list[str]:
    return [c["body"] for c in github_fake.comments_on(PR) if MARKER in c["body"]]


def test_creates_then_updates_on_rerun(gh: GitHub, github_fake) -> None:
    github_fake.add_comment(PR, "a human's comment", login="octocat")
    first = upsert_sticky(gh, REPO, PR, body("run 1"), MARKER)
    second = upsert_sticky(gh, REPO, PR, body("run 2"), MARKER)
    assert second["id"] == first["id"]
    assert second["html_url"].endswith(f"#issuecomment-{first['id']}")
    assert sticky_bodies(github_fake) == [body("run 2")]
    assert len(github_fake.calls("create_comment")) == 1
    assert len(github_fake.calls("update_comment")) == 1


def test_finds_the_sticky_comment_beyond_the_first_page(gh: GitHub, github_fake) -> None:
    for i in range(150):
        github_fake.add_comment(PR, f"chatter {i}", login="octocat")
    sticky = github_fake.add_comment(PR, body("old"))
    upsert_sticky(gh, REPO, PR, body("new"), MARKER)
    assert github_fake.comments[sticky["id"]]["body"] == body("new")
    assert github_fake.calls("create_comment") == []


def test_ignores_the_marker_in_another_authors_comment(gh: GitHub, github_fake) -> None:
    quoted = github_fake.add_comment(PR, body("quoted by a human"), login="octocat")
    mine = upsert_sticky(gh, REPO, PR, body("report"), MARKER)
    assert mine["id"] != quoted["id"]
    assert github_fake.comments[quoted["id"]]["body"] == body("quoted by a human")
    assert find_sticky(gh, REPO, PR, MARKER) == [
        {k: v for k, v in github_fake.comments[mine["id"]].items() if not k.startswith("_")}
    ]


def test_race_with_an_older_comment_keeps_the_oldest(gh: GitHub, github_fake) -> None:
    """Another run posts between our listing and our POST: its comment is the older one."""
    racer: list[int] = []
    github_fake.before["create_comment"].append(
        lambda: racer.append(github_fake.add_comment(PR, body("racing run"))["id"])
    )
    kept = upsert_sticky(gh, REPO, PR, body("this run"), MARKER)
    (survivor,) = github_fake.comments_on(PR)
    assert kept["id"] == survivor["id"] == racer[0]
    assert survivor["body"] == body("this run")  # the older comment now carries our report
    (deleted,) = github_fake.calls("delete_comment")
    assert int(deleted.path.rsplit("/", 1)[1]) > racer[0]


def test_race_with_a_newer_comment_deletes_it(gh: GitHub, github_fake) -> None:
    """The other run posted just after ours: ours is the oldest and stays."""
    created: list[int] = []

    def racer() -> None:
        created.append(github_fake.add_comment(PR, body("racing run"))["id"])

    original = github_fake._create_comment

    def create_then_race(req, p, host):
        result = original(req, p, host)
        racer()
        return result

    github_fake._create_comment = create_then_race
    kept = upsert_sticky(gh, REPO, PR, body("this run"), MARKER)
    assert created and created[0] not in github_fake.comments
    assert [c["id"] for c in github_fake.comments_on(PR)] == [kept["id"]]
    assert sticky_bodies(github_fake) == [body("this run")]


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


def test_post_that_failed_before_creating_is_posted_once_more(gh: GitHub, github_fake) -> None:
    github_fake.inject("create_comment", 502)
    upsert_sticky(gh, REPO, PR, body("this run"), MARKER)
    assert [r.status for r in github_fake.calls("create_comment")] == [502, 201]
    assert sticky_bodies(github_fake) == [body("this run")]


def test_existing_duplicates_are_cleaned_on_update(gh: GitHub, github_fake) -> None:
    oldest = github_fake.add_comment(PR, body("a"))
    github_fake.add_comment(PR, body("b"))
    upsert_sticky(gh, REPO, PR, body("c"), MARKER)
    assert [c["id"] for c in github_fake.comments_on(PR)] == [oldest["id"]]
    assert sticky_bodies(github_fake) == [body("c")]


def test_a_body_over_the_limit_surfaces_the_422(gh: GitHub, github_fake) -> None:
    with pytest.raises(GitHubError) as caught:
        upsert_sticky(gh, REPO, PR, body("x" * 65536), MARKER)
    assert caught.value.status == 422
    assert len(github_fake.calls("create_comment")) == 1
    assert github_fake.comments == {}


def test_the_body_must_carry_the_marker(gh: GitHub, github_fake) -> None:
    with pytest.raises(ValueError, match="marker"):
        upsert_sticky(gh, REPO, PR, "no marker", MARKER)
    assert github_fake.log == []
