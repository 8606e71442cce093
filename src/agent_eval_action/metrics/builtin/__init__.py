"""The built-in metrics, one module each (named after the metric it declares); importing
this package imports every module in it, and so registers every built-in metric.

To add a metric, add a module here that declares it with `registry.register(...)`
(docs/contributing.md, "Adding a metric").
"""

import importlib
import pkgutil

from ..efficiency import EFFICIENCY
from ..registry import NotScored, register

for _module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")

for _metric in EFFICIENCY:  # ADK's efficiency metrics: naming one in criteria says why not
    register(NotScored(name=_metric.name, kind="informational"))
