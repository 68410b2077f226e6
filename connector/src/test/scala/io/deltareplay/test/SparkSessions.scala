package io.deltareplay.test

import java.io.File
import java.nio.file.Files

import org.apache.spark.sql.SparkSession
import org.scalatest.{BeforeAndAfterAll, Suite}

/** Session settings every suite uses: delta-spark's extension and catalog plus ours. */
object SparkSessions {
  val extensions = "io.delta.sql.DeltaSparkSessionExtension,io.deltareplay.DeltaReplayExtension"

  def builder(master: String): SparkSession.Builder =
    SparkSession
      .builder()
      .master(master)
      .appName("delta-replay-tests")
      .config("spark.ui.enabled", "false")
      .config("spark.ui.showConsoleProgress", "false")
      .config("spark.sql.shuffle.partitions", "2")
      .config("spark.default.parallelism", "2")
      .config("spark.sql.session.timeZone", "UTC")
      .config("spark.driver.host", "127.0.0.1")
      .config("spark.sql.extensions", extensions)
      .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
      .config("spark.databricks.delta.snapshotPartitions", "2")
      .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "2")
      .config(testDefaults)
      .config(NoForkLocalFileSystem.sessionConf)

  /**
   * The test sessions' default: expressions evaluated by Spark's interpreted implementations, no
   * whole-stage code generation, no adaptive query execution. Spark tests each against the other
   * way, so the answers are the same; what differs is CPU, and the test run is CPU-bound (both
   * cores busy 97% of a clean-clone run). Compiling code for each write's statistics, each oracle
   * plan and each scan of a few rows was a fifth to a quarter of the tests' CPU (CorrectnessSuite
   * alone: 129 s -> 99 s); re-planning each small query stage by stage took a sixth of what was
   * left (DifferentialSuite with CorrectnessSuite alone: 283-287 s -> 240 s of CPU, 2026-12-02).
   * Suites and tests that cover this connector's generated code (projections and predicates it
   * creates, the vectors a generated columnar-to-row loop reads) or its scans inside adaptive
   * plans, and every `auto`-mode answer of the differential test, run with Spark's defaults:
   * [[SparkSessions.sparkDefaults]].
   */
  val testDefaults: Map[String, String] = Map(
    "spark.sql.codegen.wholeStage" -> "false",
    "spark.sql.codegen.factoryMode" -> "NO_CODEGEN",
    "spark.sql.adaptive.enabled" -> "false"
  )

  /**
   * Spark's defaults: whole-stage code generation, generated expressions with a fallback, adaptive
   * query execution.
   */
  val sparkDefaults: Map[String, String] = Map(
    "spark.sql.codegen.wholeStage" -> "true",
    "spark.sql.codegen.factoryMode" -> "FALLBACK",
    "spark.sql.adaptive.enabled" -> "true"
  )

  /**
   * JVM flags of executor JVMs: the test JVMs' collector (build.sbt says why), and the client
   * compiler only: the executors of the cluster suites run small tasks for a few minutes, where
   * C2's compiles of Spark's task code are CPU spent for nothing in a CPU-bound run (as for the
   * Python tests' short-lived JVMs, docs/development.md).
   */
  val testJvmOptions = "-XX:+UseParallelGC -XX:TieredStopAtLevel=1"

  /** The classpath local-cluster executors need: set by build.sbt. */
  def executorClasspath: String =
    sys.props.getOrElse(
      "deltareplay.test.executorClasspath",
      throw new IllegalStateException(
        "deltareplay.test.executorClasspath is not set: run the suite through sbt (build.sbt sets it)"
      )
    )
}

/**
 * A suite whose tests run with Spark's defaults ([[SparkSessions.sparkDefaults]]: code generation,
 * adaptive execution), set for the suite and put back to the test default after it.
 */
trait SparkDefaults extends BeforeAndAfterAll { self: Suite with SharedSparkSession =>
  override protected def beforeAll(): Unit = {
    super.beforeAll()
    SparkSessions.sparkDefaults.foreach { case (k, v) => spark.conf.set(k, v) }
  }

  override protected def afterAll(): Unit =
    try SparkSessions.testDefaults.foreach { case (k, v) => spark.conf.set(k, v) }
    finally super.afterAll()
}

/** One local[2] SparkSession shared by every suite of the test JVM. */
trait SharedSparkSession extends BeforeAndAfterAll { self: Suite =>
  protected def spark: SparkSession = SharedSparkSession.session

  /** A fresh state of this connector for each suite: no suite sees another's caches. */
  override protected def beforeAll(): Unit = {
    super.beforeAll()
    io.deltareplay.internal.session.SessionState.clear(spark)
  }

  /** The settings of a read with `options` and the session's keys (what a load resolves). */
  protected def sessionConf: io.deltareplay.internal.scan.ReadConf =
    io.deltareplay.internal.scan.ReadConf(spark, Map.empty)

  protected def withTempDir[T](f: File => T): T = {
    val dir = Files.createTempDirectory("delta-replay-test").toFile
    try f(dir)
    finally org.apache.commons.io.FileUtils.deleteQuietly(dir)
  }
}

object SharedSparkSession {
  lazy val session: SparkSession = {
    val s = SparkSessions.builder("local[2]").getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    s
  }
}

/**
 * A SparkSession on `local-cluster[2,1,1024]`: two executors in their own JVMs, launched from
 * SPARK_HOME (the pyspark installation) with this build's classes on their classpath. Suites using
 * it must be named `*ClusterSuite`: build.sbt forks them together into one JVM of their own (a JVM
 * holds one SparkContext), where they share this session and its two executors, as the other suites
 * share the `local[2]` one. It stops when the JVM exits.
 */
trait LocalClusterSparkSession extends SharedSparkSession { self: Suite =>
  override protected def spark: SparkSession = LocalClusterSparkSession.session
}

object LocalClusterSparkSession {
  lazy val session: SparkSession = {
    require(sys.env.contains("SPARK_HOME"), "SPARK_HOME must point at the pyspark installation")
    val s = SparkSessions
      .builder("local-cluster[2,1,1024]")
      .config("spark.executor.extraClassPath", SparkSessions.executorClasspath)
      .config("spark.executor.memory", "1024m")
      .config("spark.executor.extraJavaOptions", SparkSessions.testJvmOptions)
      .getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    // stopped cleanly at JVM exit, before the worker's hook kills the executors under it
    org.apache.spark.SparkPrivateAccess.beforeSparkShutdownHooks(() => s.stop())
    s
  }
}
