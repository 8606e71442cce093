"""The environment an agent process gets: ours, minus the CI credentials.

Agents run code from the pull request, so they must not see the GitHub token or the
Actions runtime tokens. They do keep everything else, including their model keys
(GOOGLE_API_KEY, GEMINI_API_KEY), which they need to work at all.
"""

from __future__ import annotations

from collections.abc import Mapping

# The GitHub token under the names the runner, `gh` and our own action input use.
_CREDENTIAL_NAMES = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "ACTIONS_RUNTIME_TOKEN",
        # the judge's own key (metrics/judge/settings.py): the score stage's, never an agent's
        "AGENT_EVAL_JUDGE_API_KEY",
    }
)
# ACTIONS_ID_TOKEN_REQUEST_URL and _TOKEN together mint OIDC tokens for the workflow.
_CREDENTIAL_PREFIXES = ("ACTIONS_ID_TOKEN_REQUEST_",)


def is_credential(name: str) -> bool:
    """True for a variable an agent must not inherit."""
    upper = name.upper()
    return (
        upper in _CREDENTIAL_NAMES
        or upper.startswith(_CREDENTIAL_PREFIXES)
        # Action inputs such as INPUT_GITHUB-TOKEN and INPUT_JUDGE-API-KEY.
        or (upper.startswith("INPUT_") and ("TOKEN" in upper or "API-KEY" in upper))
    )


def scrubbed_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of `environ` without the credentials listed above."""
    return {name: value for name, value in environ.items() if not is_credential(name)}
