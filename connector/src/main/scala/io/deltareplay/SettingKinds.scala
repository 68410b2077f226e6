package io.deltareplay

import java.util.Locale

import scala.util.Try

/**
 * What a setting of [[DeltaReplayOptions]] is made of: where it may be given
 * ([[SettingKinds.Scope]]) and the values it takes ([[SettingKinds.Kind]]), and the settings with a
 * few named values ([[SettingKinds.Named]]). Used through [[DeltaReplayOptions]]' aliases
 * (`DeltaReplayOptions.Kind`, ...).
 */
object SettingKinds {

  /** A setting with a few named values. */
  private[deltareplay] trait Named { def name: String }

  private[deltareplay] object Named {

    /** The choice named `value` (any case); an error naming `key` and the choices otherwise. */
    def parse[T <: Named](key: String, value: String, choices: Seq[T]): T = {
      val wanted = value.trim.toLowerCase(Locale.ROOT)
      choices.find(_.name == wanted).getOrElse {
        val names = choices.map(_.name)
        throw Errors.badOption(key, wanted, names.init.mkString(", ") + " or " + names.last)
      }
    }
  }

  /** Where a setting may be given. */
  sealed abstract class Scope(val describe: String) extends Product with Serializable {

    /** Whether a read (`.option(...)`) may give it. */
    def isReadOption: Boolean = this != Scope.Session

    /** Whether a session key `spark.deltareplay.<name>` may give it. */
    def isSessionKey: Boolean = this == Scope.ReadAndSession || this == Scope.Session
  }

  object Scope {

    /** A read option of batch and streaming reads, or a session key. */
    case object ReadAndSession extends Scope("read option or session key")

    /** A session key only. */
    case object Session extends Scope("session key")

    /** A read option only. */
    case object Read extends Scope("read option")

    /** A read option of streams only (DeltaSource's). */
    case object Stream extends Scope("stream option")
  }

  /** The values a setting takes; `expected` says them in an error. */
  sealed abstract class Kind(val expected: String) extends Product with Serializable {

    /** Whether `value` is one of them. */
    def accepts(value: String): Boolean
  }

  object Kind {
    case object Bool extends Kind("true or false") {
      def accepts(value: String): Boolean =
        Set("true", "false").contains(value.trim.toLowerCase(Locale.ROOT))
    }

    /** A whole number of at least `min` (and at most `max`). */
    final case class Whole(min: Long, max: Long = Long.MaxValue)
        extends Kind(
          if (max == Long.MaxValue) s"a whole number of at least $min"
          else s"a whole number from $min to $max"
        ) {
      def accepts(value: String): Boolean =
        Try(value.trim.toLong).toOption.exists(n => n >= min && n <= max)
    }

    /** One of `choices` (any case). */
    final case class OneOf(choices: String*)
        extends Kind(choices.init.mkString(", ") + " or " + choices.last) {
      def accepts(value: String): Boolean = choices.contains(value.trim.toLowerCase(Locale.ROOT))
    }

    case object StorageLevelName extends Kind("a Spark storage level such as MEMORY_AND_DISK") {
      def accepts(value: String): Boolean =
        Try(
          org.apache.spark.storage.StorageLevel.fromString(value.trim.toUpperCase(Locale.ROOT))
        ).isSuccess
    }

    case object Text extends Kind("a non-empty value") {
      def accepts(value: String): Boolean = value.trim.nonEmpty
    }

    case object Version extends Kind("a version number") {
      def accepts(value: String): Boolean = Try(value.trim.toLong).toOption.exists(_ >= 0)
    }

    /**
     * A timestamp or a date, as Spark casts a string to a timestamp (read in the session time zone
     * when the read resolves it, unless it names one).
     */
    case object Timestamp extends Kind("a timestamp or date") {
      def accepts(value: String): Boolean =
        DeltaReplayOptions.timestampMicros(value.trim, "UTC").isDefined
    }

    /** A version number or `latest`. */
    case object StartVersion extends Kind("a version number or 'latest'") {
      def accepts(value: String): Boolean = {
        val v = value.trim
        v.equalsIgnoreCase("latest") || v.nonEmpty && v.forall(_.isDigit) && Version.accepts(v)
      }
    }

    /** A positive number of bytes: `1048576`, `10k`, `64m`, `1g`. */
    case object Bytes extends Kind("a positive number of bytes (1048576, 64m, 1g, ...)") {
      def accepts(value: String): Boolean = DeltaReplayOptions.parseBytes(value).exists(_ > 0)
    }
  }
}
