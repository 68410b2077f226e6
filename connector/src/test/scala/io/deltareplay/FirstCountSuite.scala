package io.deltareplay

import io.deltareplay.internal.index.IndexCache
import io.deltareplay.test.DeltaOracle
import org.apache.spark.sql.delta.DeltaLog
import org.apache.spark.sql.functions.col
import org.scalatest.funsuite.AnyFunSuite

/**
 * The first `count(*)` of a table with no index: counted in the replay's tasks (only `numRecords`
 * of the statistics read, JSON or typed; no index built), as V1 counts; the whole index follows in
 * the background as after a filtered first read ([[FirstReadSuite]]).
 */
class FirstCountSuite extends AnyFunSuite with DeltaOracle {

  test(
    "a first count(*) reads only numRecords of each statistics JSON, of the whole table or some " +
      "partitions, as V1 counts; a scan never plans from those entries; a file without " +
      "statistics is counted by a scan"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      IndexCache.clear(spark)
      def rows(from: Long, to: Long) =
        spark.range(from, to).selectExpr("id", "id % 3 AS p", "concat('s', id) AS s")
      rows(0, 600)
        .repartitionByRange(30, col("id"))
        .write
        .format("delta")
        .partitionBy("p")
        .option("delta.enableDeletionVectors", "true")
        .option("delta.checkpoint.writeStatsAsStruct", "false")
        .option("delta.checkpoint.writeStatsAsJson", "true")
        .save(path)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 10 = 3") // DVs, in the checkpoint
      DeltaLog.forTable(spark, path).checkpoint()
      // after the checkpoint: a DV update of checkpoint files, an append, a remove
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 10 = 7")
      rows(600, 650).write.format("delta").mode("append").save(path)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id < 25")
      def count(where: String, table: String = path): (Seq[org.apache.spark.sql.Row], String) = {
        ours(table).createOrReplaceTempView("t_ours")
        v1(table).createOrReplaceTempView("t_v1")
        val df = spark.sql(s"SELECT count(*) FROM t_ours$where")
        val got = df.collect().toSeq
        assert(got === spark.sql(s"SELECT count(*) FROM t_v1$where").collect().toSeq, where)
        got -> DeltaReplay.scanMetricsJson(df)
      }
      val wheres = Seq("", " WHERE p = 1", " WHERE p IN (0, 2)")
      withConf(
        "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
        "spark.deltareplay.index.buildInBackground" -> "false"
      ) {
        // counted in the replay's tasks: the checkpoint files the later commits removed or gave
        // a new DV are left out there, the commits' adds counted on the driver
        wheres.foreach { where =>
          val (_, m) = count(where)
          assert(m.contains("\"aggregatesFromStats\":[\"count(*)\"]"), s"$where: $m")
          assert(m.contains("counted in the replay tasks"), m)
          assert(m.contains("distributed") && m.contains("statistics: numRecords only"), m)
        }
        assert(IndexCache.usage(spark)._1 === 0) // no index of the whole version kept
        // a scan with a data filter after them narrows by it with whole statistics: skips
        val q = "s = 's142'"
        val scan = ours(path).where(q)
        assert(sorted(scan) === sorted(v1(path).where(q)))
        val sm = deltaReplayScans(scan).head.metrics
        assert(!sm.replayMode.contains("numRecords"), sm)
        assert(sm.filesAfterSkipping < 10 && sm.liveFiles < 10, sm) // of about 50
        // the same count again: the answer the first one computed; after a commit (no index of
        // the table: the background build is off here), counted again in the replay's tasks
        val again = count("")._2
        assert(again.contains("reused: v") && again.contains("read before with no filter"), again)
        assert(!again.contains("filtered by the query"), again)
        rows(650, 660).write.format("delta").mode("append").save(path)
        val (_, recounted) = count(" WHERE p = 1")
        assert(recounted.contains("counted in the replay tasks"), recounted)
        assert(recounted.contains("checkpoint filtered by the query"), recounted)
        assert(recounted.contains("statistics: numRecords only"), recounted)
        // min/max need the whole statistics: not a numRecords-only read (DVs: scanned)
        ours(path).createOrReplaceTempView("t_ours")
        v1(path).createOrReplaceTempView("t_v1")
        val both = "SELECT count(*), max(id) FROM "
        val df = spark.sql(both + "t_ours")
        assert(df.collect().toSeq === spark.sql(both + "t_v1").collect().toSeq)
        assert(!df.queryExecution.executedPlan.toString.contains("numRecords only"))
        // a file without statistics: the count is not answered from them, a scan counts it
        withConf("spark.databricks.delta.stats.collect" -> "false") {
          rows(660, 670).write.format("delta").mode("append").save(path)
        }
        IndexCache.clear(spark)
        val (_, unanswered) = count("")
        assert(!unanswered.contains("aggregatesFromStats"), unanswered)
        // a checkpoint with typed statistics (delta-spark's default): only their numRecords read
        val typed = dir.getAbsolutePath + "/typed"
        rows(0, 300)
          .repartitionByRange(12, col("id"))
          .write
          .format("delta")
          .partitionBy("p")
          .option("delta.enableDeletionVectors", "true")
          .save(typed)
        spark.sql(s"DELETE FROM delta.`$typed` WHERE id % 10 = 3")
        DeltaLog.forTable(spark, typed).checkpoint()
        rows(300, 320).write.format("delta").mode("append").save(typed)
        Seq("", " WHERE p = 2").foreach { where =>
          val (_, m) = count(where, typed)
          assert(m.contains("statistics: numRecords only"), s"$where: $m")
        }
      }
    }
  }
}
