"""The library's build backend: setuptools, refusing a wheel that lacks the connector jar.

The wheel is only useful with the jars inside (``delta_replay/jars``, one per Spark line,
copied there by ``./dev build``), so ``build_wheel`` stops with a message instead of shipping
a package whose ``configure()`` cannot find the jar of a supported pyspark. Editable installs
(``pip install -e``, which ``./dev bootstrap`` runs before the first build) and sdists are not
checked.
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
    from delta_replay.versions import CONNECTOR_VERSION, SPARK_LINES, connector_artifact

    # one jar per Spark line the package supports: configure() takes the running pyspark's
    wanted = [f"{connector_artifact(line)}-{CONNECTOR_VERSION}.jar" for line in SPARK_LINES]
    missing = [name for name in wanted if not (_JARS / name).is_file()]
    if missing:
        found = sorted(p.name for p in _JARS.glob("*.jar")) or "none"
        raise SystemExit(
            f"delta-replay: refusing to build a wheel without the connector jar "
            f"{', '.join(missing)} in {_JARS} (found: {found}): run ./dev build first "
            f"(it builds one jar per Spark line: {', '.join(SPARK_LINES)})"
        )
    # setuptools copies the package into build/lib and leaves there what an earlier build put in:
    # a jar since removed from delta_replay/jars (another version, another line) would ship too
    stale = _JARS.parents[1] / "build" / "lib" / "delta_replay" / "jars"
    for old in stale.glob("*.jar"):
        old.unlink()
    return str(_setuptools.build_wheel(wheel_directory, config_settings, metadata_directory))
