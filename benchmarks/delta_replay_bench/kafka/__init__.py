"""``delta-replay demo kafka-merge``: Kafka -> Delta streaming MERGE on a real local broker.

Modules: ``pipeline`` (the command, ``PipelineConfig``), ``data`` (seeded data and the
oracle), ``broker`` (the project's broker, topics, producer), ``consume`` (streaming and
offset-range consumers), ``batch`` (one batch: validate, quarantine, dedupe, MERGE),
``report`` (checks and summary).
"""
