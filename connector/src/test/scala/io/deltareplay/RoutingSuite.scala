package io.deltareplay

import io.delta.tables.DeltaTable
import io.deltareplay.test.DeltaOracle
import org.scalatest.funsuite.AnyFunSuite

/** The extension routes the reads users ask for, and nothing else. */
class RoutingSuite extends AnyFunSuite with DeltaOracle {

  private def routed(df: org.apache.spark.sql.DataFrame): Boolean = deltaReplayScans(df).nonEmpty

  private def make(path: String, n: Int = 50): Unit =
    spark
      .range(0, n)
      .selectExpr("id", "cast(id % 5 as string) as p")
      .write
      .format("delta")
      .partitionBy("p")
      .save(path)

  test(
    "format(\"delta\"), SQL delta.`path`, catalog tables and time travel read through the connector"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      make(path)
      spark
        .range(50, 60)
        .selectExpr("id", "cast(id % 5 as string) as p")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      val plain = spark.read.format("delta").load(path)
      assert(routed(plain) && plain.count() === 60)
      assert(deltaReplayScans(plain).head.snapshot.version === 1)
      val sqlPath = spark.sql(s"SELECT * FROM delta.`$path` WHERE p = '1'")
      assert(routed(sqlPath) && sqlPath.count() === 12)
      val travelled = spark.sql(s"SELECT * FROM delta.`$path` VERSION AS OF 0")
      assert(routed(travelled) && travelled.count() === 50)
      val byOption = spark.read.format("delta").option("versionAsOf", 0).load(path)
      assert(routed(byOption) && byOption.count() === 50)
      spark.sql(s"CREATE TABLE routed_catalog_table USING delta LOCATION '$path'")
      try {
        val t = spark.table("routed_catalog_table")
        assert(routed(t) && t.count() === 60)
        // count(*) of a routed table is answered from the log's statistics by this connector.
        val counted = spark.sql("SELECT count(*) FROM routed_catalog_table")
        assert(counted.queryExecution.executedPlan.toString.contains("aggregates from log"))
        assert(counted.head().getLong(0) === 60L)
        assert(routed(spark.sql("SELECT count(id) FROM routed_catalog_table WHERE id > 3")))
      } finally spark.sql("DROP TABLE routed_catalog_table")
    }
  }

  /** Whether the DataFrame was resolved by this connector when it was created. */
  private def resolvedAtLoad(df: org.apache.spark.sql.DataFrame): Boolean =
    df.queryExecution.analyzed.exists {
      case r: org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation =>
        r.table.isInstanceOf[internal.scan.DeltaReplayTable]
      case _ => false
    }

  test(
    "format(\"delta\").load resolves to the connector at load with delta-spark's columns, " +
      "and writes into a temp view over it stay with delta-spark"
  ) {
    withTempDir { dir =>
      // char columns: delta-spark writes into a view over a read only without the read's char
      // padding projection, so the tables written through views have none
      def create(path: String, char: Boolean = true): Unit = {
        val c = if (char) "CHAR(3)" else "STRING"
        spark.sql(
          s"""CREATE TABLE delta.`$path` (
             |  id BIGINT NOT NULL COMMENT 'the key',
             |  c $c,
             |  v VARCHAR(5),
             |  d INT DEFAULT 7,
             |  g BIGINT GENERATED ALWAYS AS (id * 2),
             |  s STRUCT<a: INT, b: STRING>,
             |  p STRING
             |) USING delta PARTITIONED BY (p)
             |TBLPROPERTIES ('delta.columnMapping.mode' = 'name',
             |  'delta.feature.allowColumnDefaults' = 'supported',
             |  'delta.enableDeletionVectors' = 'true')""".stripMargin
        )
        spark.sql(
          s"""INSERT INTO delta.`$path` (id, c, v, s, p)
             |SELECT id, cast(id % 4 AS STRING), concat('v', id % 3), named_struct('a', id, 'b',
             |  cast(id AS STRING)), cast(id % 3 AS STRING) FROM range(0, 30)""".stripMargin
        )
      }
      val path = dir.getAbsolutePath + "/t"
      create(path)
      val loaded = spark.read.format("delta").load(path)
      assert(resolvedAtLoad(loaded) && routed(loaded))
      assert(loaded.schema === v1(path).schema)
      assert(ours(path).schema === v1(path).schema)
      // a stream too: this connector's source from the start, with delta-spark's source columns
      val streamed = spark.readStream.format("delta").load(path)
      assert(streamed.queryExecution.analyzed.exists {
        case s: org.apache.spark.sql.catalyst.streaming.StreamingRelationV2 =>
          // no delta-spark relation kept beside it: delta-spark never resolved this one
          s.table.isInstanceOf[internal.scan.DeltaReplayTable] && s.v1Relation.isEmpty
        case _ => false
      })
      val v1Stream = spark.readStream.format("delta").option("deltareplay.route", "false")
      assert(streamed.schema === v1Stream.load(path).schema)
      // the same `_metadata` fields (Spark marks its own file-source column apart)
      def metadataFields(df: org.apache.spark.sql.DataFrame) =
        df.select("_metadata").schema.map(f => (f.name, f.dataType, f.nullable))
      assert(metadataFields(loaded) === metadataFields(v1(path)))
      // char columns compare padded, as delta-spark reads them
      def answers(df: org.apache.spark.sql.DataFrame) =
        sorted(df.where("c = '1' OR v = 'v2'").selectExpr("*", "length(c)", "_metadata.file_name"))
      assert(answers(loaded) === answers(v1(path)))
      assert(answers(loaded).size === 15)
      // declined at load, routed when the query runs: time travel (delta-spark refuses some that
      // this connector could read), path suffixes, DeltaTable's reads (it writes into them)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id < 3")
      val travelled = spark.read.format("delta").option("versionAsOf", "1").load(path)
      assert(!resolvedAtLoad(travelled) && routed(travelled) && travelled.count() === 30)
      val deltaTable = io.delta.tables.DeltaTable.forPath(spark, path).toDF
      assert(!resolvedAtLoad(deltaTable) && routed(deltaTable) && deltaTable.count() === 27)
      val atSuffix = spark.read.format("delta").load(path + "@v1")
      assert(!resolvedAtLoad(atSuffix) && atSuffix.count() === 30)
      // a user-given schema: delta-spark's refusal, not a read by this connector
      intercept[UnsupportedOperationException](
        spark.read.format("delta").schema(v1(path).schema).load(path)
      )
      withConf("spark.deltareplay.routeAtLoad" -> "false") {
        val late = spark.read.format("delta").load(path)
        assert(!resolvedAtLoad(late) && routed(late) && late.count() === 27)
      }
      assert(!resolvedAtLoad(spark.read.format("delta").load(dir.getAbsolutePath + "/t/p=1")))
      // MERGE, UPDATE and DELETE into a temp view of the read: the same table as with routing off
      def workload(path: String): Seq[Seq[Any]] = {
        spark.read.format("delta").load(path).createOrReplaceTempView("routed_view")
        spark.sql(
          """MERGE INTO routed_view t USING (SELECT id, 'x' AS p FROM range(25, 35)) s
            |ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.v = 'm'
            |WHEN NOT MATCHED THEN INSERT (id, c, v, s, p) VALUES (s.id, 'n', 'n', null, s.p)
            |""".stripMargin
        )
        spark.sql("UPDATE routed_view SET d = 1 WHERE id % 5 = 0")
        spark.sql("DELETE FROM routed_view WHERE id % 7 = 0")
        spark.catalog.dropTempView("routed_view")
        sorted(v1(path))
      }
      val on = dir.getAbsolutePath + "/on"
      val off = dir.getAbsolutePath + "/off"
      create(on, char = false)
      create(off, char = false)
      val routedResult = workload(on)
      val offResult = withConf("spark.deltareplay.enabled" -> "false")(workload(off))
      assert(routedResult === offResult)
      assert(routedResult.size === 30)
    }
  }

  test("a query reads one version, the newest at its execution: a self-join after a commit") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      make(path, 10)
      val left = spark.read.format("delta").load(path)
      spark
        .range(100, 110)
        .selectExpr("id", "'x' as p")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      val joined = left.as("a").join(left.as("b"), "id")
      assert(routed(joined))
      assert(deltaReplayScans(joined).map(_.snapshot.version).toSet === Set(1L))
      val oracle = v1(path).as("a").join(v1(path).as("b"), "id")
      assert(joined.count() === 20 && oracle.count() === 20)
    }
  }

  test(
    "MERGE, UPDATE, DELETE (SQL and DeltaTable API) and OPTIMIZE keep working and match the extension-off result"
  ) {
    def workload(path: String): Seq[Seq[Any]] = {
      make(path, 40)
      val t = DeltaTable.forPath(spark, path)
      t.as("t")
        .merge(spark.range(30, 50).selectExpr("id", "'m' as p").as("s"), "t.id = s.id")
        .whenMatched()
        .updateAll()
        .whenNotMatched()
        .insertAll()
        .execute()
      t.update(
        org.apache.spark.sql.functions.expr("id < 5"),
        Map("p" -> org.apache.spark.sql.functions.lit("u"))
      )
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 7 = 0")
      spark.sql(
        s"MERGE INTO delta.`$path` t USING (SELECT 1000L AS id, 'z' AS p) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
      )
      spark.sql(s"OPTIMIZE delta.`$path`")
      sorted(v1(path))
    }
    withTempDir { dir =>
      val on = workload(dir.getAbsolutePath + "/on")
      val off =
        withConf("spark.deltareplay.enabled" -> "false")(workload(dir.getAbsolutePath + "/off"))
      assert(on === off)
      assert(on.size === 43)
    }
  }

  test(
    "routing off per session and per read; unknown options and change data feed go to delta-spark"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark
        .range(0, 10)
        .selectExpr("id")
        .write
        .format("delta")
        .option("delta.enableChangeDataFeed", "true")
        .save(path)
      withConf("spark.deltareplay.enabled" -> "false") {
        assert(!routed(spark.read.format("delta").load(path)))
      }
      assert(!routed(spark.read.format("delta").option("deltareplay.route", "false").load(path)))
      assert(!routed(spark.read.format("delta").option("someUnknownOption", "1").load(path)))
      val cdf = spark.read
        .format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 0)
        .load(path)
      assert(!routed(cdf))
      assert(cdf.columns.contains("_change_type"))
      assert(routed(spark.read.format("delta").load(path)))
    }
  }

  test("writes go to delta-spark unchanged: INSERT ... SELECT and CTAS from a routed read") {
    withTempDir { dir =>
      val src = dir.getAbsolutePath + "/src"
      make(src, 20)
      val dst = dir.getAbsolutePath + "/dst"
      spark.read.format("delta").load(src).where("id < 10").write.format("delta").save(dst)
      spark.sql(s"INSERT INTO delta.`$dst` SELECT * FROM delta.`$src` WHERE id >= 15")
      assert(sorted(v1(dst)) === sorted(v1(src).where("id < 10 OR id >= 15")))
    }
  }

  test(
    "a table this connector cannot read (reader version 4, an unknown reader feature): " +
      "format(\"delta-replay\") fails naming it; format(\"delta\") answers as delta-spark does"
  ) {
    import io.deltareplay.test.LogFixtures
    Seq(
      "reader version 4" -> """{"protocol":{"minReaderVersion":4,"minWriterVersion":7}}""",
      "fancyNewFeature" -> ("""{"protocol":{"minReaderVersion":3,"minWriterVersion":7,""" +
        """"readerFeatures":["fancyNewFeature"],"writerFeatures":["fancyNewFeature"]}}""")
    ).foreach { case (what, protocol) =>
      withTempDir { dir =>
        val path = dir.getAbsolutePath + "/t"
        make(path)
        LogFixtures.writeCommit(path, 1, Seq(LogFixtures.commitInfo, protocol))
        val direct = intercept[DeltaReplayException.UnsupportedTable](ours(path).collect())
        assert(direct.getMessage.contains(what) && direct.getMessage.contains(path), direct)
        // routed: handed back to delta-spark, whose own answer (here its refusal) the user gets
        def failure(read: => Any): Throwable = intercept[Throwable](read)
        val viaRouting = failure(spark.read.format("delta").load(path).collect())
        val viaDeltaSpark = failure(v1(path).collect())
        assert(!viaRouting.isInstanceOf[DeltaReplayException], viaRouting)
        assert(viaRouting.getClass === viaDeltaSpark.getClass, viaRouting)
        assert(viaRouting.getMessage === viaDeltaSpark.getMessage)
        // time travel to the version before the protocol change: this connector reads it; a
        // routed read answers as delta-spark does (rows or the same refusal)
        val before = Map("versionAsOf" -> "0")
        assert(ours(path, before).count() === 50)
        def outcome(df: => org.apache.spark.sql.DataFrame): Either[String, Seq[Seq[Any]]] =
          scala.util.Try(sorted(df)).toEither.left.map(_.getClass.getName)
        assert(
          outcome(spark.read.format("delta").options(before).load(path)) ===
            outcome(v1(path, before))
        )
        // streams: the same split
        val stream = intercept[Throwable] {
          val q = spark.readStream
            .format("delta-replay")
            .load(path)
            .writeStream
            .format("noop")
            .start()
          try q.processAllAvailable()
          finally q.stop()
        }
        assert(stream.getMessage.contains(what), stream)
      }
    }
  }

  // The Spark-line lanes run this suite: on Spark 4.0 filters reach a DSv2 scan builder only when
  // it is a FileScanBuilder (the shim's CatalystFiltersScanBuilder), and with none pushed a read
  // keeps its answers but prunes and skips nothing.
  test("filters reach the scan: partition pruning and min/max skipping, V1's answers") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      // 5 partitions, each of 3 files whose ids do not overlap: one append per id range
      (0 until 3).foreach { k =>
        spark
          .range(k * 100, (k + 1) * 100, 1, 1)
          .selectExpr("id", "cast(id % 5 as string) as p")
          .repartition(5, org.apache.spark.sql.functions.col("p"))
          .write
          .format("delta")
          .mode("append")
          .partitionBy("p")
          .save(path)
      }
      val pruned = assertSameAsV1(path, query = _.where("p = '2'"), modes = Seq("local"))
      val skipped = assertSameAsV1(path, query = _.where("id >= 150 AND id < 160"))
      val both = assertSameAsV1(path, query = _.where("p = '2' AND id < 20"), modes = Seq("local"))
      val scan = deltaReplayScans(ours(path).where("p = '2' AND id < 20")).head
      assert(pruned("local").liveFiles === 15, pruned)
      assert(pruned("local").filesAfterPartitionPruning === 3, pruned)
      skipped.values.foreach(m => assert(m.filesAfterSkipping === 5, m))
      assert(both("local").filesAfterSkipping === 1, both)
      // EXPLAIN shows them: the partition filter, the skipping filter, the Parquet filter
      val shown = scan.description()
      Seq(" PartitionFilters: [", " SkippingFilters: [", " PushedFilters: [").foreach { what =>
        assert(shown.contains(what) && !shown.contains(what + "]"), shown)
      }
    }
  }

  test("every connector option reaches the scan on both formats, batch and streaming") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      make(path)
      val O = DeltaReplayOptions
      val values = Map(
        O.ReplayMode -> "distributed",
        O.DistributedThresholdBytes -> "1234",
        O.ReplayPartitions -> "3",
        O.TailFastPathMaxBytes -> "0",
        O.TailBroadcastMaxBytes -> "0",
        O.StateCache -> "false",
        O.FilterCheckpoint -> "false",
        O.CheckpointTwoPass -> "false",
        O.IndexInBackground -> "false",
        O.StateCacheMaxBytes -> "1000000",
        O.StateMaxTailBytes -> "1000",
        O.MetadataAggregates -> "false",
        O.DataSkipping -> "false",
        O.IndexStorageLevel -> "MEMORY_ONLY_SER",
        O.SnapshotSliceFiles -> "7",
        O.PlanningMode -> "driver",
        O.PlanningExecutorsMinFiles -> "5",
        O.PlanningScratchDir -> (dir.getAbsolutePath + "/scratch")
      )
      val untested = O.KnownReadOptions -- values.keySet.map(_.toLowerCase) --
        Set(O.VersionAsOf, O.TimestampAsOf, O.RouteOption, O.SnapshotStorageLevel, "path", "paths")
          .map(_.toLowerCase)
      assert(untested.isEmpty, s"options without a value in this test: $untested")
      val defaults = internal.scan.ReadConf(spark, Map.empty)
      values.foreach { case (key, value) =>
        val direct = deltaReplayScans(ours(path, Map(key -> value))).head.conf
        val viaRouting = spark.read.format("delta").option(key, value).load(path)
        assert(routed(viaRouting), s"$key: not routed")
        assert(deltaReplayScans(viaRouting).head.conf === direct, key)
        assert(direct !== defaults, s"$key=$value changed nothing")
      }
      // streams take them too (and stay routed): the slice size shows in the progress
      val q = spark.readStream
        .format("delta")
        .options(values ++ Map(O.PlanningMode -> "executors", "maxFilesPerTrigger" -> "2"))
        .load(path)
        .writeStream
        .format("noop")
        .trigger(org.apache.spark.sql.streaming.Trigger.AvailableNow())
        .start()
      try {
        q.awaitTermination()
        assert(q.lastProgress.sources.head.description.contains("DeltaReplayMicroBatchStream"))
        val snapshot = q.recentProgress.flatMap(p => Option(p.sources.head.metrics.get("snapshot")))
        assert(snapshot.exists(_.contains("slices of 7")), snapshot.mkString("; "))
      } finally q.stop()
    }
  }
}
