# The GitHub Action's image (action.yml: runs.using docker). Runs as root, as GitHub requires
# of container actions (no USER, no WORKDIR: the runner mounts the workspace and sets -w).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

COPY pyproject.toml README.md constraints.txt /src/
COPY src /src/src
# Every dependency has a wheel for this platform: no compiler is installed, none is left.
RUN pip install --no-cache-dir --constraint /src/constraints.txt "/src[adk]" \
    && rm -rf /src

ENTRYPOINT ["/usr/local/bin/agent-eval-action"]
