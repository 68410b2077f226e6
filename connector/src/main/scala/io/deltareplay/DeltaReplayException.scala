package io.deltareplay

import java.util

import org.apache.spark.{QueryContext, SparkThrowable}
import org.apache.spark.sql.deltareplay.RuntimeErrorBase
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.trees.Origin

/**
 * Every error the delta-replay connector raises. Catch it by type, or read Spark's error fields
 * (`getCondition`, `getSqlState`, `getMessageParameters`), which PySpark and Spark Connect clients
 * see too:
 *
 * {{{
 *   try spark.read.format("delta-replay").load(path).count()
 *   catch { case e: DeltaReplayException.UnsupportedTable => readWithDeltaSpark(path) }
 * }}}
 *
 * Each error is also of the Spark type Spark and delta-spark raise for the same problem, so code
 * that catches Spark's errors catches these too (PySpark maps them to its classes by that type):
 *
 *   - a [[org.apache.spark.sql.AnalysisException]] for what the user asked that cannot be answered
 *     as asked: no Delta table at the path, a version out of range, a bad option, an unsupported
 *     table, a schema changed since the DataFrame was created (delta-spark's
 *     `DELTA_MISSING_DELTA_TABLE`, `VersionNotFoundException`, unsupported table features and
 *     `DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS` are analysis errors too);
 *   - a [[org.apache.spark.SparkRuntimeException]] for what fails while the table is read: a
 *     corrupt log, a missing file, a store that refuses access, a stream that cannot go on (Spark's
 *     own `FAILED_READ_FILE` and delta-spark's log-state errors are runtime errors).
 *
 * The message is one line in Spark's form, `[DELTA_REPLAY_<CONDITION>] <what went wrong, for which
 * table, version or file, and what to do> SQLSTATE: <state>`; its text after the condition is the
 * `message` parameter. The conditions are listed, with their SQLSTATEs, in
 * `delta-replay-error-conditions.json` on the classpath and in docs/troubleshooting.md.
 *
 * It is a trait over two Spark base classes, not itself an `Exception` type, so that a Scala `catch
 * { case e: DeltaReplayException => }` compiles to a catch-all plus a type test (a catch clause on
 * an interface that extends a class would not pass the JVM's verifier); rethrow it with `throw
 * e.exception`.
 */
sealed trait DeltaReplayException extends SparkThrowable { self: Exception =>

  /** What went wrong and what to do, one line, without the condition or SQLSTATE. */
  def detail: String

  /** `[DELTA_REPLAY_<CONDITION>] <detail> SQLSTATE: <state>`. */
  def getMessage: String

  def getCause: Throwable

  /** The error as the `Exception` it is, to rethrow. */
  final def exception: Exception = self

  override def getMessageParameters: util.Map[String, String] =
    util.Collections.singletonMap("message", detail)
  override def isInternalError: Boolean = false
}

object DeltaReplayException {

  /** `text` on one line: line breaks (of a message quoted from a cause) become spaces. */
  private[deltareplay] def oneLine(text: String): String =
    text.trim.replaceAll("\\s*[\\r\\n]+\\s*", " ")

  private def format(condition: String, detail: String, state: String) =
    s"[$condition] $detail SQLSTATE: $state"

  /** An error of what was asked (a table, a version, an option): an `AnalysisException`. */
  sealed abstract class AnalysisError(text: String, condition: String, state: String)
      extends AnalysisException(
        s"[$condition] ${oneLine(text)}",
        None,
        None,
        None,
        Some(condition),
        Map("message" -> oneLine(text)),
        Array.empty[QueryContext]
      )
      with DeltaReplayException {
    override val detail: String = oneLine(text)
    override def getCondition: String = condition
    override def getSqlState: String = state

    /** Spark attaches a SQL position by copying into a plain `AnalysisException`: keep the type. */
    override def withPosition(origin: Origin): AnalysisException = this
    override def getMessage: String = format(condition, detail, state)
  }

  /**
   * An error met while reading the table: a `SparkRuntimeException` (see
   * [[org.apache.spark.sql.deltareplay.RuntimeErrorBase]] for how it is built).
   */
  sealed abstract class RuntimeError(
      text: String,
      cause: Throwable,
      condition: String,
      state: String
  ) extends RuntimeErrorBase(oneLine(text), cause)
      with DeltaReplayException {
    override val detail: String = oneLine(text)
    override def getCondition: String = condition
    override def getSqlState: String = state
    override def getMessage: String = format(condition, detail, state)
  }

  /**
   * The table needs something this connector does not read (a reader version or feature, a commit
   * coordinator); delta-spark may. A routed `format("delta")` read falls back to delta-spark.
   */
  final class UnsupportedTable(message: String)
      extends AnalysisError(message, "DELTA_REPLAY_UNSUPPORTED_TABLE", "0A000")

  /** The path holds no Delta table. */
  final class NotADeltaTable(message: String)
      extends AnalysisError(message, "DELTA_REPLAY_NOT_A_DELTA_TABLE", "42P01")

  /** The version (or timestamp) asked for cannot be read: too new, or its log was cleaned up. */
  final class VersionNotFound(message: String)
      extends AnalysisError(message, "DELTA_REPLAY_VERSION_NOT_FOUND", "22023")

  /** An option or setting has a value the connector cannot use. */
  final class BadOption(message: String)
      extends AnalysisError(message, "DELTA_REPLAY_BAD_OPTION", "42616")

  /** The table changed under a DataFrame in a way it cannot be read with its schema. */
  final class SchemaChanged(message: String)
      extends AnalysisError(message, "DELTA_REPLAY_SCHEMA_CHANGED", "42K09")

  /**
   * A log file is missing, truncated or malformed: nothing is answered from part of a log.
   *
   * @param file
   *   the log file at fault, when one is known (else null)
   */
  final class CorruptLog(message: String, cause: Throwable, val file: String)
      extends RuntimeError(message, cause, "DELTA_REPLAY_CORRUPT_LOG", "XX001")

  /**
   * A Spark job over the table's log failed in a way its files do not explain: every file read, and
   * the failure came after (an action the connector did not expect, or a defect of the connector).
   * The message names the table and the part of the log, and says how to read the table meanwhile.
   */
  final class ReplayFailed(message: String, cause: Throwable)
      extends RuntimeError(message, cause, "DELTA_REPLAY_REPLAY_FAILED", "XX000")

  /** A data file the log names is gone (VACUUM), or a planning manifest cannot be used. */
  final class MissingFile(message: String, cause: Throwable)
      extends RuntimeError(message, cause, "DELTA_REPLAY_MISSING_FILE", "58030")

  /**
   * The object store refused or could not be reached: denied credentials, a missing bucket, an
   * unreachable endpoint (after the file system's own retries). The message names the path and the
   * settings to fix; nothing was answered from part of the table.
   */
  final class StoreAccess(message: String, cause: Throwable)
      extends RuntimeError(message, cause, "DELTA_REPLAY_STORE_ACCESS", "08001")

  /** A stream cannot go on: a change commit, a schema change, a foreign checkpoint. */
  final class StreamStopped(message: String)
      extends RuntimeError(message, null, "DELTA_REPLAY_STREAM_STOPPED", "55000")
}
