"""One SparkSession for the whole pytest run (2 cores: share it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from delta_replay._versions import KAFKA_SQL_MAVEN
from delta_replay.session import local_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session("delta-replay-pytest", extra_packages=[KAFKA_SQL_MAVEN])
    yield session
    session.stop()
