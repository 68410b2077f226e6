package io.deltareplay.internal.log

import java.util.concurrent.{Callable, ExecutionException, Future}

import scala.collection.mutable

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.deltareplay.SparkBridge

/**
 * Log files read ahead of the one being parsed, on a small shared pool of daemon threads, handed
 * out in their given order.
 *
 * The driver reads the commits after a checkpoint one after another (newest first for protocol and
 * metaData, oldest first for the tail's adds and removes). On a local disk a read is cheap; on an
 * object store each is a GET, a round trip that would otherwise wait for the one before it, so a
 * snapshot load would pay one round trip per commit after the checkpoint. Reading up to
 * [[MaxFiles]] of them at once (at most [[MaxBytes]] of listed length, at least one) overlaps those
 * round trips (docs/object-stores.md, "What replay asks of the store"). A caller that stops early
 * (protocol and metaData found) leaves the reads already started to finish: their bytes land in
 * [[CommitTexts]], where the replay of the same query finds them.
 *
 * A failed read fails when its turn comes, with the error the read threw (it names the file), so a
 * caller sees the same error as when it read the files in turn.
 */
private[deltareplay] object ReadAhead {

  /** Reads in flight at once (also the pool's threads). */
  val MaxFiles = 8

  /** Listed bytes in flight at once; a larger file is read alone. */
  val MaxBytes: Long = 64L << 20

  /** Idle threads end after 30 s: none are left behind in an idle driver. */
  private lazy val pool = SparkBridge.daemonPool("delta-replay log read", MaxFiles, 30)

  /**
   * [[apply]] for reads of files under `path`: on a local disk one after another (a read takes
   * about as long as handing it to another thread), elsewhere ahead.
   */
  def forFilesUnder[A, T](path: Path, items: Seq[A], bytes: A => Long)(read: A => T): Iterator[T] =
    if (path.toUri.getScheme == "file") items.iterator.map(read) else apply(items, bytes)(read)

  /**
   * `read` of each of `items`, in order; `bytes` weighs an item for [[MaxBytes]]. One item is read
   * on the calling thread.
   */
  def apply[A, T](items: Seq[A], bytes: A => Long)(read: A => T): Iterator[T] =
    if (items.lengthCompare(1) <= 0) items.iterator.map(read)
    else
      new Iterator[T] {
        private val waiting = items.iterator
        private val started = mutable.Queue.empty[(Long, Future[T])]
        private var inFlight = 0L

        private def topUp(): Unit = {
          var more = waiting.hasNext
          while (more && started.size < MaxFiles) {
            val next = waiting.next()
            val weight = math.max(0L, bytes(next))
            val task: Callable[T] = () => read(next)
            started.enqueue(weight -> pool.submit(task))
            inFlight += weight
            more = waiting.hasNext && inFlight < MaxBytes
          }
        }

        def hasNext: Boolean = started.nonEmpty || waiting.hasNext

        def next(): T = {
          if (started.isEmpty || inFlight < MaxBytes) topUp()
          val (weight, result) = started.dequeue()
          inFlight -= weight
          try result.get()
          catch { case e: ExecutionException if e.getCause != null => throw e.getCause }
        }
      }
}
