"""`action`: the GitHub Action's entry point (docs/action.md); it reads its inputs and the
runner's GITHUB_* values from the environment, and takes no arguments."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no arguments: the action's inputs arrive as INPUT_* variables


def handle(args: argparse.Namespace) -> int:
    from ..action.main import main

    return main()
