package io.deltareplay.internal.index

import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import io.deltareplay.internal.session.{ReadsBegin, SessionState}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.SQLExecution

/**
 * Indexes built in the background after a read through a
 * [[io.deltareplay.internal.replay.CheckpointFilter]]: at most one per table version, each in a
 * daemon thread that offers it to the session's cache when done. A foreground query never waits for
 * one:
 *
 *   - a build starts only once the query that asked for it has ended, no other query of the
 *     application is running and no query's rows are still being sent to PySpark, and runs its
 *     Spark jobs under the job tag [[BackgroundTag]] in the scheduler pool of the same name (a
 *     lower-priority pool where `spark.scheduler.mode=FAIR`);
 *   - when a read of any table through this connector begins (its snapshot loads, before the query
 *     is analysed and planned) or any other query starts, the build's jobs are cancelled at once
 *     (their cores go to the query), a job the build starts while a foreground query runs is
 *     cancelled as it starts, its work on the driver (a log replayed there) stops at its next
 *     [[yieldPoint]], and the build starts again once the application is idle; until its index is
 *     cached, reads of the version are answered from what the first read kept (the narrowed index
 *     of its filters) or from their own narrowed read;
 *   - its index lives where any index of the table would (planning's `ReadPolicy.home`: on the
 *     driver only below `planning.executorsMinFiles`), and the cache keeps it within its budget; a
 *     build of a driver index stops once it holds more than the whole budget on the driver (a Spark
 *     job's chunks), an index that comes out bigger is not kept, and the table's later versions are
 *     not built again while the budget is no bigger (a warning says so and how to keep it): their
 *     filtered reads roll their narrowed files forward instead (`ReadPolicy.narrowedIndex`).
 */
private[deltareplay] object IndexBuilds extends Logging {

  // running builds exist only once this object does: from then on, a read that begins (its
  // snapshot loads) makes them yield
  ReadsBegin.register(yieldTo)

  /** The job tag and scheduler pool of background builds. */
  val BackgroundTag = "delta-replay-background"

  /** Attempts of one build cancelled by foreground queries before it gives up. */
  val MaxAttempts = 20

  /** The builds of one session: running ones by table version; cleared with the session state. */
  private final class Builds {
    val running = ConcurrentHashMap.newKeySet[(String, String, Long)]()
    // the running builds with statistics, by (table root, table id)
    val withStats = new ConcurrentHashMap[(String, String), java.lang.Integer]()
    // tables whose index came out bigger than the cache budget, by (table root, table id): the
    // budget then
    val overBudget = new ConcurrentHashMap[(String, String), java.lang.Long]()
    @volatile var cleared = false
  }

  private val buildsOf = new SessionState.Part[Builds](
    "background index builds",
    () => new Builds,
    release = b => b.cleared = true, // a build not started yet does not start
    size = _.running.size.toLong
  )

  /** Builds stopped because their index passed the cache budget on the driver. */
  private[deltareplay] val stoppedOverBudget = new java.util.concurrent.atomic.AtomicLong()

  /**
   * What a build tells its observer as it goes, on the build's own thread: before it starts, and at
   * each [[yieldPoint]] of an attempt. Nothing by default; a test holds a build at either point.
   */
  private[deltareplay] trait Observer {
    def beforeStart(): Unit = ()
    def atYieldPoint(): Unit = ()
  }

  private[deltareplay] object Observer {
    val Nothing: Observer = new Observer {}
  }

  /** The builds' observer (one per JVM, as the builds' threads are; [[Observer.Nothing]] unset). */
  @volatile private[deltareplay] var observer: Observer = Observer.Nothing

  /** Attempts of builds that yielded to a foreground read at a [[yieldPoint]]. */
  private[deltareplay] val yieldedOnDriver = new java.util.concurrent.atomic.AtomicLong()

  /** On a build's thread: the [[ForegroundQueries.generation]] its current attempt started in. */
  private val attemptOf = new ThreadLocal[java.lang.Long]

  /**
   * Where a build's work on the driver (reconciling commits, turning files into entries: no Spark
   * job that a foreground query could cancel) stops when a foreground read or query began after its
   * attempt started; the build starts again once the application is idle, as after a cancelled job.
   * Does nothing on any other thread. Cheap enough to call per file action.
   */
  def yieldPoint(): Unit = {
    val started = attemptOf.get
    if (started != null) {
      observer.atYieldPoint()
      if (started.longValue != ForegroundQueries.generation) {
        yieldedOnDriver.incrementAndGet()
        throw new RuntimeException(ForegroundQueries.Yields)
      }
    }
  }

  /**
   * Starts building `request`'s index unless a build of the same version is running (see the class
   * doc for when it runs and how it yields).
   */
  def start(request: IndexRequest, needStats: Boolean): Unit = {
    val s = request.snapshot
    val key = (s.segment.paths.root, s.meta.tableId, s.version)
    val sc = request.spark.sparkContext
    val askedBy = Option(sc.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)).map(_.toLong)
    val builds = buildsOf(request.spark)
    val running = builds.running
    val table = (key._1, key._2)
    val budget = request.cacheBudgetBytes
    // an index the cache did not keep for its size is not built again under the same budget: each
    // build would cost a whole replay for nothing (filtered reads keep their narrowed files)
    val tooBig = Option(builds.overBudget.get(table)).exists(_ >= budget)
    if (!tooBig && running.add(key)) {
      if (needStats) builds.withStats.merge(table, 1, (a, b) => a + b)
      ForegroundQueries.install(sc)
      val thread = new Thread(s"delta-replay index ${s.table} v${s.version}") {
        override def run(): Unit =
          try {
            observer.beforeStart()
            // not part of the query that started it (a thread inherits its local properties)
            sc.setLocalProperty(SQLExecution.EXECUTION_ID_KEY, null)
            sc.setLocalProperty("spark.jobGroup.id", null)
            sc.setLocalProperty("spark.scheduler.pool", BackgroundTag)
            sc.addJobTag(BackgroundTag)
            SparkSession.setActiveSession(request.spark)
            var attempt = 1
            var done = false
            while (!done && attempt <= MaxAttempts && !builds.cleared && !sc.isStopped) {
              ForegroundQueries.awaitIdle(sc, askedBy)
              if (!builds.cleared && !sc.isStopped) {
                def overBudget(bytes: Long, what: String): Unit = {
                  builds.overBudget.put(table, budget)
                  logWarning(
                    s"The index of ${s.table} ($what${bytes >> 20} MB on the driver) is " +
                      s"bigger than the cache budget (${budget >> 20} MB), so it is not kept " +
                      "and not built in the background again: reads with filters read the " +
                      "files they may match from the log. To keep it, raise spark.deltareplay." +
                      s"${io.deltareplay.DeltaReplayOptions.StateCacheMaxBytes} or the driver's " +
                      "heap."
                  )
                }
                try {
                  attemptOf.set(ForegroundQueries.generation)
                  // a build on the driver stops once it passes the budget: the cache would not
                  // keep it, and the driver holds no more than the budget for it
                  val built = request.buildIndex(needStats, maxDriverBytes = budget)
                  logInfo(
                    s"Built the index of ${s.table} v${s.version} in the background: ${built.mode.describe}"
                  )
                  val index = built.index
                  if (index.livesIn(Home.Driver) && !IndexCache.fitsBudget(index, budget)) {
                    overBudget(index.bytes, "")
                  }
                  done = true
                } catch {
                  case e: IndexOverBudget =>
                    stoppedOverBudget.incrementAndGet()
                    overBudget(e.receivedBytes, "its build stopped at ")
                    done = true
                  case NonFatal(e) if ForegroundQueries.cancelledIt(e) =>
                    logInfo(s"Index build of ${s.table} v${s.version} yielded to a query")
                    attempt += 1
                }
              }
            }
          } catch {
            case NonFatal(_) if request.spark.sparkContext.isStopped =>
              logInfo(s"The background index build of ${s.table} v${s.version} stopped with Spark")
            case NonFatal(e) =>
              logWarning(
                s"Building the index of ${s.table} v${s.version} in the background failed",
                e
              )
          } finally {
            attemptOf.remove()
            running.remove(key)
            if (needStats)
              builds.withStats.computeIfPresent(table, (_, n) => if (n > 1) n - 1 else null)
          }
      }
      thread.setDaemon(true)
      thread.start()
    }
  }

  /**
   * Whether a build of this table's index with statistics is under way in the background: a read
   * without filters then builds its index with statistics too, so that its index (which the cache
   * keeps in place of older ones) still serves the filtered reads that asked for the build.
   */
  def statsWanted(spark: SparkSession, root: String, tableId: String): Boolean =
    buildsOf(spark).withStats.containsKey((root, tableId))

  /**
   * A foreground read begins (its table's snapshot loads, before its query is planned and its
   * execution starts, which may take a while on a big log): the running builds' jobs yield now, and
   * no build (re)starts for a moment ([[ForegroundQueries]] holds them) or until the application is
   * idle again, whichever is later. Nothing to do without running builds, or on a build's own
   * thread.
   */
  def yieldTo(spark: SparkSession): Unit = {
    val sc = spark.sparkContext
    val own = sc.getLocalProperty("spark.scheduler.pool") == BackgroundTag
    if (!own && !buildsOf(spark).running.isEmpty) ForegroundQueries.begin(sc)
  }

  /** Whether a background build of this table version is running (tests). */
  def isRunning(spark: SparkSession, root: String, tableId: String, version: Long): Boolean =
    buildsOf(spark).running.contains((root, tableId, version))
}
