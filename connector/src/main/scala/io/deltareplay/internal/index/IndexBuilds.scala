package io.deltareplay.internal.index

import io.deltareplay.internal.planning.ReadPolicy
import io.deltareplay.internal.session.SessionState
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.SQLExecution

/**
 * Indexes being built in the background after a read through a [[CheckpointFilter]]: at most one
 * per table version, each in a daemon thread that offers it to the session's cache when done.
 */
private[deltareplay] object IndexBuilds extends Logging {

  /** The builds of one session: running ones by table version; cleared with the session state. */
  private final class Builds {
    val running = java.util.concurrent.ConcurrentHashMap.newKeySet[(String, String, Long)]()
    @volatile var cleared = false
  }

  private val buildsOf = new SessionState.Part[Builds](
    "background index builds",
    () => new Builds,
    release = b => b.cleared = true, // a build not started yet does not start
    size = _.running.size.toLong
  )

  /**
   * Starts building `policy`'s index unless a build of the same version is running. The build waits
   * until the SQL execution that asked for it (the query being planned, if any) has ended: on a
   * small machine it would otherwise take cores and driver time from that query.
   */
  def start(policy: ReadPolicy, needStats: Boolean): Unit = {
    val s = policy.snapshot
    val key = (s.segment.paths.root, s.meta.tableId, s.version)
    val sc = policy.spark.sparkContext
    val askedBy = Option(sc.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)).map(_.toLong)
    val builds = buildsOf(policy.spark)
    val running = builds.running
    if (running.add(key)) {
      val thread = new Thread(s"delta-replay index ${s.table} v${s.version}") {
        override def run(): Unit =
          try {
            while (
              askedBy.exists(id => SQLExecution.getQueryExecution(id) != null) && !sc.isStopped
            )
              Thread.sleep(20)
            // not part of the query that started it (a thread inherits its local properties)
            sc.setLocalProperty("spark.sql.execution.id", null)
            sc.setLocalProperty("spark.jobGroup.id", null)
            SparkSession.setActiveSession(policy.spark)
            if (!builds.cleared) {
              val built = policy.index(needStats)
              logInfo(
                s"Built the index of ${s.table} v${s.version} in the background: ${built.mode}"
              )
            }
          } catch {
            case scala.util.control.NonFatal(_) if policy.spark.sparkContext.isStopped =>
              logInfo(s"The background index build of ${s.table} v${s.version} stopped with Spark")
            case scala.util.control.NonFatal(e) =>
              logWarning(
                s"Building the index of ${s.table} v${s.version} in the background failed",
                e
              )
          } finally running.remove(key)
      }
      thread.setDaemon(true)
      thread.start()
    }
  }

  /** Whether a background build of this table version is running (tests). */
  def isRunning(spark: SparkSession, root: String, tableId: String, version: Long): Boolean =
    buildsOf(spark).running.contains((root, tableId, version))
}
