package io.deltareplay.internal.index

import java.util.concurrent.ConcurrentHashMap

import io.deltareplay.internal.index.IndexBuilds.BackgroundTag
import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent, SparkListenerJobStart}
import org.apache.spark.sql.execution.SQLExecution
import org.apache.spark.sql.execution.ui.{
  SparkListenerSQLExecutionEnd,
  SparkListenerSQLExecutionStart
}

/**
 * The application's foreground queries, as a listener sees them: SQL executions that are not a
 * background build's. A foreground one that starts cancels the running builds' jobs. Kept per JVM,
 * not in a session's state: queries of every session of the application share the cores a build
 * would take, and the listener is installed once per SparkContext (the JVM's one).
 */
private[index] object ForegroundQueries {
  private val active = ConcurrentHashMap.newKeySet[Long]()
  private val installed = ConcurrentHashMap.newKeySet[SparkContext]()
  @volatile private var lastChange = System.nanoTime()
  // a read that began (its snapshot loaded) holds the builds off until then
  @volatile private var heldUntil = System.nanoTime()

  /** Foreground reads that began and queries that started so far ([[IndexBuilds.yieldPoint]]). */
  @volatile var generation = 0L

  val Yields = "a query started: the index build yields"

  def install(sc: SparkContext): Unit =
    if (installed.add(sc)) {
      sc.addSparkListener(new SparkListener {
        override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
          case e: SparkListenerSQLExecutionStart if !e.jobTags.contains(BackgroundTag) =>
            active.add(e.executionId)
            lastChange = System.nanoTime()
            synchronized(generation += 1)
            sc.cancelJobsWithTag(BackgroundTag, Yields)
          case e: SparkListenerSQLExecutionEnd =>
            if (active.remove(e.executionId)) lastChange = System.nanoTime()
          case _ =>
        }

        // a build's job that starts while a foreground query runs (the build was on the driver,
        // between jobs, when the query started) yields at once as well
        override def onJobStart(e: SparkListenerJobStart): Unit = {
          val tags = Option(e.properties).flatMap(p => Option(p.getProperty(JobTagsKey)))
          if (tags.exists(_.split(",").contains(BackgroundTag)) && busy(None)) {
            sc.cancelJob(e.jobId, Yields)
          }
        }
      })
    }

  /** A foreground read begins: see [[IndexBuilds.yieldTo]]. */
  def begin(sc: SparkContext): Unit = {
    heldUntil = System.nanoTime() + HoldNanos
    lastChange = System.nanoTime()
    synchronized(generation += 1)
    sc.cancelJobsWithTag(BackgroundTag, Yields)
  }

  private def busy(askedBy: Option[Long]): Boolean = {
    val now = System.nanoTime()
    askedBy.exists(id => SQLExecution.getQueryExecution(id) != null) || !active.isEmpty ||
    serving() || now - lastChange < IdleNanos || now - heldUntil < 0
  }

  // rows still being sent count as a running query: the idle time starts once they are sent
  private def serving(): Boolean = servingResults() && { lastChange = System.nanoTime(); true }

  /**
   * Whether a query's rows are still on their way to a PySpark driver: Spark pickles them (or
   * writes their Arrow batches) in a thread of its own, named `serve...` (`serve-DataFrame`,
   * `serve-Arrow`, `serve toLocalIterator`), after the query's execution has ended, while Python
   * decodes them; a build started then takes the cores both need, and the first query's rows reach
   * Python later.
   */
  private def servingResults(): Boolean = {
    var group = Thread.currentThread.getThreadGroup
    while (group.getParent != null) group = group.getParent
    val threads = new Array[Thread](group.activeCount() + 16)
    val n = group.enumerate(threads, true)
    (0 until n).exists(i => threads(i).getName.startsWith("serve"))
  }

  /**
   * Waits until `askedBy` (the query that asked for the build) has ended and no foreground query
   * has run for a moment.
   */
  def awaitIdle(sc: SparkContext, askedBy: Option[Long]): Unit =
    while (busy(askedBy) && !sc.isStopped) Thread.sleep(20)

  /** Whether `e` is the cancellation of a build's jobs by [[install]]'s listener. */
  def cancelledIt(e: Throwable): Boolean =
    Iterator
      .iterate(e)(_.getCause)
      .takeWhile(_ != null)
      .exists(c => Option(c.getMessage).exists(_.contains("the index build yields")))

  /**
   * How long no query must have started or ended (or sent its last rows) before a build (re)starts:
   * PySpark decodes the rows it was sent after Spark's serving thread has ended, 100,000 of them in
   * about half a second on two cores.
   */
  private val IdleNanos = 1000L * 1000000L

  /**
   * How long a read that began holds the builds off at least: its analysis and planning come before
   * its execution starts (and holds them itself).
   */
  private val HoldNanos = 2000L * 1000000L

  /** The local property that carries a job's tags (`SparkContext.SPARK_JOB_TAGS`). */
  private val JobTagsKey = "spark.job.tags"
}
