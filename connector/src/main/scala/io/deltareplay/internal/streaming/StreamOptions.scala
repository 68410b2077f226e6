package io.deltareplay.internal.streaming

import java.util.Locale

import io.deltareplay.Errors
import org.apache.spark.sql.catalyst.expressions.{Cast, EvalMode, Literal}
import org.apache.spark.sql.types.TimestampType
import org.apache.spark.unsafe.types.UTF8String

/** The streaming read options, as delta-spark's DeltaSource names them. */
private[deltareplay] case class StreamOptions(
    maxFilesPerTrigger: Option[Int],
    maxBytesPerTrigger: Option[Long],
    startingVersion: Option[String],
    startingTimestamp: Option[String],
    ignoreDeletes: Boolean,
    ignoreChanges: Boolean,
    skipChangeCommits: Boolean
)

private[deltareplay] object StreamOptions {
  import io.deltareplay.{DeltaReplayOptions => O}
  val MaxFilesPerTrigger: String = O.MaxFilesPerTrigger
  val MaxBytesPerTrigger: String = O.MaxBytesPerTrigger
  val StartingVersion: String = O.StartingVersion
  val StartingTimestamp: String = O.StartingTimestamp
  val IgnoreDeletes: String = O.IgnoreDeletes
  val IgnoreChanges: String = O.IgnoreChanges
  val SkipChangeCommits: String = O.SkipChangeCommits

  val DefaultMaxFiles = 1000

  def apply(options: Map[String, String]): StreamOptions = {
    val lower = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v.trim }
    def get(key: String) = lower.get(key.toLowerCase(Locale.ROOT))
    def bool(key: String) = get(key).exists { v =>
      v.toLowerCase(Locale.ROOT) match {
        case "true" => true
        case "false" => false
        case other => throw Errors.badOption(key, other, "true or false")
      }
    }
    def positive(key: String): Option[Long] = get(key).map { v =>
      val n =
        try parseBytes(v)
        catch {
          case _: NumberFormatException => throw Errors.badOption(key, v, "a positive number")
        }
      if (n <= 0) throw Errors.badOption(key, v, "a positive number")
      n
    }
    if (get(StartingVersion).isDefined && get(StartingTimestamp).isDefined) {
      throw Errors.badOption(
        StartingVersion,
        get(StartingVersion).get,
        "not both startingVersion and startingTimestamp"
      )
    }
    get(StartingVersion).foreach { v =>
      val isVersion = v.nonEmpty && v.forall(_.isDigit) && scala.util.Try(v.toLong).isSuccess
      if (v.toLowerCase(Locale.ROOT) != "latest" && !isVersion) {
        throw Errors.badOption(StartingVersion, v, "a version number or 'latest'")
      }
    }
    get(StartingTimestamp).foreach { ts =>
      if (timestampMicros(ts, "UTC").isEmpty) {
        throw Errors.badOption(StartingTimestamp, ts, "a timestamp or date")
      }
    }
    // a whole number of files, as DeltaSource takes it (no size units)
    val maxFiles = get(MaxFilesPerTrigger).map { v =>
      val n = scala.util.Try(v.toInt).getOrElse(0)
      if (n <= 0) throw Errors.badOption(MaxFilesPerTrigger, v, "a positive whole number")
      n
    }
    StreamOptions(
      maxFilesPerTrigger = maxFiles,
      maxBytesPerTrigger = positive(MaxBytesPerTrigger),
      startingVersion = get(StartingVersion),
      startingTimestamp = get(StartingTimestamp),
      ignoreDeletes = bool(IgnoreDeletes),
      ignoreChanges = bool(IgnoreChanges),
      skipChangeCommits = bool(SkipChangeCommits)
    )
  }

  /**
   * A `startingTimestamp` in micro-seconds: a timestamp or a date string, read as Spark casts it
   * (in `timeZone` unless it names one); None when it is not one.
   */
  def timestampMicros(ts: String, timeZone: String): Option[Long] =
    Option(
      Cast(Literal(UTF8String.fromString(ts)), TimestampType, Some(timeZone), EvalMode.LEGACY)
        .eval()
    ).map(_.asInstanceOf[Long])

  private def parseBytes(v: String): Long =
    O.parseBytes(v).getOrElse(throw new NumberFormatException(v))
}
