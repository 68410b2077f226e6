package io.deltareplay.internal.streaming

import io.deltareplay.Errors

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

  /** Files per micro-batch when no limit is given (the setting's default). */
  val DefaultMaxFiles: Int = O.Setting.MaxFilesPerTrigger.default.get.toInt

  /**
   * The stream options of a read, each checked against its setting in the one settings table
   * ([[io.deltareplay.DeltaReplayOptions.Setting]]: the same values, the same error naming the
   * option as written). Beyond a setting's own values: `startingVersion` and `startingTimestamp`
   * together are refused.
   */
  def apply(options: Map[String, String]): StreamOptions = {
    def get(setting: O.Setting): Option[String] = O.optionValue(options, setting).map(_._2)
    def bool(setting: O.Setting): Boolean = get(setting).exists(_.equalsIgnoreCase("true"))
    val version = O.optionValue(options, O.Setting.StartingVersion)
    val timestamp = get(O.Setting.StartingTimestamp)
    for ((key, v) <- version if timestamp.isDefined)
      throw Errors.badOption(key, v, "not both startingVersion and startingTimestamp")
    StreamOptions(
      // a whole number of files, as DeltaSource takes it (no size units)
      maxFilesPerTrigger = get(O.Setting.MaxFilesPerTrigger).map(_.toInt),
      maxBytesPerTrigger = get(O.Setting.MaxBytesPerTrigger).flatMap(O.parseBytes),
      startingVersion = version.map(_._2),
      startingTimestamp = timestamp,
      ignoreDeletes = bool(O.Setting.IgnoreDeletes),
      ignoreChanges = bool(O.Setting.IgnoreChanges),
      skipChangeCommits = bool(O.Setting.SkipChangeCommits)
    )
  }

  /**
   * A `startingTimestamp` in micro-seconds: a timestamp or a date string, read as Spark casts it
   * (in `timeZone` unless it names one); None when it is not one.
   */
  def timestampMicros(ts: String, timeZone: String): Option[Long] = O.timestampMicros(ts, timeZone)
}
