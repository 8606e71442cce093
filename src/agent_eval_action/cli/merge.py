"""`merge`: the Results of shards as one Results (exit 3 when a shard is missing)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT_PASS
from . import args as common


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shards", nargs="+", metavar="SHARD.json")
    parser.add_argument(
        "--out",
        required=True,
        type=common.output_file,
        metavar="FILE",
        help="where to write the merged Results",
    )


def handle(args: argparse.Namespace) -> int:
    from ..compare.loading import load_results
    from ..compare.merge import merge

    merged = merge([(path, load_results(path)) for path in args.shards])
    merged.write(Path(args.out))
    print(f"merged {len(args.shards)} shards, {len(merged.cases)} cases, into {args.out}")
    return EXIT_PASS
