"""The judge prompts: template files in prompts/, each with a version on its first line.

A template is `string.Template` text (`$name` placeholders). Its first line is
`prompt-version: N`; bump N whenever the text changes (a test holds each template's
fingerprint to its version), so Results can tell verdicts of different prompts apart.
Verdict reuse does not depend on the version: its key hashes the rendered prompt.
"""

from __future__ import annotations

import functools
import string
from dataclasses import dataclass
from importlib import resources

_HEADER = "prompt-version: "


@dataclass(frozen=True)
class Template:
    name: str
    version: str
    text: str

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def render(self, **values: str) -> str:
        return string.Template(self.text).substitute(values)


@functools.cache
def template(name: str) -> Template:
    raw = resources.files(__package__).joinpath("prompts", f"{name}.txt").read_text("utf-8")
    header, _, body = raw.partition("\n")
    if not header.startswith(_HEADER):
        raise ValueError(f"prompt template {name}.txt must start with '{_HEADER}N'")
    return Template(name, header[len(_HEADER) :].strip(), body.lstrip("\n"))


def properties_text(rubrics: list[tuple[str, str]]) -> str:
    """The rubrics, one per line, each tagged with its id for the judge to echo back."""
    return "\n".join(f"- [id: {rubric_id}] {text}" for rubric_id, text in rubrics)
