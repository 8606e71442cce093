"""Installed size of the action's image, measured in a virtualenv (scripts/image_venv.py).

    python bench/bench_image_size.py            # reuses .ci/image-venv when current (seconds)
    python bench/bench_image_size.py --fresh    # a new venv in a temporary directory (a minute)
    python bench/bench_image_size.py --json

The venv is installed as the Dockerfile installs the image (its pip commands: the
hash-locked requirements, then the tool), smoke-tested on both examples, and measured from its
distributions' RECORD files: what `agent-eval-action[adk]` adds to python:3.11-slim, and
the same without google-adk (and what only it pulls in). With --fresh, the install time is
measured too (pip's cache still serves the downloads it holds).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import image_venv  # noqa: E402


def measure(fresh: bool = False, run: bool = True) -> dict:
    if not fresh:
        return image_venv.measure(image_venv.DEFAULT_VENV, run=run)
    with tempfile.TemporaryDirectory() as tmp:
        return image_venv.measure(Path(tmp) / "venv", rebuild=True, run=run)


def rows(figures: dict) -> list[list[str]]:
    """Rows for bench/run_all.py: benchmark, measured, target, met."""
    mb = 1e6
    adk_only = figures["with_adk_bytes"] - figures["without_adk_bytes"]
    return [
        [
            "image: installed agent-eval-action[adk] (site-packages, as the Dockerfile installs it)",
            f"{figures['with_adk_bytes'] / mb:.0f} MB in {figures['with_adk_distributions']} "
            f"distributions; smoke runs ok",
            "",
            "",
        ],
        [
            "  without google-adk / google-adk and what only it needs",
            f"{figures['without_adk_bytes'] / mb:.0f} MB / {adk_only / mb:.0f} MB",
            "",
            "",
        ],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", action="store_true", help="build a new venv in a temp dir")
    parser.add_argument("--no-run", action="store_true", help="skip the smoke runs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = measure(args.fresh, not args.no_run)
    if args.json:
        print(json.dumps(figures))
        return
    how = "reused" if figures["reused"] else "built"
    print(
        f"image venv {figures['venv']} ({how} in {figures['install_s']:.0f} s), "
        f"Python {figures['python']}"
    )
    print(tabulate(image_venv.describe(figures), headers=["what", "installed size"]))


if __name__ == "__main__":
    main()
