"""Which values of a task are secrets (DESIGN 7b); the Redactor masks them.

A task's secrets are: the variables it lists under `secrets:`; the `envs` and `headers` entries of
its MCP servers whose names look secret (`looks_secret`: KEY, TOKEN, SECRET, PASSWORD, AUTH,
CREDENTIAL, COOKIE); every token, client secret and private key of their `auth:`; and any value
a server's config took from `${VAR}` of such a variable or of a listed one. A plain value
(`envs: {MODE: test}`) is not a secret. The provider keys, the config's `secrets:` and the
runner's own secret-named variables come from the settings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from runner.mcp import ExtensionConfig, auth_secret_values
from runner.redact import looks_secret

__all__ = ["declared_secrets", "extension_secrets"]


def declared_secrets(names: Iterable[str], env: Mapping[str, str]) -> dict[str, str]:
    """The values of the variables a task lists under `secrets:`, by label; unset ones give none."""
    return {f"${name} (secrets:)": env[name] for name in names if env.get(name)}


def extension_secrets(
    name: str,
    config: ExtensionConfig,
    pulled: Iterable[tuple[str, str]],
    declared: Iterable[str],
) -> dict[str, str]:
    """Secret values of one server's config by label; `pulled` are the `${VAR}`s it used."""
    listed = set(declared)
    found: dict[str, str] = {}
    for field, entries in (("envs", config.envs), ("headers", config.headers)):
        for key, value in entries.items():
            if value and looks_secret(key):
                found[f"extensions.{name}.{field}.{key}"] = value
    if config.auth is not None:  # every token, secret and key of `auth:`, whatever its source
        for field, value in auth_secret_values(config.auth).items():
            found[f"extensions.{name}.auth.{field}"] = value
    for variable, value in pulled:
        if value and (looks_secret(variable) or variable in listed):
            found[f"${variable} (extensions.{name})"] = value
    return found
