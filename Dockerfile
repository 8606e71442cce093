# The GitHub Action's image (action.yml: runs.using docker). Runs as root, as GitHub requires
# of container actions (no USER, no WORKDIR: the runner mounts the workspace and sets -w).
# The base image is pinned by digest (the tag moves with every rebuild upstream) and the pin is
# kept fresh by Dependabot (.github/dependabot.yml, ecosystem docker): python:3.11-slim,
# Python 3.11.16 on Debian trixie, the build of 2026-09-01 (docs/security.md says where the
# digest came from).
FROM python:3.11-slim@sha256:9534e5a8e315485d4061ed659af0fd78a284c015f9b73661b41d6bab25604534

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# git: paired runs on the merge-base's code (input paired) make a worktree of the checkout.
# Pinned to Debian trixie's release; --no-install-recommends leaves out its Perl and ssh.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git=1:2.47.3-0+deb13u1 \
    && rm -rf /var/lib/apt/lists/*

# Only pinned bytes (docs/security.md): every distribution comes from a lock that pins it with
# == and lists the sha256 of its files, and pip's --require-hashes refuses any other bytes.
# constraints.txt chooses the versions; `python scripts/image_lock.py` writes the two locks
# from it.
# Three steps, since pip checks hashes only of what it downloads:
# 1. the build backend (pyproject.toml [build-system]: setuptools, wheel);
# 2. the dependencies of agent-eval-action[adk], without build isolation: rouge-score, their one
#    sdist (pure Python: no compiler is installed), is built by that backend, where an isolated
#    build would install a setuptools of pip's choosing, unhashed;
# 3. the tool itself from /src, which has no hash to check: no dependency (--no-deps), nothing
#    from an index (--no-index), built by the same backend; pip check fails the build if the
#    locks missed a dependency of it.
# scripts/image_venv.py runs these same pip commands, read from here, in CI.
COPY pyproject.toml README.md LICENSE requirements-build.lock requirements.lock /src/
COPY src /src/src
RUN pip install --no-cache-dir --require-hashes -r /src/requirements-build.lock \
    && pip install --no-cache-dir --require-hashes --no-build-isolation --check-build-dependencies -r /src/requirements.lock \
    && pip install --no-cache-dir --no-deps --no-index --no-build-isolation --check-build-dependencies /src \
    && pip check \
    && rm -rf /src

# An isolated interpreter (-I): neither the workspace (the current folder, where a PR may
# commit a folder named like the tool's package) nor PYTHONPATH, PYTHONWARNINGS,
# PYTHONBREAKPOINT or the user site-packages under HOME (earlier steps may write
# /github/home) decide what it imports; -u since it reads no PYTHONUNBUFFERED either.
ENTRYPOINT ["/usr/local/bin/python", "-I", "-u", "-m", "agent_eval_action"]
