package io.deltareplay.internal.read

import io.deltareplay.DeltaReplayOptions
import io.deltareplay.test.DeltaOracle
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.mapreduce.{JobID, TaskAttemptID, TaskID, TaskType}
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl
import org.apache.spark.sql.DataFrame
import org.scalatest.funsuite.AnyFunSuite

/**
 * A scan's file readers share one Hadoop configuration ([[SharedJobConf]]) where Spark's reader
 * writes nothing to it (no pushed Parquet filter), with V1's answers; a reader that would change it
 * fails loudly.
 */
class SharedJobConfSuite extends AnyFunSuite with DeltaOracle {

  test("a task attempt context uses the shared configuration as it is; a change to it throws") {
    val plain = new Configuration(false)
    plain.set("k", "v")
    val shared = new SharedJobConf(plain)
    val attempt = new TaskAttemptID(new TaskID(new JobID(), TaskType.MAP, 0), 0)
    // Hadoop copies every property of any other configuration into the context's own
    assert(new TaskAttemptContextImpl(shared, attempt).getConfiguration eq shared)
    assert(!(new TaskAttemptContextImpl(plain, attempt).getConfiguration eq plain))
    shared.set("k", "v") // the value already there: goes through
    val changed = intercept[IllegalStateException](shared.set("k", "w"))
    assert(changed.getMessage.contains("'k'"), changed.getMessage)
    assert(changed.getMessage.contains(DeltaReplayOptions.ShareHadoopConfKey))
    intercept[IllegalStateException](shared.setInt("n", 1))
    intercept[IllegalStateException](shared.unset("k"))
    assert(shared.get("k") == "v" && shared.get("n") == null)
    shared.unset("absent")
  }

  test("readers share the configuration only without a pushed Parquet filter; answers are V1's") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark
        .range(0, 6000, 1, 6)
        .selectExpr("id", "cast(id % 7 as string) AS s")
        .write
        .format("delta")
        .save(path)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 1000 = 3") // deletion vectors
      def factory(df: DataFrame) = {
        val Seq(scan) = deltaReplayScans(df)
        scan.readerFactory().asInstanceOf[DeltaReaderFactory]
      }
      def check(df: DataFrame, expected: DataFrame, shares: Boolean) = {
        assert(sorted(df) == asOracle(sorted(expected)))
        val f = factory(df)
        assert(f.shareConf == shares)
        assert(f.conf.value.value.isInstanceOf[SharedJobConf] == shares)
      }
      check(ours(path), v1(path), shares = true)
      check(ours(path).where("s = '3'"), v1(path).where("s = '3'"), shares = false)
      withConf(DeltaReplayOptions.ShareHadoopConfKey -> "false") {
        check(ours(path), v1(path), shares = false)
      }
    }
  }
}
