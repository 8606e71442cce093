from agent_eval_action.runners.environment import scrubbed_environment


def test_credentials_are_removed_and_model_keys_kept():
    environ = {
        "GITHUB_TOKEN": "ghs_1",
        "GH_TOKEN": "ghs_2",
        "INPUT_GITHUB-TOKEN": "ghs_3",
        "INPUT_MY_TOKEN_FILE": "x",
        "ACTIONS_RUNTIME_TOKEN": "rt",
        "ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.example",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc",
        "GOOGLE_API_KEY": "g",
        "GEMINI_API_KEY": "m",
        "INPUT_COMMAND": "python agent.py",
        "GITHUB_REPOSITORY": "o/r",
        "PATH": "/usr/bin",
    }

    assert scrubbed_environment(environ) == {
        "GOOGLE_API_KEY": "g",
        "GEMINI_API_KEY": "m",
        "INPUT_COMMAND": "python agent.py",
        "GITHUB_REPOSITORY": "o/r",
        "PATH": "/usr/bin",
    }
    assert environ["GITHUB_TOKEN"] == "ghs_1"  # the input is not modified


def test_names_match_whatever_their_case():
    assert scrubbed_environment({"github_token": "a", "Input_Github-Token": "b", "HOME": "/h"}) == {
        "HOME": "/h"
    }
