package io.deltareplay.internal

import java.util.Locale

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
  val MaxFilesPerTrigger = "maxFilesPerTrigger"
  val MaxBytesPerTrigger = "maxBytesPerTrigger"
  val StartingVersion = "startingVersion"
  val StartingTimestamp = "startingTimestamp"
  val IgnoreDeletes = "ignoreDeletes"
  val IgnoreChanges = "ignoreChanges"
  val SkipChangeCommits = "skipChangeCommits"

  /** Streaming options this connector implements; others keep a routed stream on delta-spark. */
  val Known: Set[String] = Set(
    MaxFilesPerTrigger,
    MaxBytesPerTrigger,
    StartingVersion,
    StartingTimestamp,
    IgnoreDeletes,
    IgnoreChanges,
    SkipChangeCommits
  ).map(_.toLowerCase(Locale.ROOT))

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
      if (v.toLowerCase(Locale.ROOT) != "latest" && !v.forall(_.isDigit)) {
        throw Errors.badOption(StartingVersion, v, "a version number or 'latest'")
      }
    }
    StreamOptions(
      maxFilesPerTrigger = positive(MaxFilesPerTrigger).map(_.toInt),
      maxBytesPerTrigger = positive(MaxBytesPerTrigger),
      startingVersion = get(StartingVersion),
      startingTimestamp = get(StartingTimestamp),
      ignoreDeletes = bool(IgnoreDeletes),
      ignoreChanges = bool(IgnoreChanges),
      skipChangeCommits = bool(SkipChangeCommits)
    )
  }

  /** `1048576`, `10k`, `64m`, `1g` (as delta-spark accepts for maxBytesPerTrigger). */
  private def parseBytes(v: String): Long = {
    val s = v.toLowerCase(Locale.ROOT).stripSuffix("b")
    val (digits, unit) = s.span(_.isDigit)
    val base = digits.toLong
    unit match {
      case "" => base
      case "k" => base << 10
      case "m" => base << 20
      case "g" => base << 30
      case "t" => base << 40
      case _ => throw new NumberFormatException(v)
    }
  }
}
