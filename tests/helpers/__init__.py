"""Plain helpers the tests import (`from helpers.factory import case`); fixtures stay in
tests/conftest.py, fake servers in tests/fakes/, child-process agents in tests/workers/.

    paths           ROOT, WORKERS, SHARED_FIXTURES; python_command(script, *args)
    factory         Results and CaseResults built by hand: case(), results(), metric()
    action_harness  the Actions runner's side of an action run (event, INPUT_*, outputs)
    adk_agents      real ADK agent packages written to a directory (needs google-adk to run)
"""
