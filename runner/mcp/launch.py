"""The built-in workspace entry and the environment a stdio server gets.

Task loading uses these too; like the rest of the `runner.mcp` face they import no MCP SDK.
Extensions are merged by the task loader (`runner.mcp.extension.overlay`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

from runner.mcp.extension import WORKSPACE, ExtensionConfig

__all__ = ["PASSTHROUGH_ENV", "builtin_workspace_root", "server_env", "workspace_extension"]

PASSTHROUGH_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    # Windows needs these to start almost anything.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "PATHEXT",
    "COMSPEC",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
)
"""Variables a stdio server inherits from the runner's environment (plus every `LC_*`)."""

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


_WORKSPACE_ARGS = ["-m", "runner", "mcp", "workspace", "--root"]


def workspace_extension(root: Path) -> ExtensionConfig:
    """The built-in workspace server, confined to `root`, run by this Python interpreter."""
    return ExtensionConfig(
        name=WORKSPACE,
        type="stdio",
        cmd=sys.executable,
        args=[*_WORKSPACE_ARGS, str(root)],
        required=True,
        timeout=None,
    )


def builtin_workspace_root(config: ExtensionConfig) -> str | None:
    """The root of the built-in workspace when `config` still runs it as shipped, else None.

    Such a server is served in-process (`runner.mcp.local`); one whose command or arguments the
    task or config replaced is started as the stdio server it describes.
    """
    unchanged = (
        config.type == "stdio"
        and config.cmd == sys.executable
        and len(config.args) == len(_WORKSPACE_ARGS) + 1
        and list(config.args[:-1]) == _WORKSPACE_ARGS
    )
    return config.args[-1] if unchanged else None


def server_env(base_env: Mapping[str, str], envs: Mapping[str, str]) -> dict[str, str]:
    """The environment of a stdio server: a few harmless variables of `base_env`, then `envs`.

    Nothing whose name contains KEY, TOKEN, SECRET or PASSWORD is inherited, so the runner's
    provider API keys never reach a server; a server that needs a token gets it through its
    own `envs`, which are passed as given.
    """
    env = {
        name: value
        for name, value in base_env.items()
        if (name in PASSTHROUGH_ENV or name.startswith("LC_")) and not _SECRET_NAME.search(name)
    }
    env.update(envs)
    return env
