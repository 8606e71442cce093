"""Reading the files a user hands in: bytes with a size cap, UTF-8 text, and JSON that
remembers the line of every value (jsonpos), with one-line errors naming the file.

This package sits at the bottom of the package (with errors and core) and is where the
package's file I/O lives: eval files, configs, Results, baselines, traces and GitHub event
files are all read through it; the files written whole or not at all (Results, Diffs,
reports, caches), moved into place, or written as they grow (traces, the runner's file
commands) are written through it. Where another user may have a hand in a path (the action,
as root, beside the PR's code), its `safe` module opens and makes files by descriptor, never
through a link. tests/test_file_homes.py fails on a read or write anywhere else that its
short allow-list does not name.
"""

from .reading import (
    BENEATH_ENV,
    MAX_FILE_BYTES,
    Buffer,
    decode,
    read_beneath,
    read_bytes,
    read_lines,
    read_mapped,
    read_text,
    sha256,
    utf8_bytes,
)
from .writing import (
    Behind,
    Sink,
    append_text,
    line_by_line,
    move,
    replacing,
    write_whole,
    written_behind,
)

__all__ = [
    "BENEATH_ENV",
    "MAX_FILE_BYTES",
    "Behind",
    "Buffer",
    "Sink",
    "append_text",
    "decode",
    "line_by_line",
    "move",
    "read_beneath",
    "read_bytes",
    "read_lines",
    "read_mapped",
    "read_text",
    "replacing",
    "sha256",
    "utf8_bytes",
    "write_whole",
    "written_behind",
]
