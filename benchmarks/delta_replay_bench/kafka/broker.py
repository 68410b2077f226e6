"""Kafka plumbing for the kafka-merge workload: the project's broker, topics, producer, offsets.

The broker is the real single-node KRaft broker that ``scripts/kafka.sh`` starts
from the Maven Central jars; :class:`Broker` drives that script. The rest talks
to any broker through confluent-kafka (librdkafka).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

_REPO_ROOT = Path(__file__).resolve().parents[3]


def broker_script() -> Path:
    """``scripts/kafka.sh`` of the source checkout (or ``$DELTA_REPLAY_KAFKA_SCRIPT``)."""
    env = os.environ.get("DELTA_REPLAY_KAFKA_SCRIPT")
    path = Path(env) if env else _REPO_ROOT / "scripts" / "kafka.sh"
    if not path.is_file():
        raise FileNotFoundError(
            f"Kafka broker script {path} not found: it ships with the delta-replay source "
            "checkout; set DELTA_REPLAY_KAFKA_SCRIPT, or pass --bootstrap HOST:PORT to use a "
            "running broker"
        )
    return path


class Broker:
    """A broker started by ``scripts/kafka.sh`` in ``instance_dir``; stopped by its pid.

    Use as a context manager: ``with Broker(tmp / "kafka") as broker: broker.bootstrap``.
    """

    def __init__(self, instance_dir: str | os.PathLike[str], start_timeout_s: float = 600):
        self.instance_dir = Path(instance_dir).resolve()
        self.start_timeout_s = start_timeout_s
        self.bootstrap: str | None = None
        self.pid: int | None = None

    def _script(self, command: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(broker_script()), command, str(self.instance_dir)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self) -> str:
        done = self._script("start", self.start_timeout_s)
        if done.returncode != 0:
            raise RuntimeError(
                f"scripts/kafka.sh start {self.instance_dir} failed "
                f"(exit {done.returncode}):\n{done.stderr.strip()}"
            )
        fields = dict(part.split("=", 1) for part in done.stdout.split() if "=" in part)
        self.bootstrap = fields["bootstrap"]
        self.pid = int(fields["pid"])
        return self.bootstrap

    def running(self) -> bool:
        return self._script("status", 60).returncode == 0

    def stop(self) -> None:
        done = self._script("stop", 120)
        if done.returncode != 0:
            raise RuntimeError(
                f"scripts/kafka.sh stop {self.instance_dir} failed:\n{done.stderr.strip()}"
            )
        self.bootstrap = None
        self.pid = None

    def __enter__(self) -> Broker:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create ``topic`` (replication 1); an existing topic is an error (no silent reuse)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions)])
    try:
        futures[topic].result(timeout=60)
    except KafkaException as err:
        raise RuntimeError(
            f"could not create topic {topic!r} on {bootstrap}: {err}; pick a new topic name "
            "(--topic) or delete the old topic"
        ) from err


class OffsetProbe:
    """End offsets (next offset to be written) of every partition of a topic."""

    def __init__(self, bootstrap: str, topic: str):
        self.topic = topic
        self._consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "delta-replay-offset-probe"}
        )
        meta = self._consumer.list_topics(topic, timeout=30)
        info = meta.topics.get(topic)
        if info is None or info.error is not None or not info.partitions:
            self._consumer.close()
            raise RuntimeError(f"topic {topic!r} not found on {bootstrap}: create it first")
        self.partitions = sorted(info.partitions)

    def end_offsets(self) -> dict[int, int]:
        ends: dict[int, int] = {}
        for p in self.partitions:
            _, high = self._consumer.get_watermark_offsets(TopicPartition(self.topic, p), 30)
            ends[p] = int(high)
        return ends

    def start_offsets(self) -> dict[int, int]:
        """The earliest offset still in each partition (after retention)."""
        starts: dict[int, int] = {}
        for p in self.partitions:
            low, _ = self._consumer.get_watermark_offsets(TopicPartition(self.topic, p), 30)
            starts[p] = int(low)
        return starts

    def close(self) -> None:
        self._consumer.close()


def produce(
    bootstrap: str,
    topic: str,
    messages: Sequence[tuple[bytes | None, bytes | None]],
    rate: float | None = None,
    log: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    progress_every_s: float = 5.0,
) -> int:
    """Send ``messages`` in order at ``rate`` messages/s (None: as fast as possible).

    Idempotent producer with acks=all: a retried send is neither duplicated nor
    reordered, so per-key order in a partition is the send order. Returns the
    number of messages delivered; raises if any delivery failed.
    """
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
        }
    )
    failures: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    started = last_report = time.monotonic()
    sent = 0
    for key, value in messages:
        if stop is not None and stop.is_set():
            break
        if rate:
            ahead = started + sent / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        while True:
            try:
                producer.produce(topic, value=value, key=key, on_delivery=on_delivery)
                break
            except BufferError:  # local queue full: let deliveries drain
                producer.poll(0.1)
        sent += 1
        producer.poll(0)
        now = time.monotonic()
        if log is not None and now - last_report >= progress_every_s:
            last_report = now
            log(f"sent {sent:,}/{len(messages):,} ({sent / (now - started):,.0f} msg/s)")
    remaining = producer.flush(120)
    if remaining:
        raise RuntimeError(f"{remaining} messages to {topic!r} were still undelivered after 120 s")
    if failures:
        raise RuntimeError(f"{len(failures)} messages to {topic!r} failed: {failures[0]}")
    if log is not None:
        took = time.monotonic() - started
        log(f"done: {sent:,} messages in {took:.1f}s ({sent / max(took, 1e-9):,.0f} msg/s)")
    return sent


__all__ = ["Broker", "OffsetProbe", "broker_script", "create_topic", "produce"]
