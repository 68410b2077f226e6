package io.deltareplay.internal.index

/** A snapshot index at hand for one read, and what getting it did. */
private[deltareplay] case class ReplayResult(
    index: TableIndex,
    mode: ReplayPath,
    actionsReplayed: Long,
    millis: Long,
    replayTasks: Int,
    narrowed: Boolean = false
)

/** What a scan's replay did, wherever it ran (the file list may never reach the driver). */
private[deltareplay] case class ReplaySummary(
    mode: ReplayPath,
    actionsReplayed: Long,
    liveFiles: Long,
    millis: Long,
    tasks: Int,
    index: String = "none"
)

/**
 * How a read's snapshot index came to be: taken from the cache, rolled forward, replayed on the
 * driver or as a Spark job. `describe` is the text scan metrics (`replayMode`), EXPLAIN and the
 * stream's progress show.
 */
private[deltareplay] sealed trait ReplayPath {
  def describe: String
}

private[deltareplay] object ReplayPath {

  /** The cached index of this very version. */
  final case class Cached(version: Long) extends ReplayPath {
    def describe: String = s"cached (v$version)"
  }

  /** A cached index of version `from` rolled forward by `commits` commits. */
  final case class Rolled(from: Long, commits: Long) extends ReplayPath {
    def describe: String = s"incremental (v$from + $commits commits)"
  }

  /**
   * A narrowed index of version `from` (the same filters) rolled forward by `commits` commits;
   * `filtered`: the read had filters (a count's read of the whole table has none).
   */
  final case class RolledNarrowed(from: Long, commits: Long, filtered: Boolean = true)
      extends ReplayPath {
    def describe: String =
      s"incremental (narrowed index of v$from, ${if (filtered) "same filters" else "no filter"}" +
        s", + $commits commits)"
  }

  /** The narrowed index an earlier read of `version` with the same filters (or none) built. */
  final case class Reused(version: Long, filtered: Boolean = true) extends ReplayPath {
    def describe: String =
      if (filtered) {
        s"reused: v$version read before with the same filters (checkpoint filtered by the query)"
      } else s"reused: v$version read before with no filter"
  }

  /** Replayed on the driver, no Spark job. */
  case object Local extends ReplayPath {
    def describe: String = "local"
  }

  /**
   * Replayed on the driver, entries built only for the `kept` of `live` files the query may match.
   */
  final case class LocalNarrowed(kept: Int, live: Int) extends ReplayPath {
    def describe: String =
      f"local (filtered by the query: entries for $kept%,d of $live%,d files)"
  }

  /** Replayed as a Spark job in the `shape` given; `onExecutors`: the index stayed there. */
  final case class Distributed(shape: JobShape, onExecutors: Boolean = false) extends ReplayPath {
    def describe: String =
      s"distributed (${shape.describe})" + (if (onExecutors) ", on the executors" else "")
  }

  /** How a distributed replay reconciled the log's actions. */
  sealed trait JobShape {
    def describe: String
  }

  /** Every action of the log through the keyed window (a shuffle). */
  case object KeyedWindow extends JobShape {
    def describe: String = "keyed window"
  }

  /**
   * Only the commits after the checkpoint through the keyed window; the checkpoint's adds kept
   * map-side.
   */
  case object KeyedWindowOverTail extends JobShape {
    def describe: String =
      "keyed window over the commits after the checkpoint, checkpoint kept map-side"
  }

  /**
   * The tail reconciled on the driver, the checkpoint filtered map-side (no shuffle);
   * `filteredByQuery`: only rows the query may match became entries; `decoded`: of the rows read by
   * the filters' columns, how many were decoded whole (two-pass reads).
   */
  final case class MapSide(filteredByQuery: Boolean = false, decoded: Option[(Long, Long)] = None)
      extends JobShape {
    def describe: String = decoded match {
      case Some((whole, read)) =>
        "map-side filter, checkpoint filtered by the query: " +
          f"$whole%,d of $read%,d rows decoded whole"
      case None if filteredByQuery => "map-side filter, checkpoint filtered by the query"
      case None => "map-side filter"
    }
  }

  /**
   * A count's fast path: the tail reconciled on the driver, the checkpoint's adds it did not touch
   * counted in the tasks that read them (no index built; `filteredByQuery`: through the query's
   * partition filters).
   */
  final case class CountedMapSide(filteredByQuery: Boolean) extends JobShape {
    def describe: String =
      "map-side filter, " + (if (filteredByQuery) "checkpoint filtered by the query, " else "") +
        "counted in the replay tasks"
  }
}

/** Where a snapshot index lives. */
private[deltareplay] sealed trait Home
private[deltareplay] object Home {
  case object Driver extends Home
  case object Executors extends Home
}
