import sbt._
import sbt.Keys._

/**
 * How the connector's test suites run: forked JVMs with the flags Spark needs on JDK 17, grouped so
 * that one JVM holds one SparkContext (the `*ClusterSuite`s share a `local-cluster` one, each
 * `*SmallHeapSuite` gets a 1 GB JVM of its own, the other suites share two `local[2]` JVMs split by
 * measured run time), two at a time on this 2-core machine kind.
 */
object TestJvms {

  /** The pyspark installation that local-cluster executors are launched from. */
  val sparkHome =
    settingKey[File]("SPARK_HOME for local-cluster test executors (the pyspark package)")

  /**
   * Forked test JVMs running at once: 2 on this 2-core machine kind; DELTAREPLAY_TEST_LANES=N
   * changes it. sbt's default restrictions hold forked test groups to one at a time, and a rule
   * added to them cannot loosen that: the list is given whole.
   */
  val lanes: Int = sys.env.get("DELTAREPLAY_TEST_LANES").map(_.toInt).getOrElse(2)

  /**
   * The lane each JVM runs in when there are two ([[lanes]]): a tag per lane, each limited to one
   * JVM at a time, so the pairs hold whichever group sbt starts first (with any other lane count no
   * pairing: one lane runs all, or enough lanes run every group at once).
   */
  private val laneA = Tags.Tag("lane-a")
  private val laneB = Tags.Tag("lane-b")
  private val pairs: Map[String, Tags.Tag] =
    if (lanes == 2)
      Map("local-1" -> laneA, "small" -> laneA, "local-2" -> laneB, "cluster" -> laneB)
    else Map.empty

  val concurrentRestrictions: Seq[Tags.Rule] = Seq(
    // (all tasks: at least one per lane, or the lanes past the core count would wait)
    Tags.limitAll(Seq(2, lanes, java.lang.Runtime.getRuntime.availableProcessors).max),
    Tags.limit(Tags.ForkedTestGroup, lanes),
    Tags.exclusiveGroup(Tags.Clean),
    Tags.limit(laneA, 1),
    Tags.limit(laneB, 1)
  )

  /**
   * Ten times HotSpot's default thresholds for C2 (method calls, loop iterations, both), C1's
   * unchanged. A test JVM runs thousands of small queries, each through a little of much code: its
   * JIT compiles were the largest share of its CPU (the compiler threads: 44% of the CPU of its
   * threads in a 146 s run of four suites, JFR), and most of them pay back only in a long run of
   * the same code. Measured alone, the forked JVM with sbt around it (2026-12-05, user + sys):
   * DifferentialSuite, CommandMatrixSuite and StreamingSuite 431 s with the defaults, 374 s at 3x,
   * 342 s at 10x, 337 s at 30x, 434 s with C1 only (which wins on short runs: four lighter suites
   * took 261 s with the defaults, 225 s at 3x, 207 s with C1 only). Local-cluster executors run C1
   * only (SparkSessions.testJvmOptions).
   */
  val jitThresholds: Seq[String] = Seq(
    "Tier4InvocationThreshold=50000",
    "Tier4MinInvocationThreshold=6000",
    "Tier4CompileThreshold=150000",
    "Tier4BackEdgeThreshold=400000"
  ).map("-XX:" + _)

  /** JDK 17 module openings Spark needs (the same list Spark's launcher adds). */
  val jdk17Opens: Seq[String] = Seq(
    "java.base/java.lang",
    "java.base/java.lang.invoke",
    "java.base/java.lang.reflect",
    "java.base/java.io",
    "java.base/java.net",
    "java.base/java.nio",
    "java.base/java.util",
    "java.base/java.util.concurrent",
    "java.base/java.util.concurrent.atomic",
    "java.base/jdk.internal.ref",
    "java.base/sun.nio.ch",
    "java.base/sun.nio.cs",
    "java.base/sun.security.action",
    "java.base/sun.util.calendar"
  ).map(p => s"--add-opens=$p=ALL-UNNAMED") ++ Seq(
    "-Djdk.reflect.useDirectMethodHandle=false",
    "-Dio.netty.tryReflectionSetAccessible=true"
  )

  /**
   * The suites of the first `local[2]` JVM; the others share the second. Seconds per suite from the
   * JUnit reports of clean-clone runs (two JVMs at a time beside the Python side; expressions
   * interpreted). With two lanes each lane runs a fixed pair of JVMs ([[pairs]]): this one and the
   * small-heap JVM, the second local one and the cluster one, so that sbt, which starts forked
   * groups in no set order, cannot pair the longer local JVM with the cluster one (as in the run of
   * 2026-12-04 23:22: 1,185 s of suites on one lane, 817 on the other). In the first paired run
   * (2026-12-05 00:44, with ObjectStoreSuite moved here for a while) the lanes held 1,198 and 1,021
   * s, and the whole run was no shorter: it is CPU-bound, so the pairs fix the order, not the time.
   * ObjectStoreSuite is back in `local-2`.
   */
  val firstLocalJvm: Set[String] = Set(
    "DifferentialSuite",
    "CheckpointReadSuite",
    "SnapshotIndexSuite",
    "FirstReadSuite",
    "BackgroundBuildSuite",
    "BatchReadSuite",
    "DeletionVectorReadSuite",
    "CorrectnessSuite",
    "ExecutorPlanningSuite",
    "ReplayRulesSuite",
    "MetadataAggregatesSuite",
    "MetaCacheSuite",
    "TableChangesSuite",
    "CommandMatrixSuite"
  )

  lazy val settings: Seq[Setting[_]] = Seq(
    sparkHome := {
      val fromEnv = sys.env.get("SPARK_HOME").map(file)
      fromEnv.getOrElse {
        val venv = (ThisBuild / baseDirectory).value / ".venv" / "lib"
        val found = Option(venv.listFiles()).toSeq.flatten
          .map(_ / "site-packages" / "pyspark")
          .find(_.isDirectory)
        found.getOrElse(venv / "python3.11" / "site-packages" / "pyspark")
      }
    },
    Test / fork := true,
    Test / testForkedParallel := false,
    Test / envVars := Map(
      "SPARK_HOME" -> sparkHome.value.getAbsolutePath,
      "SPARK_SCALA_VERSION" -> "2.13",
      "SPARK_LOCAL_IP" -> "127.0.0.1"
    ),
    Test / javaOptions ++= jdk17Opens ++ Seq(
      "-Xmx4g",
      "-Xss4m",
      // The parallel collector, not G1: on 2 cores G1's concurrent work competes with the tests
      // for CPU. Measured on five suites (31 tests, two lanes): 218 s with G1, 168 s with this,
      // 177 s with the serial collector. Executors of local-cluster suites get the same flag
      // (SparkSessions.testJvmOptions).
      "-XX:+UseParallelGC",
      "-Dfile.encoding=UTF-8",
      "-Dspark.ui.enabled=false",
      "-Dspark.sql.shuffle.partitions=2",
      "-Dspark.ui.showConsoleProgress=false",
      s"-Dspark.sql.warehouse.dir=${(target.value / "spark-warehouse").getAbsolutePath}",
      s"-Dderby.system.home=${(target.value / "derby").getAbsolutePath}",
      s"-Dlog4j2.configurationFile=${(Test / resourceDirectory).value / "log4j2-test.properties"}",
      // the checkout, for suites that start a project script (scripts/s3proxy.sh) or read docs
      s"-Ddeltareplay.test.root=${(ThisBuild / baseDirectory).value.getAbsolutePath}"
    ) ++ jitThresholds,
    // Seeded property suites (DataSkippingSuite, BinnerSuite): DELTAREPLAY_TEST_SEED=N replays a
    // printed seed, DELTAREPLAY_TEST_TABLES=N widens DataSkippingSuite's run.
    Test / javaOptions ++= sys.env.toSeq.collect {
      case (k, v) if k.startsWith("DELTAREPLAY_TEST_") =>
        s"-Ddeltareplay.test.${k.stripPrefix("DELTAREPLAY_TEST_").toLowerCase}=$v"
    },
    // Executors of local-cluster suites run in other JVMs launched from SPARK_HOME;
    // they get our classes, the test classes and the non-Spark jars (delta, scalatest).
    Test / javaOptions += {
      val sparkJars =
        Option((sparkHome.value / "jars").listFiles()).toSeq.flatten.map(_.getName).toSet
      val cp = (Test / fullClasspath).value.files.filter { f =>
        f.isDirectory || !sparkJars.contains(f.getName)
      }
      s"-Ddeltareplay.test.executorClasspath=${cp.map(_.getAbsolutePath).mkString(java.io.File.pathSeparator)}"
    },
    // One JVM holds one SparkContext. Each JVM gets its own warehouse and Derby directories, so
    // catalog tables of suites running at the same time never meet. Few JVMs, because the run
    // keeps both cores busy and its time is its CPU seconds: every JVM compiles Spark's and
    // delta-spark's hot code again (a 40 s suite in its own JVM spent 57 s of CPU in the JIT
    // compilers) and starts its own session; with six shared JVMs and one per cluster suite the
    // Scala side took 1,662 s.
    Test / testGrouping := {
      val tests = (Test / definedTests).value
      val opts = (Test / javaOptions).value.toVector
      val env = (Test / envVars).value
      val scratch = target.value
      def jvm(name: String, heap: Option[String]) = {
        val own = opts
          .filterNot(o => o.startsWith("-Dspark.sql.warehouse.dir=") || o.startsWith("-Dderby."))
          .filterNot(o => heap.isDefined && o.startsWith("-Xmx")) ++ heap.toSeq ++ Seq(
          s"-Dspark.sql.warehouse.dir=${(scratch / "spark-warehouse" / name).getAbsolutePath}",
          s"-Dderby.system.home=${(scratch / "derby" / name).getAbsolutePath}"
        )
        Tests.SubProcess(ForkOptions().withRunJVMOptions(own).withEnvVars(env))
      }
      val (cluster, rest) = tests.partition(_.name.endsWith("ClusterSuite"))
      val (small, local) = rest.partition(_.name.endsWith("SmallHeapSuite"))
      val (one, two) = local.partition(t => firstLocalJvm(t.name.split('.').last))
      def group(name: String, lane: String, ts: Seq[TestDefinition], heap: Option[String]) =
        Tests.Group(name, ts, jvm(name, heap), pairs.get(lane).map(_ -> 1).toSeq)
      Seq("local-1" -> one, "local-2" -> two, "cluster" -> cluster)
        .collect { case (name, ts) if ts.nonEmpty => group(name, name, ts, None) } ++
        small.map(t => group(t.name, "small", Seq(t), Some("-Xmx1g")))
    },
    // Forked JVMs run side by side (two at a time: concurrentRestrictions). A suite drives Spark
    // from one thread most of the time, so a second lane uses the second core.
    Test / parallelExecution := true,
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oDF")
  )
}
