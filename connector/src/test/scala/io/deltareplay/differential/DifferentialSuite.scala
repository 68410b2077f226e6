package io.deltareplay.differential

import scala.util.Random

import io.deltareplay.test.DeltaOracle
import org.scalatest.Outcome
import org.scalatest.funsuite.AnyFunSuite

/**
 * The short run of the differential test (part of `./dev test`): a few tables whose shapes together
 * cover every feature of the generator ([[Feature.all]]), each read after every step of its
 * history. Split in two suites ([[DifferentialSuite]], [[DifferentialSecondSuite]]) so that `./dev
 * test` runs the halves in two JVMs side by side (build.sbt).
 */
object ShortRun {
  import ColumnType._
  import Tables.Shape

  /** A table of the short run: its seed and shape, and whether a stream reads it. */
  final case class Profile(seed: Long, shape: Shape, stream: Boolean) {

    /** The features this table must exercise (its shape's and what every run does). */
    def features: Set[String] = {
      val s = shape
      Set(
        Some(Feature.CmName).filter(_ => s.columnMapping == "name"),
        Some(Feature.CmId).filter(_ => s.columnMapping == "id"),
        Some(Feature.Dv).filter(_ => s.deletionVectors),
        Some(Feature.QuotedNames).filter(_ => s.quotedNames),
        Some(Feature.Nested).filter(_ => s.nested),
        Some(Feature.GeneratedPartition).filter(_ => s.generatedPartition),
        Some(Feature.StatsJsonOnly).filter(_ => s.statsJsonOnly),
        Some(Feature.TimeZone).filter(_ => s.timeZone != "UTC"),
        Some(Feature.Stream).filter(_ => stream)
      ).flatten ++ s.partitions.map(Feature.partition) ++ s.include ++
        Set(Feature.TravelVersion, Feature.TravelTimestamp, Feature.Reused)
    }
  }

  val first: Seq[Profile] = Seq(
    Profile(
      20261128L,
      Shape(
        columnMapping = "name",
        deletionVectors = true,
        quotedNames = true,
        nested = true,
        partitions = Seq(String_, Date_),
        generatedPartition = false,
        statsJsonOnly = false,
        timeZone = "America/Los_Angeles",
        steps = 1,
        include = Seq(
          Feature.Rename,
          Feature.DropThenAdd,
          Feature.Drop,
          Feature.Merge,
          Feature.V2,
          Feature.Cleanup
        )
      ),
      stream = true
    )
  )

  val second: Seq[Profile] = Seq(
    Profile(
      20261129L,
      Shape(
        columnMapping = "id",
        deletionVectors = true,
        quotedNames = false,
        nested = true,
        partitions = Seq(Boolean_, Int_, Long_),
        generatedPartition = false,
        statsJsonOnly = false,
        timeZone = "UTC",
        steps = 1,
        include = Seq(Feature.Delete, Feature.Add, Feature.Optimize, Feature.Classic)
      ),
      stream = false
    ),
    Profile(
      20261130L,
      Shape(
        columnMapping = "none",
        deletionVectors = false,
        quotedNames = true,
        nested = false,
        partitions = Seq(Timestamp_, Decimal_(10, 2)),
        generatedPartition = true,
        statsJsonOnly = true,
        timeZone = "Asia/Kolkata",
        steps = 1,
        include = Seq(
          Feature.Widen,
          Feature.IndexedCols,
          Feature.MultiPart,
          Feature.Update,
          Feature.StatsColumns,
          Feature.DvLater,
          Feature.CmLater,
          Feature.Rename
        )
      ),
      stream = true
    )
  )

  /**
   * The table of the lanes on the other Spark lines ([[DifferentialLineSuite]]): the reads that
   * differ between Spark versions (column mapping by name across a rename, deletion vectors, a
   * nested column, string and date partitions, a stream) over a shorter history than [[first]]'s,
   * whose writes took most of a lane's time (73 of 95 s in a clean-clone run).
   */
  val line: Seq[Profile] = Seq(
    Profile(
      20261205L,
      Shape(
        columnMapping = "name",
        deletionVectors = true,
        quotedNames = false,
        nested = true,
        partitions = Seq(String_, Date_),
        generatedPartition = false,
        statsJsonOnly = false,
        timeZone = "America/Los_Angeles",
        steps = 1,
        include = Seq(Feature.Rename, Feature.Merge)
      ),
      stream = true
    )
  )
}

class DifferentialSuite extends DifferentialRun(ShortRun.first) {
  test("the short run's tables cover every feature of the generator") {
    val covered = (ShortRun.first ++ ShortRun.second).flatMap(_.features).toSet
    assert(Feature.all.filterNot(covered.contains).isEmpty)
  }
}

class DifferentialSecondSuite extends DifferentialRun(ShortRun.second)

/**
 * The differential on the Spark 4.0 and 4.1 lanes of `./dev test` (project/SparkLines.scala): not
 * run on the default line, whose short run has the heavier tables above (build.sbt;
 * `-Dspark.line.tests=all` runs it there too).
 */
class DifferentialLineSuite extends DifferentialRun(ShortRun.line)

/**
 * The differential test against delta-spark V1 (see [[Differential]]). By default the short run of
 * `profiles` (each table read after each step, then 6 more queries, each answered in `auto` and in
 * one forced mode in turn). `./dev fuzz --minutes N [--seed S]` runs this suite for N minutes with
 * fresh seeds, random shapes and every mode for every query (`testOnly
 * io.deltareplay.differential.DifferentialSuite -- -Dminutes=N -Dseed=S`) and prints a summary
 * block that docs/correctness.md takes as it is.
 */
abstract class DifferentialRun(profiles: Seq[ShortRun.Profile])
    extends AnyFunSuite
    with DeltaOracle
    with Differential {
  private var config: Map[String, Any] = Map.empty

  override def withFixture(test: NoArgTest): Outcome = {
    config = test.configMap.toMap
    super.withFixture(test)
  }

  private def setting(key: String): Option[String] = config.get(key).map(_.toString)

  private def commit: String =
    try {
      val root = sys.props.getOrElse("deltareplay.test.root", ".")
      scala.sys.process.Process(Seq("git", "-C", root, "rev-parse", "--short", "HEAD")).!!.trim
    } catch { case scala.util.control.NonFatal(_) => "unknown" }

  test(
    s"generated tables and queries answer as V1 does (seeds ${profiles.map(_.seed).mkString(", ")})"
  ) {
    withTempDir { dir =>
      val minutes = setting("minutes").map(_.toDouble)
      val started = System.nanoTime()
      def elapsedMinutes = (System.nanoTime() - started) / 6e10
      var stats = RunStats.empty
      val (first, last) = minutes match {
        case None =>
          profiles.foreach { p =>
            val s = run(
              dir,
              p.seed,
              Some(p.shape),
              perStep = 1,
              atEnd = 10,
              allModes = false,
              streams = p.stream
            )
            s.differences.foreach(d => System.err.println(d.report + "\n"))
            val missed = p.features.filterNot(s.features.contains)
            assert(missed.isEmpty, s"seed ${p.seed} did not exercise ${missed.mkString(", ")}")
            stats = stats + s
          }
          (profiles.head.seed, profiles.last.seed)
        case Some(m) =>
          val from = setting("seed").map(_.toLong).getOrElse(new Random().nextLong() & 0xffffffffL)
          var seed = from
          while (elapsedMinutes < m) {
            val s = run(dir, seed, None, perStep = 2, atEnd = 20, allModes = true, streams = true)
            s.differences.foreach(d => System.err.println(d.report + "\n"))
            stats = stats + s
            println(f"differential: seed $seed, ${elapsedMinutes * 60}%.0f s: ${stats.summary}")
            seed += 1
          }
          (from, seed - 1)
      }
      println(stats.block(first, last, elapsedMinutes * 60, commit))
      println(
        "differential time per part: " +
          timeSpent.toSeq.sortBy(-_._2).map { case (k, v) => f"$k $v%.0f s" }.mkString(", ")
      )
      assert(stats.queries > 0, stats.summary)
      assert(stats.differences.isEmpty, stats.differences.map(_.report).mkString("\n\n"))
    }
  }
}
