"""Seeded hourly temperatures for six locations: the base table, the Kafka stream, the oracle.

Everything the kafka-merge workload writes or checks comes from :func:`generate`:

* ``base``: the historical part, ``hist_hours`` hourly readings per location from
  2019-01-01T00:00 UTC (35,064 hours = 4 years with one leap day by default);
* ``messages``: what the producer sends, in time order: for each further hour
  (``new_hours``, 4,344 = 2023-01-01 .. 2023-06-30 by default) one reading per
  location, with corrections (a new temperature for an hour that was already
  written or sent) interleaved; some corrections are corrected again at once,
  so "latest wins" is exercised inside one micro-batch too;
* ``expected``: the table every correct consumer must end with (base plus the
  messages applied in send order), computed here in plain Python: the oracle.

Latitude and longitude are exact decimals (DECIMAL(9,6) in the tables): the merge
key must not depend on how a float prints. Temperatures are rounded to 0.1 °C.

A schema change part-way (``evolve_at``): the base rows and every message carry a
struct ``station`` (name, UTC offset), and from the ``evolve_at``-th streamed hour on
the producer sends two more fields: ``relative_humidity_2m`` (a new top-level column)
and ``station.country`` (a new field inside the struct). Without ``evolve_at`` the
messages and tables are exactly those of the plain workload.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
import pyarrow as pa

START = dt.datetime(2019, 1, 1, tzinfo=dt.timezone.utc)
HOUR = dt.timedelta(hours=1)
TIME_FORMAT = "%Y-%m-%dT%H:%M"


@dataclass(frozen=True)
class Location:
    """A place with a plausible climate: yearly mean, seasonal and daily swing."""

    name: str
    latitude: Decimal
    longitude: Decimal
    mean_c: float
    seasonal_amplitude_c: float
    daily_amplitude_c: float
    warmest_day: int  # day of year of the seasonal maximum
    utc_offset_h: float  # for the daily cycle (warmest around 15:00 local)

    @property
    def key(self) -> bytes:
        """Kafka message key: one location always lands in the same partition."""
        return f"{self.latitude},{self.longitude}".encode()


# A schema change part-way (DataSpec.evolve_at): the struct every message carries, the field
# added to it and the top-level column added.
STRUCT_COLUMN = "station"
ADDED_FIELD = "country"
ADDED_COLUMN = "relative_humidity_2m"
COUNTRIES = {
    "Anchorage": "US",
    "London": "GB",
    "Rome": "IT",
    "Bangalore": "IN",
    "Austin": "US",
    "Paris": "FR",
}

LOCATIONS: tuple[Location, ...] = (
    Location("Anchorage", Decimal("61.200000"), Decimal("-149.900000"), 2.5, 11.5, 3.0, 200, -9),
    Location("London", Decimal("51.500000"), Decimal("-0.100000"), 11.5, 6.5, 4.0, 200, 0),
    Location("Rome", Decimal("41.900000"), Decimal("12.500000"), 16.0, 8.5, 5.0, 205, 1),
    Location("Bangalore", Decimal("13.000000"), Decimal("77.600000"), 24.0, 2.5, 5.5, 105, 5.5),
    Location("Austin", Decimal("30.200000"), Decimal("-95.500000"), 21.0, 9.0, 6.0, 205, -6),
    Location("Paris", Decimal("48.900000"), Decimal("2.300000"), 12.5, 7.5, 4.5, 200, 1),
)

ARROW_SCHEMA = pa.schema(
    [
        ("latitude", pa.decimal128(9, 6)),
        ("longitude", pa.decimal128(9, 6)),
        ("time", pa.timestamp("us", tz="UTC")),
        ("temperature_2m", pa.float64()),
    ]
)


@dataclass(frozen=True)
class DataSpec:
    """What to generate. The defaults are the issue's full data set."""

    hist_hours: int = 35_064
    new_hours: int = 4_344
    seed: int = 7
    correction_share: float = 0.08  # chance per (location, new hour) of a correction
    correction_window_h: int = 720  # corrections target one of the last 30 days
    recorrect_share: float = 0.25  # chance that a correction is corrected again at once
    evolve_at: int | None = None  # streamed hour from which messages carry the added fields

    def __post_init__(self) -> None:
        if self.hist_hours < 1 or self.new_hours < 0:
            raise ValueError(
                f"hist_hours must be >= 1 and new_hours >= 0, got {self.hist_hours}, "
                f"{self.new_hours}"
            )
        for name in ("correction_share", "recorrect_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {value}")
        if self.correction_window_h < 1:
            raise ValueError(f"correction_window_h must be >= 1, got {self.correction_window_h}")
        if self.evolve_at is not None and not 0 <= self.evolve_at <= self.new_hours:
            raise ValueError(
                f"evolve_at must lie in [0, new_hours={self.new_hours}], got {self.evolve_at}"
            )


@dataclass
class Dataset:
    spec: DataSpec
    base: pa.Table
    messages: list[tuple[bytes, bytes]]  # (key, JSON value) in send order
    expected: pa.Table
    readings: int  # new-hour messages
    corrections: int  # correction messages
    corrected_keys: set[tuple[int, int]] = field(default_factory=set)  # (location, hour)

    def per_location(self, table: pa.Table) -> dict[str, int]:
        """Row count per location name in ``table`` (base or expected)."""
        lats = table.column("latitude").to_pylist()
        lons = table.column("longitude").to_pylist()
        counts = {loc.name: 0 for loc in LOCATIONS}
        names = {(loc.latitude, loc.longitude): loc.name for loc in LOCATIONS}
        for lat, lon in zip(lats, lons, strict=True):
            counts[names[(lat, lon)]] += 1
        return counts


def hour_text(hour: int) -> str:
    return (START + hour * HOUR).strftime(TIME_FORMAT)


def _series(loc: Location, index: int, hours: int, seed: int) -> np.ndarray:
    """Hourly temperatures of one location: season + day + AR(1) weather, 0.1 °C steps."""
    rng = np.random.default_rng([seed, index])
    t = np.arange(hours, dtype=np.float64)
    day_of_year = (t / 24.0) % 365.2425
    seasonal = loc.seasonal_amplitude_c * np.cos(
        2 * math.pi * (day_of_year - loc.warmest_day) / 365.2425
    )
    local_hour = (t + loc.utc_offset_h) % 24.0
    daily = loc.daily_amplitude_c * np.cos(2 * math.pi * (local_hour - 15.0) / 24.0)
    shocks = rng.normal(0.0, 0.45, hours)
    weather = np.empty(hours)
    level = 0.0
    for i in range(hours):  # AR(1): fronts that last a few days
        level = 0.985 * level + shocks[i]
        weather[i] = level
    return np.round(loc.mean_c + seasonal + daily + weather, 1)


def message_value(
    loc: Location, hour: int, temperature: float, *, station: bool = False, evolved: bool = False
) -> bytes:
    """The JSON a producer sends: exact decimal coordinates, ISO hour, 0.1 °C.

    ``station`` adds the struct of a run with a schema change, ``evolved`` the fields
    sent from the change on (a top-level humidity and the station's country).
    """
    text = (
        f'{{"latitude": {loc.latitude}, "longitude": {loc.longitude}, '
        f'"time": "{hour_text(hour)}", "temperature_2m": {temperature:.1f}'
    )
    if station or evolved:
        country = f', "{ADDED_FIELD}": "{COUNTRIES[loc.name]}"' if evolved else ""
        text += (
            f', "{STRUCT_COLUMN}": {{"name": "{loc.name}", '
            f'"utc_offset_h": {loc.utc_offset_h:.1f}{country}}}'
        )
    if evolved:
        text += f', "{ADDED_COLUMN}": {humidity(loc, hour):.0f}'
    return (text + "}").encode()


def humidity(loc: Location, hour: int) -> float:
    """Relative humidity (%) of a location and hour: highest before dawn, lowest mid-afternoon."""
    local_hour = (hour + loc.utc_offset_h) % 24.0
    return float(round(62 + 25 * math.cos(2 * math.pi * (local_hour - 5.0) / 24.0)))


def _stations() -> pa.DataType:
    return pa.struct([("name", pa.string()), ("utc_offset_h", pa.float64())])


def _table(values: dict[tuple[int, int], float]) -> pa.Table:
    keys = sorted(values)
    return pa.table(
        {
            "latitude": pa.array([LOCATIONS[i].latitude for i, _ in keys], pa.decimal128(9, 6)),
            "longitude": pa.array([LOCATIONS[i].longitude for i, _ in keys], pa.decimal128(9, 6)),
            "time": pa.array([START + h * HOUR for _, h in keys], pa.timestamp("us", tz="UTC")),
            "temperature_2m": pa.array([values[k] for k in keys], pa.float64()),
        },
        schema=ARROW_SCHEMA,
    )


def generate(spec: DataSpec | None = None) -> Dataset:
    """Generate base table, message stream and expected final table (deterministic per seed)."""
    spec = spec or DataSpec()
    total = spec.hist_hours + spec.new_hours
    series = [_series(loc, i, total, spec.seed) for i, loc in enumerate(LOCATIONS)]
    current: dict[tuple[int, int], float] = {}
    for i in range(len(LOCATIONS)):
        for h in range(spec.hist_hours):
            current[(i, h)] = float(series[i][h])
    base = _table(current)
    station = spec.evolve_at is not None
    evolve_hour = spec.hist_hours + spec.evolve_at if spec.evolve_at is not None else None
    if station:  # the struct column the evolving run's table has from the start
        names = {loc.latitude: loc for loc in LOCATIONS}
        rows = [names[lat] for lat in base.column("latitude").to_pylist()]
        structs = [{"name": loc.name, "utc_offset_h": loc.utc_offset_h} for loc in rows]
        base = base.append_column(STRUCT_COLUMN, pa.array(structs, _stations()))

    rng = np.random.default_rng([spec.seed, 1_000])
    messages: list[tuple[bytes, bytes]] = []
    corrected: set[tuple[int, int]] = set()
    readings = corrections = 0
    for h in range(spec.hist_hours, total):
        evolved = evolve_hour is not None and h >= evolve_hour  # the producer's new version
        for i, loc in enumerate(LOCATIONS):
            value = float(series[i][h])
            current[(i, h)] = value
            messages.append(
                (loc.key, message_value(loc, h, value, station=station, evolved=evolved))
            )
            readings += 1
        for i, loc in enumerate(LOCATIONS):
            if rng.random() >= spec.correction_share:
                continue
            target = int(rng.integers(max(0, h - spec.correction_window_h), h + 1))
            repeats = 2 if rng.random() < spec.recorrect_share else 1
            for _ in range(repeats):
                delta = float(rng.choice([-1, 1])) * round(float(rng.uniform(0.2, 3.0)), 1)
                value = round(current[(i, target)] + delta, 1)
                current[(i, target)] = value
                text = message_value(loc, target, value, station=station, evolved=evolved)
                messages.append((loc.key, text))
                corrections += 1
            corrected.add((i, target))
    return Dataset(
        spec=spec,
        base=base,
        messages=messages,
        expected=_table(current),
        readings=readings,
        corrections=corrections,
        corrected_keys=corrected,
    )


def corrected_table(data: Dataset) -> pa.Table:
    """The expected rows of every corrected key (what "latest value wins" is checked on)."""
    keys = pa.table(
        {
            "latitude": pa.array(
                [LOCATIONS[i].latitude for i, _ in sorted(data.corrected_keys)],
                pa.decimal128(9, 6),
            ),
            "longitude": pa.array(
                [LOCATIONS[i].longitude for i, _ in sorted(data.corrected_keys)],
                pa.decimal128(9, 6),
            ),
            "time": pa.array(
                [START + h * HOUR for _, h in sorted(data.corrected_keys)],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )
    return data.expected.join(keys, ["latitude", "longitude", "time"], join_type="inner")


__all__ = [
    "ADDED_COLUMN",
    "ADDED_FIELD",
    "ARROW_SCHEMA",
    "COUNTRIES",
    "LOCATIONS",
    "STRUCT_COLUMN",
    "DataSpec",
    "Dataset",
    "Location",
    "corrected_table",
    "generate",
    "hour_text",
    "humidity",
    "message_value",
]
