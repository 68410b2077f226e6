package io.deltareplay

import java.util

import org.apache.spark.SparkThrowable

/**
 * Every error the delta-replay connector raises. Catch it by type, or read Spark's error fields
 * (`getCondition`, `getSqlState`), which PySpark and Spark Connect clients see too:
 *
 * {{{
 *   try spark.read.format("delta-replay").load(path).count()
 *   catch { case e: DeltaReplayException.UnsupportedTable => readWithDeltaSpark(path) }
 * }}}
 *
 * The message says what went wrong, for which table, version or file, and what to do.
 */
sealed abstract class DeltaReplayException(
    message: String,
    cause: Throwable,
    condition: String,
    sqlState: String
) extends RuntimeException(message, cause)
    with SparkThrowable {
  override def getCondition: String = condition
  override def getSqlState: String = sqlState
  override def getMessageParameters: util.Map[String, String] =
    util.Collections.singletonMap("message", message)
}

object DeltaReplayException {

  /**
   * The table needs something this connector does not read (a reader version or feature, a commit
   * coordinator); delta-spark may. A routed `format("delta")` read falls back to delta-spark.
   */
  final class UnsupportedTable(message: String)
      extends DeltaReplayException(message, null, "DELTA_REPLAY_UNSUPPORTED_TABLE", "0A000")

  /** The path holds no Delta table. */
  final class NotADeltaTable(message: String)
      extends DeltaReplayException(message, null, "DELTA_REPLAY_NOT_A_DELTA_TABLE", "42P01")

  /** The version (or timestamp) asked for cannot be read: too new, or its log was cleaned up. */
  final class VersionNotFound(message: String)
      extends DeltaReplayException(message, null, "DELTA_REPLAY_VERSION_NOT_FOUND", "22023")

  /**
   * A log file is missing, truncated or malformed: nothing is answered from part of a log.
   *
   * @param file
   *   the log file at fault, when one is known (else null)
   */
  final class CorruptLog(message: String, cause: Throwable, val file: String)
      extends DeltaReplayException(message, cause, "DELTA_REPLAY_CORRUPT_LOG", "XX001")

  /** A data file the log names is gone (VACUUM), or a planning manifest cannot be used. */
  final class MissingFile(message: String, cause: Throwable)
      extends DeltaReplayException(message, cause, "DELTA_REPLAY_MISSING_FILE", "58030")

  /**
   * The object store refused or could not be reached: denied credentials, a missing bucket, an
   * unreachable endpoint (after the file system's own retries). The message names the path and the
   * settings to fix; nothing was answered from part of the table.
   */
  final class StoreAccess(message: String, cause: Throwable)
      extends DeltaReplayException(message, cause, "DELTA_REPLAY_STORE_ACCESS", "08001")

  /** An option or setting has a value the connector cannot use. */
  final class BadOption(message: String)
      extends DeltaReplayException(message, null, "DELTA_REPLAY_BAD_OPTION", "42616")

  /** A stream cannot go on: a change commit, a schema change, a foreign checkpoint. */
  final class StreamStopped(message: String)
      extends DeltaReplayException(message, null, "DELTA_REPLAY_STREAM_STOPPED", "55000")

  /** The table changed under a DataFrame in a way it cannot be read with its schema. */
  final class SchemaChanged(message: String)
      extends DeltaReplayException(message, null, "DELTA_REPLAY_SCHEMA_CHANGED", "42K09")
}
