package io.deltareplay.internal

/**
 * Every error the connector raises, in one place. Each message says what went wrong, for which
 * table, version or file, and what the user can do about it.
 */
private[deltareplay] object Errors {

  final class DeltaReplayException(message: String, cause: Throwable = null)
      extends RuntimeException(message, cause)

  private def fail(message: String, cause: Throwable = null): DeltaReplayException =
    new DeltaReplayException(s"[delta-replay] $message", cause)

  def notADeltaTable(table: String): DeltaReplayException =
    fail(
      s"$table is not a Delta table: it has no _delta_log directory with commits or " +
        "checkpoints. Check the path, or write the table with delta-spark first."
    )

  def versionDoesNotExist(table: String, version: Long, latest: Long): DeltaReplayException =
    fail(
      s"Cannot read version $version of $table: the newest version is $latest. " +
        s"Use versionAsOf between the earliest readable version and $latest."
    )

  def versionNotReconstructable(
      table: String,
      version: Long,
      earliest: Option[Long]
  ): DeltaReplayException = {
    val hint = earliest match {
      case Some(e) => s"The earliest readable version is $e."
      case None => "No version of this table can be reconstructed."
    }
    fail(
      s"Cannot read version $version of $table: the log files needed to reconstruct it were " +
        s"cleaned up (no checkpoint at or before it and no complete run of commits from " +
        s"version 0). $hint"
    )
  }

  def missingCommit(table: String, missing: Long, from: Long, to: Long): DeltaReplayException =
    fail(
      s"The log of $table has no commit file for version $missing, which is needed to read " +
        s"versions $from..$to (_delta_log/${LogFiles.commitName(missing)} is missing). The log " +
        "is incomplete: restore the file or read an older version."
    )

  def corruptLogFile(table: String, file: String, cause: Throwable): DeltaReplayException =
    fail(
      s"Cannot read $file of $table: ${Option(cause.getMessage).getOrElse(cause.toString)}. " +
        "The file is truncated or corrupt; restore it from a backup or read an older version.",
      cause
    )

  def malformedAction(table: String, file: String, detail: String): DeltaReplayException =
    fail(
      s"Malformed action in $file of $table: $detail. The log was not written by a compliant " +
        "Delta writer; repair or restore the file."
    )

  def noProtocolOrMetadata(table: String, version: Long): DeltaReplayException =
    fail(
      s"The log of $table at version $version has no protocol or no metaData action, so the " +
        "table cannot be read. The log is incomplete or corrupt."
    )

  def unsupportedReaderFeatures(table: String, features: Set[String]): DeltaReplayException =
    fail(
      s"$table needs reader features this connector does not support: " +
        s"${features.toSeq.sorted.mkString(", ")}. Read it with delta-spark instead " +
        "(spark.deltareplay.enabled=false, or option deltareplay.route=false)."
    )

  def unsupportedReaderVersion(table: String, version: Int): DeltaReplayException =
    fail(
      s"$table requires reader version $version, newer than this connector supports (3). " +
        "Read it with delta-spark instead (spark.deltareplay.enabled=false)."
    )

  def bothVersionAndTimestamp(table: String): DeltaReplayException =
    fail(s"Give versionAsOf or timestampAsOf for $table, not both.")

  def badOption(key: String, value: String, expected: String): DeltaReplayException =
    fail(s"Invalid value '$value' for $key: expected $expected.")

  def missingDataFile(table: String, version: Long, file: String): DeltaReplayException =
    fail(
      s"Data file $file of $table (version $version) does not exist. It was probably removed " +
        "by VACUUM; read a newer version, or restore the file."
    )

  def manifestUnreadable(
      table: String,
      version: Long,
      manifest: String,
      cause: Throwable
  ): DeltaReplayException =
    fail(
      s"The planning manifest $manifest of a scan of $table (version $version) cannot be read " +
        s"(${Option(cause).map(_.getMessage).orNull}). Executor-side planning keeps the file list " +
        "in spark.deltareplay.planning.scratchDir while the query's plan lives: keep that " +
        "directory readable by every executor and do not clean it during queries, or plan on " +
        "the driver (spark.deltareplay.planning.mode=driver).",
      cause
    )

  def manifestWriteFailed(where: String, cause: Throwable): DeltaReplayException =
    fail(
      s"Executor-side planning could not write its manifest in $where " +
        s"(${Option(cause).map(_.getMessage).orNull}). Set spark.deltareplay.planning.scratchDir " +
        "to a directory every executor can write and read, or plan on the driver " +
        "(spark.deltareplay.planning.mode=driver).",
      cause
    )

  def badOffset(table: String, json: String, detail: String): DeltaReplayException =
    fail(
      s"The streaming checkpoint's offset for $table cannot be used ($detail): $json. Start the " +
        "query with a new checkpoint location, or read this stream with delta-spark " +
        "(spark.deltareplay.enabled=false)."
    )

  def offsetFromAnotherTable(table: String, tableId: String, other: String): DeltaReplayException =
    fail(
      s"The streaming checkpoint was written for another Delta table (id $other), not $table " +
        s"(id $tableId). Use a new checkpoint location for this query."
    )

  def dataChangeInSource(table: String, version: Long): DeltaReplayException =
    fail(
      s"Version $version of $table removes or rewrites data (DELETE, UPDATE, MERGE or " +
        "overwrite), which a streaming read of appends cannot follow. Set option " +
        "skipChangeCommits=true to skip such commits, ignoreDeletes=true if the commit only " +
        "deletes, or ignoreChanges=true to re-emit rewritten files."
    )

  def schemaChangedInStream(table: String, version: Long): DeltaReplayException =
    fail(
      s"The schema of $table changed at version $version while the stream was reading it. " +
        "Restart the query: it will continue from its checkpoint with the new schema."
    )

  def streamLogGone(table: String, version: Long): DeltaReplayException =
    fail(
      s"The stream needs commit $version of $table, but the log no longer has it (log " +
        "cleanup ran past the stream). Restart from a new checkpoint with startingVersion."
    )

  def noPath(): DeltaReplayException =
    fail("No table path given: use spark.read.format(\"delta-replay\").load(\"/path/to/table\").")
}
