package io.deltareplay.internal.replay

import io.deltareplay.Errors
import io.deltareplay.internal.log.LogSegment

/**
 * What a failed Spark job over a table's log tells the user: the log file that does not read (a
 * corrupt log, naming the file), an error of ours raised in a task as it is, a job that failed for
 * want of resources, was cancelled or could not link a class as Spark raised it, and any other
 * failure after the files read (the connector's own code met something it did not expect) as a
 * failed replay that names the table and says how to read it meanwhile: only a failed read of a log
 * file sends the user to restore the log.
 */
private[deltareplay] object LogJobErrors {

  /** Waits for a job started over the log of `segment` ([[forLog]] for its failure). */
  def await[T](segment: LogSegment, job: org.apache.spark.FutureAction[T]): T =
    forLog(segment)(scala.concurrent.Await.result(job, scala.concurrent.duration.Duration.Inf))

  /**
   * Runs a job over the log of `segment`, turning a failure into an error that names the log; an
   * error of ours raised in a task (it already names what failed) comes through as it is.
   */
  def forLog[T](segment: LogSegment)(job: => T): T =
    try job
    catch {
      case e: org.apache.spark.SparkException =>
        ours(e).foreach(own => throw own)
        if (notTheLog(e)) throw e
        val range = segment.checkpointVersion.fold("commits")(v => s"checkpoint $v and commits")
        val log = s"the log ($range up to ${segment.version})"
        // the file Spark's reader names (FAILED_READ_FILE's path), and the parser's own words
        // rather than the reader's advice about its parse modes
        val file = Errors.causes(e).collectFirst {
          case t: org.apache.spark.SparkThrowable
              if t.getMessageParameters != null && t.getMessageParameters.containsKey("path") =>
            t.getMessageParameters.get("path")
        }
        val parser = Errors.causes(e).collectFirst {
          case j: com.fasterxml.jackson.core.JsonProcessingException => j
        }
        val cause = parser.getOrElse(Option(e.getCause).getOrElse(e))
        if (file.isEmpty && !readFailed(e)) throw Errors.replayFailed(segment.table, log, cause)
        throw Errors.corruptLogFile(segment.table, file.getOrElse(log), cause)
    }

  /**
   * Whether a failed job failed reading a file's bytes: Spark's reader names the file (a
   * `FAILED_READ_FILE` condition, `path` among its parameters), a JSON or Parquet decoder refused
   * them, a column's type is not the one asked for, or an I/O error. Anything else (a
   * `NullPointerException`, a `ClassCastException` in the code that turns rows into entries) came
   * after the bytes read and says nothing about the log's soundness.
   */
  private def readFailed(e: Throwable): Boolean = Errors.causes(e).exists {
    case _: com.fasterxml.jackson.core.JsonProcessingException => true
    case _: java.io.IOException => true
    case _: org.apache.parquet.ParquetRuntimeException => true
    case _: org.apache.spark.sql.execution.datasources.SchemaColumnConvertNotSupportedException =>
      true
    case _ => false
  }

  /**
   * Whether a failed job failed for want of memory, was cancelled, or failed to link a class, not
   * on the log's bytes: such a failure passes through as Spark raised it (calling the log corrupt
   * would send the user to restore a sound table). A `LinkageError` (a class not found, not
   * accessible, or another version of it than the code was built against) comes from the jars on
   * the class path, never from a file read.
   */
  def notTheLog(e: Throwable): Boolean = Errors.causes(e).exists {
    case _: OutOfMemoryError => true // Spark's SparkOutOfMemoryError too
    case _: LinkageError => true
    case _: org.apache.spark.TaskKilledException => true
    case t: org.apache.spark.SparkThrowable =>
      Option(t.getSqlState).exists(_.startsWith("53")) || // insufficient resources
      Option(t.getCondition).exists(ResourceConditions.contains)
    case _ => false
  }

  /** Conditions of a job that failed for resources, or was cancelled, and carry no SQL state. */
  private val ResourceConditions = Set(
    "SPARK_JOB_CANCELLED",
    "_LEGACY_ERROR_TEMP_2105" // Could not allocate memory to grow BytesToBytesMap.
  )

  private def ours(e: Throwable): Option[Errors.DeltaReplayException] =
    Errors.causes(e).collectFirst { case d: Errors.DeltaReplayException => d }
}
