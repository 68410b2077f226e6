package io.deltareplay.differential

import scala.util.Random

import io.deltareplay.test.DeltaOracle
import org.scalatest.Outcome
import org.scalatest.funsuite.AnyFunSuite

/**
 * The differential test against delta-spark V1 (see [[Differential]]). By default a short run with
 * a fixed seed (part of `./dev test`); `./dev fuzz --minutes N [--seed S]` runs it for N minutes
 * with fresh seeds and every mode for every query: `testOnly
 * io.deltareplay.differential.DifferentialSuite -- -Dminutes=N -Dseed=S`.
 */
class DifferentialSuite extends AnyFunSuite with DeltaOracle with Differential {
  private var config: Map[String, Any] = Map.empty

  override def withFixture(test: NoArgTest): Outcome = {
    config = test.configMap.toMap
    super.withFixture(test)
  }

  private def setting(key: String): Option[String] = config.get(key).map(_.toString)

  test("generated tables and queries answer as V1 does") {
    withTempDir { dir =>
      val minutes = setting("minutes").map(_.toDouble)
      val started = System.nanoTime()
      def elapsedMinutes = (System.nanoTime() - started) / 6e10
      val firstSeed = setting("seed").map(_.toLong).getOrElse {
        if (minutes.isDefined) new Random().nextLong() & 0xffffffffL else 20261124L
      }
      var stats = RunStats.empty
      var seed = firstSeed
      def more = minutes match {
        case Some(m) => elapsedMinutes < m
        case None => stats.queries < 500
      }
      while (more) {
        val perTable =
          if (minutes.isDefined) 42 else 100 // the short run: fewer tables, more queries each
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
        f"differential (first seed $firstSeed, last ${seed - 1}, ${elapsedMinutes * 60}%.0f s): " +
          stats.summary
      )
      assert(stats.queries >= (if (minutes.isDefined) 1 else 500), stats.summary)
      assert(stats.differences.isEmpty, stats.differences.map(_.report).mkString("\n\n"))
    }
  }
}
