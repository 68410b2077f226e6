package io.deltareplay.internal.planning

import io.deltareplay.internal.index.{
  DriverIndex,
  ExecutorIndex,
  ReplayResult,
  ReplaySummary,
  TableIndex
}
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
   * Plans with `filter` where the index is ([[ScanPlanning.where]]); `owner` keeps any scratch
   * files alive while it is reachable.
   */
  def plan(filter: FileFilter, readPartitionSchema: StructType, owner: AnyRef): PlanResult = {
    val (r, why) = indexFor(filter)
    ScanPlanning.where(policy, r, filter, readPartitionSchema, owner).copy(narrowing = why)
  }
}

private[deltareplay] object ScanPlanning {

  /**
   * A scan's plan with `filter` over `replayed`'s index, where the index is: splits on the driver
   * ([[ScanPlanner]]), or manifests written on the executors ([[ExecutorPlanning]]; `owner` keeps
   * them alive). The summary says what the replay behind it did.
   */
  def where(
      policy: ReadPolicy,
      replayed: ReplayResult,
      filter: FileFilter,
      readPartitionSchema: StructType,
      owner: AnyRef
  ): PlanResult = {
    val r = replayed
    replayed.index.byHome(new TableIndex.ByHome[PlanResult] {
      def onDriver(index: DriverIndex): PlanResult = {
        val planned =
          ScanPlanner.plan(
            policy.conf.log.sparkSettings,
            policy.snapshot,
            index,
            filter,
            readPartitionSchema
          )
        val what =
          if (r.narrowed) {
            s"narrowed: ${index.size} files the filters may match, from the log (kept for this " +
              "version and these filters until its whole index is cached)"
          } else index.describe
        val summary =
          ReplaySummary(r.mode, r.actionsReplayed, index.size, r.millis, r.replayTasks, what)
        PlanResult(planned, summary, onExecutors = false)
      }

      def onExecutors(index: ExecutorIndex): PlanResult = {
        val started = System.nanoTime()
        val done =
          ExecutorPlanning.plan(policy.spark, policy.snapshot, policy.conf, index, filter, owner)
        val planned = done.scan
        // An index that is not persisted is replayed by the planning job itself.
        val (actions, millis, replayTasks) =
          if (index.persisted) (r.actionsReplayed, r.millis, r.replayTasks)
          else {
            val millis = r.millis + (System.nanoTime() - started) / 1000000
            (r.actionsReplayed + done.scannedRows, millis, r.replayTasks + done.tasks)
          }
        val files = if (index.persisted) index.size else planned.liveFiles
        val summary = ReplaySummary(r.mode, actions, files, millis, replayTasks, index.describe)
        PlanResult(planned, summary, onExecutors = true)
      }
    })
  }
}
