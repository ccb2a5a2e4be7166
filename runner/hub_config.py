"""Extension merging, the built-in workspace entry, and the environment a stdio server gets.

Kept apart from `runner.hub` so that task loading and `validate` can merge extensions without
importing the MCP SDK.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runner.errors import ConfigError
from runner.extension import WORKSPACE, ExtensionConfig

__all__ = ["PASSTHROUGH_ENV", "merge_extensions", "server_env", "workspace_extension"]

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


def workspace_extension(root: Path) -> ExtensionConfig:
    """The built-in workspace server, confined to `root`, run by this Python interpreter."""
    return ExtensionConfig(
        name=WORKSPACE,
        type="stdio",
        cmd=sys.executable,
        args=["-m", "runner", "mcp", "workspace", "--root", str(root)],
        required=True,
        timeout=None,
    )


def merge_extensions(
    config: Mapping[str, Mapping[str, Any]],
    task: Mapping[str, ExtensionConfig],
    workdir: Path,
) -> dict[str, ExtensionConfig]:
    """Merge the built-in workspace, the config file's extensions and the task's, later winning.

    The merge is field-wise: a later entry for a known key only replaces the fields it sets
    (`extensions: {workspace: {enabled: false}}` turns the workspace off and keeps the rest).
    `envs` and `headers` are merged key by key as well. A task entry's fields count as set when
    they were written in the task file (pydantic's `model_fields_set`). Disabled entries are
    kept, so callers can tell "off" from "absent"; the hub skips them.
    """
    merged: dict[str, dict[str, Any]] = {
        WORKSPACE: workspace_extension(workdir).model_dump(exclude={"name"})
    }
    for key, raw in config.items():
        merged[key] = _overlay(merged.get(key, {}), dict(raw))
    for key, entry in task.items():
        merged[key] = _overlay(
            merged.get(key, {}), entry.model_dump(include=entry.model_fields_set)
        )
    return {key: _build(key, fields) for key, fields in merged.items()}


def _overlay(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for field, value in over.items():
        if field in {"envs", "headers"} and isinstance(value, Mapping):
            out[field] = {**out.get(field, {}), **value}
        else:
            out[field] = value
    return out


def _build(key: str, fields: Mapping[str, Any]) -> ExtensionConfig:
    data = {**fields, "name": fields.get("name") or key}
    try:
        return ExtensionConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'entry'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(
            f"extensions.{key}: {problems} (after merging the config file and the task)"
        ) from None


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
