/**
 * The Spark lines this build compiles against, one source tree for all. The default line is the one
 * build.sbt's own versions name (Spark 4.2.0); `build/sbt -Dspark.line=4.1 ...` (or
 * DELTAREPLAY_SPARK=4.1 in the environment) picks another.
 *
 * Each line names its Spark (the newest patch on Maven Central), the Scala and Hadoop of that Spark
 * (the `scala.version` and `hadoop.version` of its `spark-parent_2.13` POM: the scala-library and
 * Hadoop jars its pyspark ships) and the AWS SDK v2 that Hadoop's hadoop-aws is built against.
 * delta-spark is `io.delta:delta-spark_<line>_2.13`. The sources that differ between lines live in
 * `connector/src/{main,test}/scala-spark-<line>/` (io.deltareplay.internal.compat.SparkShim); the
 * artifact is `delta-replay-spark_<line>_2.13`.
 */
object SparkLines {

  case class SparkLine(name: String, spark: String, scala: String, hadoop: String, awsSdk: String)

  /** The lines besides the default one. */
  val older: Seq[SparkLine] = Seq(
    // hadoop-aws 3.4.1 is built against the SDK bundle 2.24.6, a version whose s3-transfer-manager
    // module Maven Central does not serve: 2.24.8 is the next that has all four
    SparkLine("4.0", spark = "4.0.4", scala = "2.13.16", hadoop = "3.4.1", awsSdk = "2.24.8"),
    SparkLine("4.1", spark = "4.1.3", scala = "2.13.17", hadoop = "3.4.2", awsSdk = "2.29.52")
  )

  /**
   * The suites the lanes of `./dev test` run on the lines besides the default: the API that differs
   * between lines (streaming relations, DataSourceV2Relation, routed reads and streams, filter
   * pushdown: RoutingSuite), the wiring (WiringSuite), the statistics parser built on Spark's
   * internal JSON classes, held to from_json's answers (internal/log/StatsJsonToStructSuite,
   * internal/log/StatsReaderSuite: the scan of plain documents and the line's Jackson alike), and
   * the oracle on a generated table (differential/DifferentialLineSuite, defined in the folder's
   * DifferentialSuite.scala: its history read after every step by V1 and by this connector, and a
   * stream of it beside DeltaSource). Paths under the test tree's io/deltareplay, without ".scala"
   * (the last part names the suite's class).
   */
  val laneSuites: Seq[String] = Seq(
    "RoutingSuite",
    "WiringSuite",
    "internal/log/StatsJsonToStructSuite",
    "internal/log/StatsReaderSuite",
    "differential/DifferentialLineSuite"
  )

  /** Folders under io/deltareplay whose files a lane compiles with its suites (their helpers). */
  private val laneHelpers: Seq[String] = Seq("test", "differential")

  /** Whether a lane runs the suite of this class name (others compiled beside them do not run). */
  def laneRuns(className: String): Boolean =
    laneSuites.exists(s => className.split('.').last == s.split('/').last)

  /** Suites that run on the lanes only, not on the default line (unless -Dspark.line.tests=all). */
  def laneOnly(className: String): Boolean = className.split('.').last == "DifferentialLineSuite"

  /**
   * The test sources a lane compiles: its suites, the folders of their helpers ([[laneHelpers]])
   * and anything outside the common tree (the line's own test sources), not the 50-odd other
   * suites: compiling those for each line cost the lanes a minute of CPU apiece.
   * -Dspark.line.tests=all keeps them all (to run any suite on the line).
   */
  def laneSources(all: Seq[java.io.File], testRoot: java.io.File): Seq[java.io.File] =
    if (allTests) all
    else {
      val root = testRoot.toPath.resolve("io/deltareplay")
      all.filter { f =>
        val p = f.toPath
        !p.startsWith(root) || laneHelpers.exists(h => p.startsWith(root.resolve(h))) ||
        laneSuites.exists(s => p == root.resolve(s + ".scala"))
      }
    }

  /** -Dspark.line.tests=all: a lane compiles and may run every suite. */
  def allTests: Boolean = sys.props.get("spark.line.tests").contains("all")

  /** The line of this sbt session: -Dspark.line, else DELTAREPLAY_SPARK, else `default`. */
  def current(default: SparkLine): SparkLine = {
    val all = older :+ default
    val asked = sys.props.get("spark.line").orElse(sys.env.get("DELTAREPLAY_SPARK"))
    asked.fold(default) { n =>
      all.find(_.name == n).getOrElse {
        sys.error(s"Spark line $n: this build knows ${all.map(_.name).mkString(", ")}")
      }
    }
  }
}
