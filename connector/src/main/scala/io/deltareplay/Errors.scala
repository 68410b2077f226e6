package io.deltareplay

import scala.util.matching.Regex

import com.fasterxml.jackson.core.JsonProcessingException
import io.deltareplay.internal.log.{LogFiles, StoreFailure}

/**
 * Every error the connector raises, in one place, each of a public type users can catch
 * ([[io.deltareplay.DeltaReplayException]]). Each message says what went wrong, for which table,
 * version or file, and what the user can do about it.
 */
private[deltareplay] object Errors {

  /** A connector error as the `Exception` it is (the public trait is not a `Throwable` type). */
  type DeltaReplayException = Exception with io.deltareplay.DeltaReplayException
  import io.deltareplay.{DeltaReplayException => E}

  /** The text of a message; the exception puts `[DELTA_REPLAY_<CONDITION>]` in front. */
  private def msg(m: String) = m
  private def unsupported(m: String) = new E.UnsupportedTable(msg(m))
  private def notFound(m: String) = new E.VersionNotFound(msg(m))
  private def corrupt(m: String, cause: Throwable = null, file: String = null) =
    new E.CorruptLog(msg(m), cause, file)
  private def missing(m: String, cause: Throwable = null) = new E.MissingFile(msg(m), cause)
  private def bad(m: String) = new E.BadOption(msg(m))
  private def stopped(m: String) = new E.StreamStopped(msg(m))

  def notADeltaTable(table: String): DeltaReplayException =
    new E.NotADeltaTable(
      msg(
        s"$table is not a Delta table: it has no _delta_log directory with commits or " +
          "checkpoints. Check the path, or write the table with delta-spark first."
      )
    )

  def versionDoesNotExist(table: String, version: Long, latest: Long): DeltaReplayException =
    notFound(
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
    notFound(
      s"Cannot read version $version of $table: the log files needed to reconstruct it were " +
        s"cleaned up (no checkpoint at or before it and no complete run of commits from " +
        s"version 0). $hint"
    )
  }

  def missingCommit(table: String, missing: Long, from: Long, to: Long): DeltaReplayException =
    corrupt(
      s"The log of $table has no commit file for version $missing, which is needed to read " +
        s"versions $from..$to (_delta_log/${LogFiles.commitName(missing)} is missing). The log " +
        "is incomplete: restore the file or read an older version."
    )

  def corruptLogFile(table: String, file: String, cause: Throwable): DeltaReplayException =
    corrupt(
      s"Cannot read $file of $table: ${causeDetail(cause)}. " +
        "The file is truncated or corrupt; restore it from a backup or read an older version.",
      cause,
      file
    )

  def replayFailed(table: String, log: String, cause: Throwable): DeltaReplayException =
    new E.ReplayFailed(
      msg(
        s"Replaying $log of $table failed after its files were read: ${causeDetail(cause)}. " +
          "The files read without error, so this is an action the connector did not expect " +
          "or a defect of delta-replay; please report it with this error's stack trace. To " +
          "read the table meanwhile, read it with delta-spark (format(\"delta\") with " +
          s"${DeltaReplayOptions.SessionPrefix}${DeltaReplayOptions.Enabled}=false)."
      ),
      cause
    )

  def malformedAction(table: String, file: String, cause: Throwable): DeltaReplayException =
    malformedAction(table, file, causeDetail(cause))

  def malformedAction(table: String, file: String, detail: String): DeltaReplayException =
    corrupt(
      s"Malformed action in $file of $table: $detail. The log was not written by a compliant " +
        "Delta writer; repair or restore the file.",
      file = file
    )

  def noProtocolOrMetadata(table: String, version: Long): DeltaReplayException =
    corrupt(
      s"The log of $table at version $version has no protocol or no metaData action, so the " +
        "table cannot be read. The log is incomplete or corrupt."
    )

  def unsupportedReaderFeatures(table: String, features: Set[String]): DeltaReplayException =
    unsupported(
      s"$table needs reader features this connector does not support: " +
        s"${features.toSeq.sorted.mkString(", ")}. Read it with delta-spark instead " +
        "(spark.deltareplay.enabled=false, or option deltareplay.route=false)."
    )

  def unsupportedReaderVersion(table: String, version: Int): DeltaReplayException =
    unsupported(
      s"$table requires reader version $version, newer than this connector supports (3). " +
        "Read it with delta-spark instead (spark.deltareplay.enabled=false)."
    )

  def commitCoordinator(table: String, coordinator: String): DeltaReplayException =
    unsupported(
      s"$table has its commits owned by a commit coordinator ($coordinator): its newest commits " +
        "may not be in _delta_log yet, so this connector does not read it. Read it with " +
        "delta-spark (spark.deltareplay.enabled=false, or option deltareplay.route=false); a " +
        "routed format(\"delta\") read does so by itself."
    )

  def bothVersionAndTimestamp(table: String): DeltaReplayException =
    bad(s"Give versionAsOf or timestampAsOf for $table, not both.")

  def badOption(key: String, value: String, expected: String): DeltaReplayException =
    bad(s"Invalid value '$value' for $key: expected $expected.")

  /**
   * An option a `format("delta-replay")` read does not take: a near miss of one of its settings, or
   * an option of delta-spark's it does not serve.
   */
  def unknownOption(key: String, closest: Option[String]): DeltaReplayException = {
    val lower = key.toLowerCase(java.util.Locale.ROOT)
    val what =
      if (lower == "readchangefeed" || lower == "readchangedata") {
        "reads the change data feed, which this connector does not serve: read it with " +
          "format(\"delta\") (with the session extension such reads go to delta-spark)"
      } else
        closest match {
          case Some(c) => s"is not an option of this connector: did you mean '$c'?"
          case None =>
            "is not an option of this connector: read with format(\"delta\") for delta-spark's " +
              "options (docs/configuration.md lists this connector's)"
        }
    bad(s"Option '$key' $what" + (if (what.endsWith("?")) "" else "."))
  }

  /** A session key given as a read option. */
  def sessionOnlyOption(key: String, sessionKey: String): DeltaReplayException =
    bad(s"'$key' is a session setting, not a read option: set $sessionKey on the session.")

  def badFunctionCall(name: String, what: String): DeltaReplayException =
    bad(s"$name $what. See DESCRIBE FUNCTION EXTENDED $name.")

  def missingDataFile(table: String, version: Long, file: String): DeltaReplayException =
    missing(
      s"Data file $file of $table (version $version) does not exist. It was probably removed " +
        "by VACUUM; read a newer version, or restore the file."
    )

  def manifestUnreadable(
      table: String,
      version: Long,
      manifest: String,
      cause: Throwable
  ): DeltaReplayException =
    missing(
      s"The planning manifest $manifest of a scan of $table (version $version) cannot be read " +
        s"(${causeDetail(cause)}). Executor-side planning keeps the file list " +
        "in spark.deltareplay.planning.scratchDir while the query's plan lives: keep that " +
        "directory readable by every executor and do not clean it during queries, or plan on " +
        "the driver (spark.deltareplay.planning.mode=driver).",
      cause
    )

  def scratchDirNotShared(dir: String, master: String): DeltaReplayException =
    bad(
      s"spark.deltareplay.planning.mode=executors needs a scratch directory every executor can " +
        s"read, but the default $dir is on a local disk and the executors (master $master) run " +
        "on other hosts. Set spark.deltareplay.planning.scratchDir to shared storage (HDFS, an " +
        "object store, a shared mount), or plan on the driver (planning.mode=driver or auto)."
    )

  def manifestWriteFailed(where: String, cause: Throwable): DeltaReplayException =
    missing(
      s"Executor-side planning could not write its manifest in $where " +
        s"(${causeDetail(cause)}). Set spark.deltareplay.planning.scratchDir " +
        "to a directory every executor can write and read, or plan on the driver " +
        "(spark.deltareplay.planning.mode=driver).",
      cause
    )

  def badOffset(table: String, json: String, detail: String): DeltaReplayException =
    stopped(
      s"The streaming checkpoint's offset for $table cannot be used ($detail): $json. Start the " +
        "query with a new checkpoint location, or read this stream with delta-spark " +
        "(spark.deltareplay.enabled=false)."
    )

  def offsetFromAnotherTable(table: String, tableId: String, other: String): DeltaReplayException =
    stopped(
      s"The streaming checkpoint was written for another Delta table (id $other), not $table " +
        s"(id $tableId). Use a new checkpoint location for this query."
    )

  def dataChangeInSource(table: String, version: Long): DeltaReplayException =
    stopped(
      s"Version $version of $table removes or rewrites data (DELETE, UPDATE, MERGE or " +
        "overwrite), which a streaming read of appends cannot follow. Set option " +
        "skipChangeCommits=true to skip such commits, ignoreDeletes=true if the commit only " +
        "deletes, or ignoreChanges=true to re-emit rewritten files."
    )

  def schemaChangedInStream(table: String, version: Long): DeltaReplayException =
    stopped(
      s"The schema of $table changed at version $version while the stream was reading it. " +
        "Restart the query: it will continue from its checkpoint with the new schema."
    )

  def incompatibleSchemaChangeInStream(table: String, version: Long): DeltaReplayException =
    stopped(
      s"The schema of $table changed at version $version in a way a stream cannot follow (a " +
        "column renamed or dropped, or a type changed incompatibly). Start the query with a new " +
        "checkpoint, or read it with delta-spark's schema tracking (option " +
        "schemaTrackingLocation, which keeps the stream on delta-spark)."
    )

  def streamLogGone(table: String, version: Long): DeltaReplayException =
    stopped(
      s"The stream needs commit $version of $table, but the log no longer has it (log " +
        "cleanup ran past the stream). Restart from a new checkpoint with startingVersion."
    )

  /** A write into a read of this connector (`table`, or unnamed when Spark does not say). */
  def readOnly(table: String): DeltaReplayException =
    unsupported(
      s"$table is read by delta-replay, which does not write: write into the table with " +
        "delta-spark (format(\"delta\"), SQL on the table, DeltaTable), or into a view over a " +
        "format(\"delta\") read of it."
    )

  /** `changes`: how the columns the DataFrame reads differ at `version`, one phrase each. */
  def schemaChangedSinceAnalysis(
      table: String,
      version: Long,
      changes: Seq[String]
  ): DeltaReplayException =
    new E.SchemaChanged(
      msg(
        s"The schema of $table changed since the DataFrame was created, in a way it cannot read: " +
          s"at version $version ${changes.mkString("; ")}. Create the DataFrame again to read " +
          "the new schema."
      )
    )

  /** `cause` as a store failure naming `path` and the settings to fix, if it is one. */
  def storeFailure(table: String, path: String, cause: Throwable): Option[DeltaReplayException] =
    cause match {
      case _: DeltaReplayException => None
      case _ if !StoreFailure.isRemoteStore(path) => None
      case _ =>
        StoreFailure.classify(cause).map { failure =>
          val what = failure match {
            case StoreFailure.AccessDenied =>
              "the store denied access with the configured credentials"
            case StoreFailure.NoBucket => "its bucket (or container) does not exist"
            case StoreFailure.Unreachable => "the store's endpoint cannot be reached"
          }
          val where = if (path == table) "" else s" (reading $path)"
          new E.StoreAccess(
            msg(
              s"Cannot read $table$where: $what (${rootMessage(cause)}). Check " +
                s"${StoreFailure.settings(path, failure)}. Nothing was read from the table."
            ),
            cause
          )
        }
    }

  /** `e` and its causes, outermost first. */
  def causes(e: Throwable): Iterator[Throwable] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null)

  private def rootMessage(e: Throwable): String =
    causeDetail(causes(e).toSeq.last, fallback = Option(e.getMessage))

  /**
   * What a cause says, short and on one line, without a parser's internals: a JSON parser's error
   * is its own message plus where in the line it stopped, never Jackson's `[Source: ...]` part.
   */
  def causeDetail(cause: Throwable, fallback: Option[String] = None): String = {
    val text = cause match {
      case null => fallback.getOrElse("unknown cause")
      case j: JsonProcessingException =>
        val where = Option(j.getLocation)
          .filter(_.getLineNr > 0)
          .fold("")(l => s" (line ${l.getLineNr}, column ${l.getColumnNr})")
        Option(j.getOriginalMessage).getOrElse(j.getClass.getSimpleName) + where
      case e =>
        Option(e.getMessage).orElse(fallback).getOrElse(e.getClass.getName)
    }
    // a quoted location inside the message, "[Source: REDACTED ...; line: 1, column: 2]" or
    // "[Source: (byte[])"<the line's text>"; line: 1, column: 2]": the position only
    val located = JacksonLocation.replaceAllIn(text, m => Regex.quoteReplacement(m.group(1)))
    val clean = JacksonSource.replaceAllIn(located, "").replace("Source: REDACTED", "")
    val line = DeltaReplayException.oneLine(clean)
    if (line.length > 300) line.take(300) + "..." else line
  }

  private val JacksonLocation = """\[Source: .*?; (line: \d+, column: \d+)\]""".r
  private val JacksonSource = """\[Source: [^\]]*\]""".r

  def noPath(): DeltaReplayException =
    bad("No table path given: use spark.read.format(\"delta-replay\").load(\"/path/to/table\").")
}
