"""The library's build backend: setuptools, refusing a wheel that lacks the connector jar.

The wheel is only useful with the jar inside (``delta_replay/jars``, copied there by
``./dev build``), so ``build_wheel`` stops with a message instead of shipping a package
whose ``configure()`` cannot find it. Editable installs (``pip install -e``, which
``./dev bootstrap`` runs before the first build) and sdists are not checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - every other hook is setuptools' own

_JARS = Path(__file__).resolve().parent / "delta_replay" / "jars"


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    from delta_replay.versions import CONNECTOR_ARTIFACT, CONNECTOR_VERSION

    jar = _JARS / f"{CONNECTOR_ARTIFACT}-{CONNECTOR_VERSION}.jar"
    if not jar.is_file():
        found = sorted(p.name for p in _JARS.glob("*.jar")) or "none"
        raise SystemExit(
            f"delta-replay: refusing to build a wheel without the connector jar {jar.name} "
            f"in {_JARS} (found: {found}): run ./dev build first"
        )
    return str(_setuptools.build_wheel(wheel_directory, config_settings, metadata_directory))
