"""agent-eval-action: gate pull requests on Google ADK agent evaluations."""

__version__ = "0.1.0"
