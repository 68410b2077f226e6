package io.deltareplay.internal.planning

import io.deltareplay.internal.index.{ReplayResult, ReplaySummary}
import io.deltareplay.internal.skipping.FileFilter
import org.apache.spark.sql.types.StructType

/** A scan's planning result: its input partitions and what the replay behind it did. */
private[deltareplay] final case class PlanResult(
    planned: PlannedScan,
    replay: ReplaySummary,
    onExecutors: Boolean,
    narrowing: String = ""
)

/**
 * A scan's planning over the snapshot index, where the index is: on the driver ([[ScanPlanner]]),
 * or on the executors ([[ExecutorPlanning]], the file list never reaching the driver). The index is
 * got once, on first use.
 */
private[deltareplay] final class ScanPlanning(
    policy: ReadPolicy,
    getIndex: () => ReplayResult,
    narrow: FileFilter => Either[String, ReplayResult]
) {
  private var full: Option[ReplayResult] = None
  private var narrowed: Option[Either[String, ReplayResult]] = None

  /** The index of the whole version (got on first use). */
  def replay: ReplayResult = synchronized {
    full.getOrElse {
      val r = getIndex()
      full = Some(r)
      r
    }
  }

  /** The index the plans read so far, if one was got: the whole version's or a narrowed one. */
  def planIndex: Option[ReplayResult] = synchronized(full.orElse(narrowed.flatMap(_.toOption)))

  /**
   * The index a plan with `filter` reads: the whole version's when it is at hand, else the files
   * the first plan's filter may match when [[ReadPolicy.narrowedIndex]] applies (a later plan of
   * this scan only adds runtime partition filters, so those files still hold all its matches).
   */
  private def indexFor(filter: FileFilter): (ReplayResult, String) = synchronized {
    full match {
      case Some(r) => r -> narrowed.fold("the whole index was at hand")(_.left.getOrElse(""))
      case None =>
        val n = narrowed.getOrElse {
          val made = narrow(filter)
          narrowed = Some(made)
          made
        }
        n match {
          case Right(r) => r -> ""
          case Left(why) => replay -> why
        }
    }
  }

  /**
   * Plans with `filter` where the index is ([[TableIndex.plan]]); `owner` keeps any scratch files
   * alive while it is reachable.
   */
  def plan(filter: FileFilter, readPartitionSchema: StructType, owner: AnyRef): PlanResult = {
    val (r, why) = indexFor(filter)
    r.index.plan(policy, r, filter, readPartitionSchema, owner).copy(narrowing = why)
  }
}
