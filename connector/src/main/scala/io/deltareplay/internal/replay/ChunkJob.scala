package io.deltareplay.internal.replay

import scala.util.control.NonFatal

import io.deltareplay.internal.index.{EntryChunk, IndexOverBudget}
import io.deltareplay.internal.log.LogSegment
import org.apache.spark.FutureAction
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.deltareplay.SparkBridge

/**
 * The index chunks of `rdd`'s partitions, collected to the driver by a job started at once; past
 * `maxBytes` received, the job is cancelled and [[await]] throws [[IndexOverBudget]]. A failed job
 * is named as a failure of `segment`'s log ([[LogJobErrors]]).
 */
private[replay] final class ChunkJob(
    spark: SparkSession,
    segment: LogSegment,
    rdd: RDD[EntryChunk],
    maxBytes: Long
) {
  private val parts = new Array[Array[EntryChunk]](rdd.getNumPartitions)
  private val received = new java.util.concurrent.atomic.AtomicLong()
  @volatile private var over = false
  @volatile private var job: FutureAction[Unit] = _

  job = spark.sparkContext.submitJob[EntryChunk, Array[EntryChunk], Unit](
    rdd,
    (chunks: Iterator[EntryChunk]) => SparkBridge.withTaskConf(chunks.toArray),
    parts.indices,
    (i: Int, chunks: Array[EntryChunk]) => {
      parts(i) = chunks
      if (received.addAndGet(chunks.map(_.bytes).sum) > maxBytes && !over) {
        over = true
        Option(job).foreach(_.cancel())
      }
    },
    ()
  )
  if (over) job.cancel() // passed before `job` was set

  def cancel(): Unit = job.cancel()

  def await(): Seq[EntryChunk] = {
    // a job cancelled for the bound fails; any other failure is the log's
    try LogJobErrors.await(segment, job)
    catch { case NonFatal(_) if over => }
    if (over) throw new IndexOverBudget(segment.table, segment.version, received.get, maxBytes)
    parts.iterator.flatMap(_.iterator).toSeq
  }
}
