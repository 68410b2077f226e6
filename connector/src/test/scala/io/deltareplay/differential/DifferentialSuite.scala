package io.deltareplay.differential

import scala.util.Random

import io.deltareplay.test.DeltaOracle
import org.scalatest.Outcome
import org.scalatest.funsuite.AnyFunSuite

/**
 * The differential test against delta-spark V1 (see [[Differential]]). By default a short run with
 * fixed seeds (part of `./dev test`): tables from `firstSeed` on until at least `minQueries`
 * queries were answered. The short run is split in two suites, this one and
 * [[DifferentialSecondSuite]], so that `./dev test` runs the halves in two JVMs side by side
 * (build.sbt); together they are the run of seeds 20261124-20261125 and 20261127-20261128, 120
 * queries or more (30 per table, two answers each: the short run fits the test run's time budget; a
 * fuzz run answers many more, in every mode). `./dev fuzz --minutes N [--seed S]` runs this suite
 * for N minutes with fresh seeds and every mode for every query: `testOnly
 * io.deltareplay.differential.DifferentialSuite -- -Dminutes=N -Dseed=S`.
 */
class DifferentialSuite extends DifferentialRun(firstSeed = 20261124L, minQueries = 60)

/** The second half of the short run: seeds 20261127 and on (see [[DifferentialSuite]]). */
class DifferentialSecondSuite extends DifferentialRun(firstSeed = 20261127L, minQueries = 60)

abstract class DifferentialRun(firstSeed: Long, minQueries: Int)
    extends AnyFunSuite
    with DeltaOracle
    with Differential {
  private var config: Map[String, Any] = Map.empty

  override def withFixture(test: NoArgTest): Outcome = {
    config = test.configMap.toMap
    super.withFixture(test)
  }

  private def setting(key: String): Option[String] = config.get(key).map(_.toString)

  test(s"generated tables and queries answer as V1 does (seeds from $firstSeed)") {
    withTempDir { dir =>
      val minutes = setting("minutes").map(_.toDouble)
      val started = System.nanoTime()
      def elapsedMinutes = (System.nanoTime() - started) / 6e10
      val first = setting("seed").map(_.toLong).getOrElse {
        if (minutes.isDefined) new Random().nextLong() & 0xffffffffL else firstSeed
      }
      var stats = RunStats.empty
      var seed = first
      def more = minutes match {
        case Some(m) => elapsedMinutes < m
        case None => stats.queries < minQueries
      }
      while (more) {
        val perTable =
          if (minutes.isDefined) 42 else 30 // the short run: two tables per suite
        val s =
          run(dir, seed, queries = perTable, allModes = minutes.isDefined, streams = seed % 3 == 0)
        stats = stats + s
        s.differences.foreach(d => System.err.println(d.report + "\n"))
        if (stats.tables % 5 == 0) {
          println(f"differential: seed $seed, ${elapsedMinutes * 60}%.0f s: ${stats.summary}")
        }
        seed += 1
      }
      println(
        f"differential (first seed $first, last ${seed - 1}, ${elapsedMinutes * 60}%.0f s): " +
          stats.summary
      )
      println(
        "differential time per part: " +
          timeSpent.toSeq.sortBy(-_._2).map { case (k, v) => f"$k $v%.0f s" }.mkString(", ")
      )
      assert(stats.queries >= (if (minutes.isDefined) 1 else minQueries), stats.summary)
      assert(stats.differences.isEmpty, stats.differences.map(_.report).mkString("\n\n"))
    }
  }
}
