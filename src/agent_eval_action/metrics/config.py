"""test_config.json: which metrics run, with which thresholds and options.

Accepts what ADK accepts (a number or an object per criterion, camelCase too,
match_type as a name or an int, `custom_metrics`) and rejects, with the file and
line, what ADK would silently misread: unknown metrics, thresholds outside
[0, 1], bad match types. Each criterion is read into its metric's criterion type
(metrics/criteria.py); a key that type does not declare is a warning (ADK ignores it).
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_snake
from pydantic.fields import FieldInfo

from ..core import AXES, Axis
from ..errors import InputError
from ..files import jsonpos, read_text
from . import catalog
from .criteria import Criterion, CustomCriterion
from .custom import custom_metric
from .registry import Metric
from .simulation.config import SimulatorConfig
from .trajectory import MatchType

DEFAULT_CRITERIA: dict[str, float] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
DEFAULTS_SOURCE = "ADK defaults"
_TOP_LEVEL_KEYS = {"criteria", "custom_metrics", "user_simulator_config", "live_model_config"}


class CustomMetricSpec(BaseModel):
    function: str  # module.function
    axis: Axis = "response"
    description: str = ""


class EvalConfig(BaseModel):
    criteria: dict[str, Criterion]
    custom_metrics: dict[str, CustomMetricSpec] = Field(default_factory=dict)
    source: str = DEFAULTS_SOURCE  # the config file, or "ADK defaults"
    # user_simulator_config, for scenario cases (None: ADK's defaults)
    simulator: SimulatorConfig | None = None
    lines: dict[str, int] = Field(default_factory=dict, exclude=True)  # criterion -> line

    def metrics(self, *, import_custom: bool = True) -> dict[str, Metric]:
        """Resolve each criterion to its metric; custom metric functions are imported only
        where they run (`import_custom`: the agent stage)."""
        resolved: dict[str, Metric] = {}
        for name in self.criteria:
            spec = self.custom_metrics.get(name)
            if spec is None:
                metric = catalog.find(name)
                assert metric is not None, name  # checked when the config was parsed
            else:
                try:
                    metric = custom_metric(name, spec.function, spec.axis, load=import_custom)
                except ImportError as err:
                    raise InputError(
                        f'custom metric "{name}": {err}', self.source, self.lines.get(name)
                    ) from None
            resolved[name] = metric
        return resolved


def default_config() -> EvalConfig:
    criteria = {}
    for name, threshold in DEFAULT_CRITERIA.items():
        metric = catalog.find(name)
        assert metric is not None, name
        criteria[name] = metric.criterion(threshold=threshold)
    return EvalConfig(criteria=criteria)


def load_config(path: Path, display: str, warnings: list[str]) -> EvalConfig:
    located = jsonpos.parse(read_text(path, display), display)
    return _Parser(located, display, warnings).config()


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f' (did you mean "{close[0]}"?)' if close else ""


class _Parser(jsonpos.FileReader):
    """Reads one test_config.json."""

    def snake_keys(self, obj: dict[str, Any], path: jsonpos.Path) -> dict[str, tuple[str, Any]]:
        """snake_case key -> (key as written, value); a key in both spellings is refused."""
        fields: dict[str, tuple[str, Any]] = {}
        for key, value in obj.items():
            snake = to_snake(key)
            if snake in fields:
                raise self.error(
                    f'"{fields[snake][0]}" and "{key}" are the same key (snake_case and '
                    "camelCase); keep one",
                    (*path, key),
                )
            fields[snake] = (key, value)
        return fields

    def config(self) -> EvalConfig:
        data = self.located.data
        if not isinstance(data, dict):
            raise self.error('a test config must be a JSON object with "criteria"')
        top = self.snake_keys(data, ())
        for snake, (key, _) in top.items():
            if snake not in _TOP_LEVEL_KEYS:
                self.warn(
                    f'unknown key "{key}" is ignored{_suggest(snake, sorted(_TOP_LEVEL_KEYS))}',
                    (key,),
                )
        custom = self.custom_metrics(*top.get("custom_metrics", ("custom_metrics", None)))
        criteria_key, criteria = top.get("criteria", ("criteria", None))
        if not isinstance(criteria, dict) or not criteria:
            raise self.error('no "criteria": nothing would be evaluated', (criteria_key,))
        parsed = {
            name: self.criterion(name, value, (criteria_key, name), name in custom)
            for name, value in criteria.items()
        }
        for name in custom:
            if name not in parsed:
                self.warn(f'custom metric "{name}" is not named in "criteria", so it does not run')
        return EvalConfig(
            criteria=parsed,
            custom_metrics=custom,
            simulator=self.simulator(*top.get("user_simulator_config", ("", None))),
            source=self.file,
            lines={name: self.located.line((criteria_key, name)) for name in parsed},
        )

    def simulator(self, key: str, value: Any) -> SimulatorConfig | None:
        """ADK's LlmBackedUserSimulatorConfig (a missing "type" is "llm_backed", as in ADK)."""
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.error('"user_simulator_config" must be an object', (key,))
        kind = value.get("type")
        if kind not in (None, "llm_backed"):
            raise self.error(
                f'user_simulator_config: type "{kind}" is not supported (only "llm_backed")',
                (key, "type"),
            )
        fields = self.snake_keys(value, (key,))
        for snake, (name, _) in fields.items():
            if snake not in SimulatorConfig.model_fields:
                self.warn(
                    f'user_simulator_config has no option "{name}"; ADK ignores it silently'
                    f"{_suggest(snake, sorted(SimulatorConfig.model_fields))}",
                    (key, name),
                )
        known = {
            snake: v for snake, (_, v) in fields.items() if snake in SimulatorConfig.model_fields
        }
        try:
            return SimulatorConfig.model_validate({k: v for k, v in known.items() if k != "type"})
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            message = str(first["msg"]).removeprefix("Value error, ")
            written = fields[str(first["loc"][0])][0] if first["loc"] else None
            path = (key, written) if written else (key,)
            raise self.error(f"user_simulator_config: {where}: {message}", path) from None

    def custom_metrics(self, key: str, value: Any) -> dict[str, CustomMetricSpec]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error('"custom_metrics" must be an object of metric name -> config', (key,))
        specs = {}
        for name, entry in value.items():
            path = (key, name)
            fields = self.snake_keys(entry, path) if isinstance(entry, dict) else {}
            code_key, code = fields.get("code_config", ("code_config", None))
            function = code.get("name") if isinstance(code, dict) else None
            if not isinstance(function, str) or "." not in function:
                raise self.error(
                    f'custom metric "{name}" needs "code_config": {{"name": "module.function"}}',
                    (*path, code_key),
                )
            if catalog.find(name) or catalog.not_scored(name):
                raise self.error(
                    f'custom metric "{name}" has the name of one of ADK\'s metrics', path
                )
            axis = fields.get("axis", ("axis", "response"))[1]
            if axis not in AXES:
                raise self.error(
                    f'custom metric "{name}": "axis" must be one of {", ".join(AXES)}', path
                )
            description = fields.get("description", ("", ""))[1]
            specs[name] = CustomMetricSpec(
                function=function, axis=axis, description=str(description or "")
            )
        return specs

    def criterion(self, name: str, value: Any, path: jsonpos.Path, is_custom: bool) -> Criterion:
        metric = catalog.find(name)
        if metric is None and not is_custom:
            unscored = catalog.not_scored(name)
            if unscored is not None:
                raise self.error(unscored.error(), path)
            known = catalog.names() + [e.name for e in catalog.not_scored_entries() if e.reason]
            raise self.error(f'unknown metric "{name}"{_suggest(name, known)}', path)
        kind = metric.criterion if metric is not None else CustomCriterion
        if isinstance(value, bool) or not isinstance(value, int | float | dict):
            raise self.error(f'criterion "{name}" must be a threshold number or an object', path)
        fields = (
            self.snake_keys(value, path)
            if isinstance(value, dict)
            else {"threshold": ("threshold", value)}
        )
        if not kind.free_form:
            allowed = sorted(kind.model_fields)
            for snake, (key, _) in fields.items():
                if snake not in kind.model_fields:
                    self.warn(
                        f'"{name}" has no option "{key}"; ADK ignores it silently{_suggest(snake, allowed)}',
                        (*path, key),
                    )
        return kind.model_validate(self._values(name, fields, path))

    def _values(
        self, name: str, fields: dict[str, tuple[str, Any]], path: jsonpos.Path
    ) -> dict[str, Any]:
        """The criterion's values, each option checked as the criterion type that declares it
        checks it (whichever metric it is given to: one it does not suit keeps it, warned)."""

        def at(snake: str) -> jsonpos.Path:
            # a bare number or a missing key has no sub-path: the criterion's own line
            return (*path, fields[snake][0]) if snake in fields else path

        values = {snake: value for snake, (_, value) in fields.items()}
        threshold = values.get("threshold")
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise self.error(f'criterion "{name}" needs a numeric "threshold"', at("threshold"))
        metric = catalog.find(name)
        low, high = metric.score_range if metric is not None else (0.0, 1.0)
        if not low <= threshold <= high:
            raise self.error(
                f'criterion "{name}": threshold {threshold} is outside [{low:g}, {high:g}]',
                at("threshold"),
            )
        values["threshold"] = float(threshold)
        for key, info in _options().items():
            if key not in values:
                continue
            if info.annotation is MatchType:
                try:
                    values[key] = MatchType.parse(values[key])
                except ValueError as err:
                    raise self.error(f'criterion "{name}": {err}', at(key)) from None
            elif info.annotation is bool:
                if not isinstance(values[key], bool):
                    raise self.error(f'criterion "{name}": "{key}" must be true or false', at(key))
            else:
                try:
                    values[key] = _adapter(info.annotation).validate_python(values[key])
                except ValidationError as err:
                    raise self.error(
                        f'criterion "{name}": {_first_error(fields[key][0], err)}', at(key)
                    ) from None
        return values


def _options() -> dict[str, FieldInfo]:
    """Every option of every built-in metric's criterion type but the threshold, in the order
    they are checked: match types, then flags, then the structured options."""
    found: dict[str, FieldInfo] = {}
    for metric in catalog.metrics():
        found.update(metric.criterion.model_fields)
    found.pop("threshold", None)

    def rank(item: tuple[str, FieldInfo]) -> int:
        annotation = item[1].annotation
        return 0 if annotation is MatchType else 1 if annotation is bool else 2

    return dict(sorted(found.items(), key=rank))


@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def _first_error(key: str, err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join([key, *(to_snake(p) if isinstance(p, str) else str(p) for p in first["loc"])])
    if first["type"] == "extra_forbidden":
        return f'{where}: unknown key "{first["loc"][-1]}"'
    return f"{where}: {first['msg']}"
