package io.deltareplay

import java.io.File

import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.internal.log.TableMeta
import io.deltareplay.test.{DeltaOracle, LocalClusterSparkSession}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.delta.actions.Action
import org.apache.spark.sql.types.{MetadataBuilder, StructType}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Named regressions of the probe that changed tables between reads of one session (issue 43): each
 * read compared with delta-spark V1 on the same table and version, schema as well as rows, through
 * the routed `format("delta")` read users make (the replay state cache in `auto` mode) and through
 * `format("delta-replay")` in every forced replay mode.
 */
class TableChangesSuite extends TableChangesTests

/** The probes on `local-cluster`: replay, planning and reads in executor JVMs. */
class TableChangesClusterSuite extends TableChangesTests with LocalClusterSparkSession {
  override protected def probeModes: Seq[String] = Seq("executors")
  // the probes whose reads run tasks differently on executors (the rest are driver decisions)
  override protected def onCluster(name: String): Boolean =
    Seq("probe 1: DROP then ADD", "probe 3", "probe 4", "probe 6", "probe 8").exists(
      name.startsWith
    )
}

abstract class TableChangesTests extends AnyFunSuite with DeltaOracle {

  /** The forced modes each probe reads in besides the routed read (auto mode, caches on). */
  protected def probeModes: Seq[String] = replayModes

  /** Whether the probe called `name` runs in this suite (all of them, but on `local-cluster`). */
  protected def onCluster(name: String): Boolean = true

  override protected def test(name: String, tags: org.scalatest.Tag*)(body: => Any)(implicit
      pos: org.scalactic.source.Position
  ): Unit = if (onCluster(name)) super.test(name, tags: _*)(body)

  private def sql(s: String): Unit = spark.sql(s).collect()

  /** The routed read a user of the extension makes: auto mode, the session's caches on. */
  private def routed(path: String): DataFrame = spark.read.format("delta").load(path)

  /** V1's answer to `query` over the table, the routed read's answer, compared with the schema. */
  private def assertRoutedSameAsV1(path: String, query: DataFrame => DataFrame): Unit = {
    val oracle = asOracle {
      val d = query(v1(path))
      (visibleSchema(d), sorted(d), columnTypes(d))
    }
    val df = query(routed(path))
    assert(answeredByUs(df), s"not read by this connector:\n${df.queryExecution}")
    assert(columnTypes(df) === oracle._3, "column types differ from V1")
    assert(visibleSchema(df) === oracle._1, "schema differs from V1")
    assert(sorted(df) === oracle._2, "rows differ from V1")
  }

  /**
   * The schema as a user sees it: names, types, nullability and field metadata, less Spark's
   * internal markers (`__file_source_metadata_col` on V1's `_metadata`, a file source's own).
   */
  private def visibleSchema(df: DataFrame): StructType =
    StructType(df.schema.fields.map { f =>
      val kept = new MetadataBuilder()
      val json = org.json4s.jackson.JsonMethods.parse(f.metadata.json)
      val internal = json.asInstanceOf[org.json4s.JObject].obj.map(_._1).filter(_.startsWith("__"))
      kept.withMetadata(f.metadata)
      internal.foreach(kept.remove)
      f.copy(metadata = kept.build())
    })

  private def assertEverywhere(path: String, queries: (DataFrame => DataFrame)*): Unit =
    queries.foreach { q =>
      assertRoutedSameAsV1(path, q)
      assertSameAsV1(path, query = q, modes = probeModes)
    }

  test("probe 1: DROP then ADD of a column under column mapping, read before and after") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      sql(
        s"CREATE TABLE delta.`$path` (id INT, b INT) USING delta " +
          "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
      )
      sql(s"INSERT INTO delta.`$path` VALUES (1, 100), (2, 200), (3, 400)")
      // the session reads (and caches the index of) the table before the change
      assertRoutedSameAsV1(path, _.where("b IS NULL"))
      assertRoutedSameAsV1(path, _.selectExpr("max(b)", "count(b)"))
      sql(s"ALTER TABLE delta.`$path` DROP COLUMN b")
      sql(s"ALTER TABLE delta.`$path` ADD COLUMN b INT")
      sql(s"INSERT INTO delta.`$path` VALUES (4, 4)")
      val isNull: DataFrame => DataFrame = _.where("b IS NULL")
      val agg: DataFrame => DataFrame = _.selectExpr("max(b)", "count(b)")
      assertEverywhere(path, isNull, agg, _.where("b > 3"), identity)
      assert(routed(path).where("b IS NULL").count() === 3)
      // and with the cache off for the read, as the issue's reporter saw it answer right
      assert(
        spark.read
          .format("delta")
          .option("replay.stateCache.enabled", "false")
          .load(path)
          .where("b IS NULL")
          .count() === 3
      )
    }
  }

  test("probe 1: every kind of metadata change between two reads of one session") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      sql(
        s"CREATE TABLE delta.`$path` (id BIGINT, a INT, b STRING, c SMALLINT, p STRING) " +
          "USING delta PARTITIONED BY (p)"
      )
      def insert(from: Int): Unit =
        sql(
          s"INSERT INTO delta.`$path` (id, a, b, c, p) SELECT id, id % 7, cast(id AS STRING), " +
            s"cast(id % 5 AS SMALLINT), cast(id % 2 AS STRING) FROM range($from, ${from + 20})"
        )
      insert(0)
      val queries: Seq[DataFrame => DataFrame] = Seq(
        _.where("a > 3"),
        _.selectExpr("count(*)", "min(a)", "max(c)")
      )
      queries.foreach(q => assertRoutedSameAsV1(path, q))
      assertRoutedSameAsV1(path, _.selectExpr("count(*)", "max(c)"))
      val changes = Seq(
        "ALTER TABLE $t SET TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '2')",
        "ALTER TABLE $t SET TBLPROPERTIES ('delta.dataSkippingStatsColumns' = 'c,a')",
        "ALTER TABLE $t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        "ALTER TABLE $t CHANGE COLUMN c TYPE INT",
        "ALTER TABLE $t SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        "DELETE FROM $t WHERE id % 3 = 0",
        "ALTER TABLE $t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', " +
          "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')",
        "ALTER TABLE $t RENAME COLUMN a TO a2",
        "ALTER TABLE $t ADD COLUMNS (a INT)",
        "ALTER TABLE $t DROP COLUMN b"
      )
      changes.zipWithIndex.foreach { case (change, i) =>
        withClue(change) {
          sql(change.replace("$t", s"delta.`$path`"))
          val cols = spark.read.format("delta").option("deltareplay.route", "false").load(path)
          val hasA = cols.columns.contains("a")
          sql(
            s"INSERT INTO delta.`$path` (id, ${if (hasA) "a, " else ""}c, p) SELECT id + ${100 * (i + 1)}, " +
              s"${if (hasA) "cast(id AS INT), " else ""}cast(id % 4 AS INT), 'x' FROM range(0, 5)"
          )
          // one filtered read after each change (the differential test reads more, and wider)
          assertRoutedSameAsV1(path, _.where(if (hasA) "a IS NULL OR c < 2" else "c < 2"))
        }
      }
      assertEverywhere(path, _.where("a IS NULL OR a2 > 3"))
    }
  }

  test("probe 2: ALTER TABLE ADD COLUMNS after a read, by path and as a catalog table") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      sql(s"CREATE TABLE delta.`$path` (id INT, v INT) USING delta")
      sql(s"INSERT INTO delta.`$path` VALUES (1, 10), (2, 20)")
      assertRoutedSameAsV1(path, _.where("v > 10"))
      sql(s"ALTER TABLE delta.`$path` ADD COLUMNS (n INT, s STRING)")
      sql(s"INSERT INTO delta.`$path` VALUES (3, 30, 7, 'x')")
      assertEverywhere(path, _.where("n > 5"), _.where("s = 'x' OR n IS NULL"), identity)
      sql(s"CREATE TABLE probe2_catalog USING delta LOCATION '$path'")
      try {
        spark.table("probe2_catalog").where("v > 1").collect()
        sql("ALTER TABLE probe2_catalog ADD COLUMNS (m BIGINT)")
        sql("INSERT INTO probe2_catalog VALUES (4, 40, 8, 'y', 9)")
        val ours = spark.table("probe2_catalog").where("m > 5 OR n = 7")
        assert(deltaReplayScans(ours).nonEmpty)
        val expected = asOracle(sorted(v1(path).where("m > 5 OR n = 7")))
        assert(sorted(ours) === expected)
        assert(expected.size === 2)
      } finally sql("DROP TABLE probe2_catalog")
    }
  }

  test("probe 3: null tests on a struct column and its fields skip nothing they should keep") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      sql(
        s"CREATE TABLE delta.`$path` (id INT, s STRUCT<a: INT, b: STRING, " +
          "n: STRUCT<x: BIGINT>>) USING delta"
      )
      sql(s"INSERT INTO delta.`$path` VALUES (1, named_struct('a', 1, 'b', 'x', 'n', null))")
      sql(s"INSERT INTO delta.`$path` VALUES (2, null)")
      sql(
        s"INSERT INTO delta.`$path` VALUES (3, named_struct('a', null, 'b', null, " +
          "'n', named_struct('x', 5L)))"
      )
      Seq(
        "s IS NULL",
        "s IS NOT NULL",
        "s.b IS NULL",
        "s.b IS NOT NULL",
        "s.a IS NULL AND id > 1",
        "s.n IS NULL",
        "s.n.x IS NOT NULL",
        "s.n.x = 5",
        "NOT (s IS NULL)",
        "s IS NULL OR s.a = 1"
      ).foreach { q =>
        withClue(q)(assertEverywhere(path, _.where(q)))
      }
    }
  }

  test("probe 4: column and partition names that need quoting, with column mapping") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      sql(
        s"CREATE TABLE delta.`$path` (id INT, `p;q=` STRING, `p q` INT, `a.b` INT, " +
          "`c``d` STRING, `x,y` INT) USING delta PARTITIONED BY (`p;q=`, `p q`) " +
          "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
      )
      sql(
        s"INSERT INTO delta.`$path` VALUES (1, 'a=b', 1, 10, 'x', 5), (2, 'c;d', 2, 20, 'y', 6), " +
          "(3, null, null, null, null, null)"
      )
      sql(s"INSERT INTO delta.`$path` VALUES (4, 'a=b', 2, 40, 'z`', 7)")
      assertEverywhere(
        path,
        identity,
        _.where("`p;q=` = 'a=b'"),
        _.where("`p q` = 2 AND `a.b` > 15"),
        _.where("`c``d` = 'z`' OR `x,y` IS NULL"),
        _.selectExpr("count(*)", "max(`a.b`)")
      )
      // without column mapping, where delta-spark allows such names (no space, `;`, `=`)
      val plain = new File(dir, "plain").getAbsolutePath
      sql(
        s"CREATE TABLE delta.`$plain` (id INT, `a.b` INT, `c``d` STRING) USING delta " +
          "PARTITIONED BY (`a.b`)"
      )
      sql(s"INSERT INTO delta.`$plain` VALUES (1, 1, 'x'), (2, 2, 'y')")
      assertEverywhere(plain, identity, _.where("`a.b` = 2"), _.where("`c``d` > 'x'"))
    }
  }

  test(
    "probe 6: deleted and corrupt data files under ignoreMissingFiles / ignoreCorruptFiles, as V1"
  ) {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      spark.range(0, 30).repartition(3).write.format("delta").save(path)
      val gone = new File(path).listFiles().filter(_.getName.endsWith(".parquet")).head
      assert(gone.delete())
      withConf("spark.sql.files.ignoreMissingFiles" -> "true") {
        assertEverywhere(path, identity, _.where("id > 5"))
        assert(routed(path).collect().length === 20)
        // count(*) from the log's statistics reads no file, as delta-spark's own does
        assert(routed(path).count() === asOracle(v1(path).count()))
      }
      // without it, the read fails naming the file, as V1's does
      val e = intercept[Exception](ours(path).collect())
      assert(causeMessages(e).contains(gone.getName), causeMessages(e))
      // a data file that is not Parquet: skipped under ignoreCorruptFiles, as V1 skips it
      val broken = new File(path).listFiles().filter(_.getName.endsWith(".parquet")).head
      java.nio.file.Files.write(broken.toPath, "not a parquet file".getBytes("UTF-8"))
      withConf(
        "spark.sql.files.ignoreMissingFiles" -> "true",
        "spark.sql.files.ignoreCorruptFiles" -> "true"
      ) {
        assertEverywhere(path, identity)
        assert(routed(path).collect().length === 10)
      }
    }
  }

  test("probe 8: the whole _metadata struct has V1's fields and values") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      spark.range(0, 10).repartition(2).write.format("delta").save(path)
      assertEverywhere(path, _.select("id", "_metadata"), _.select("_metadata.*"))
      // with deletion vectors delta-spark's struct has the row index
      val dv = new File(dir, "dv").getAbsolutePath
      spark
        .range(0, 10)
        .repartition(2)
        .write
        .format("delta")
        .option("delta.enableDeletionVectors", "true")
        .save(dv)
      sql(s"DELETE FROM delta.`$dv` WHERE id = 3")
      assertEverywhere(dv, _.select("id", "_metadata"), _.select("id", "_metadata.row_index"))
      // the adapter's protocol and metadata (each parsed as its own class) are delta-spark's
      // Action.fromJson of the same JSON, from a commit and from a checksum file
      for (table <- Seq(path, dv)) {
        val log = new File(table, "_delta_log")
        val commit = scala.io.Source.fromFile(new File(log, f"${0}%020d.json"), "UTF-8")
        val actions =
          try commit.getLines().toList.flatMap(TableMeta.parse)
          finally commit.close()
        val fromCommit = TableMeta(
          actions.collectFirst { case Left(p) => p }.get,
          actions.collectFirst { case Right(m) => m }.get
        )
        // Delta's checksum files (not Hadoop's `.<name>.crc` beside each file)
        val checksums = log.listFiles().filter(_.getName.matches("[0-9]{20}\\.crc")).toSeq
        assert(checksums.nonEmpty, s"no checksum file in $log")
        val fromChecksums = checksums.map { f =>
          val crc = scala.io.Source.fromFile(f, "UTF-8")
          try TableMeta.fromChecksum(crc.mkString).get
          finally crc.close()
        }
        for (meta <- fromCommit +: fromChecksums) {
          val (p, m) = DeltaAdapter.actions(meta)
          assert(p == Action.fromJson(meta.protocolJson))
          assert(m == Action.fromJson(meta.metadataJson))
          assert(m.schema == meta.schema && p.minReaderVersion == meta.minReaderVersion)
        }
      }
    }
  }

  test("probe 9: options this connector does not serve are refused or handed to delta-spark") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      sql(
        s"CREATE TABLE delta.`$path` (id INT) USING delta " +
          "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
      )
      sql(s"INSERT INTO delta.`$path` VALUES (1), (2)")
      sql(s"DELETE FROM delta.`$path` WHERE id = 1")
      // change data feed: the routed read goes to delta-spark (V1's answer), the direct read says
      val cdf = Map("readChangeFeed" -> "true", "startingVersion" -> "0")
      val routedCdf = spark.read.format("delta").options(cdf).load(path)
      assert(deltaReplayScans(routedCdf).isEmpty)
      assert(routedCdf.count() === asOracle(v1(path, cdf).count()))
      val refused = intercept[Exception](ours(path, cdf).collect())
      assert(causeMessages(refused).contains("readChangeFeed"), causeMessages(refused))
      // a typo, an unknown key of ours, an out-of-range value: an error naming the option
      Seq(
        Map("replay.mod" -> "local") -> "replay.mod",
        Map("replay.partitions" -> "-3") -> "replay.partitions",
        Map("replay.distributedThresholdBytes" -> "-1") -> "replay.distributedThresholdBytes",
        Map("planning.executorsMinFiles" -> "-5") -> "planning.executorsMinFiles",
        Map("replay.mode" -> "fast") -> "replay.mode"
      ).foreach { case (opts, named) =>
        val e = intercept[Exception](ours(path, opts).collect())
        val msg = causeMessages(e)
        assert(msg.contains(named), s"$opts: $msg")
        assert(!msg.contains("spark.deltareplay."), s"$opts names the session key: $msg")
      }
      // a routed read with an unknown replay.* key still answers (delta-spark ignores unknown
      // options) and is logged once; the session key's own errors name the session key
      assert(spark.read.format("delta").option("replay.mod", "x").load(path).count() === 1)
      withConf("spark.deltareplay.replay.partitions" -> "-3") {
        val e = intercept[Exception](ours(path).collect())
        assert(causeMessages(e).contains("spark.deltareplay.replay.partitions"))
      }
    }
  }
}
