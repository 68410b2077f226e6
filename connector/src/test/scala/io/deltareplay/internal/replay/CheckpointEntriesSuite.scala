package io.deltareplay.internal.replay

import io.deltareplay.internal.index.{DriverIndex, IndexCache, TableIndex}
import io.deltareplay.internal.log.DvDescriptor
import io.deltareplay.internal.scan.ScanMetrics
import io.deltareplay.test.{DeltaOracle, SparkDefaults}
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.catalyst.types.DataTypeUtils.toAttributes
import org.apache.spark.sql.delta.DeltaLog
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/**
 * The entries a narrowed first read builds from the checkpoint's adds in its tasks
 * ([[CheckpointSelect.entries]]: no DataFrame) are, field by field, the entries the full
 * distributed replay builds for the same files, with statistics typed only (under column mapping's
 * physical names) and as JSON only; the answers are V1's.
 */
class CheckpointEntriesSuite extends AnyFunSuite with DeltaOracle with SparkDefaults {

  private def entries(index: TableIndex): Map[String, Row] = index match {
    case d: DriverIndex =>
      val toRow = CatalystTypeConverters.createToScalaConverter(d.entry.schema)
      val out = Map.newBuilder[String, Row]
      d.foreachLive { (r, _) =>
        val row = toRow(r).asInstanceOf[Row]
        val dv = DvDescriptor.fromInternalRow(r, d.entry.Ord.Dv).fold("")(_.uniqueId)
        out += (row.getString(d.entry.Ord.Path) + "#" + dv) -> row
      }
      out.result()
    case other => fail(s"not an index on the driver: $other")
  }

  /** The index a read with filter `q` planned from (its answer checked against V1's). */
  private def indexOf(path: String, q: String, checked: Boolean): (TableIndex, ScanMetrics) = {
    val df = ours(path).where(q)
    if (checked) assert(sorted(df) === sorted(v1(path).where(q)), q)
    else df.collect()
    val scan = deltaReplayScans(df).head
    (scan.planning.planIndex.get.index, scan.metrics)
  }

  private val layouts = Seq(
    // the JSON statistics not read (typed ones in every add), physical names in them
    "typed statistics, column mapping" -> Map(
      "delta.checkpoint.writeStatsAsJson" -> "false",
      "delta.columnMapping.mode" -> "name"
    ),
    "JSON statistics only" -> Map("delta.checkpoint.writeStatsAsStruct" -> "false")
  )

  private val queries = Seq(
    "id = 42",
    "(ts > timestamp'2024-01-02 05:00:00' OR d = date'2024-01-03') AND p = 'b'",
    "dec < 5.5 OR s = 'x17' OR f IS NULL",
    "id >= 0" // every add: the checkpoint read whole
  )

  layouts.foreach { case (name, properties) =>
    test(s"a narrowed read's checkpoint entries are the full replay's: $name") {
      withTempDir { dir =>
        val path = dir.getAbsolutePath + "/t"
        val writer = spark
          .range(0, 240)
          .selectExpr(
            "id",
            "date_add(date'2024-01-01', CAST(id % 5 AS INT)) AS d",
            "timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, CAST(id AS INT), 0, 0) AS ts",
            "CAST(id / 10 AS DECIMAL(10, 2)) AS dec",
            "concat('x', id) AS s",
            "IF(id % 7 = 0, NULL, id * 1.5) AS f",
            "element_at(array('a', 'b', 'c'), CAST(id % 3 AS INT) + 1) AS p"
          )
          .repartitionByRange(12, org.apache.spark.sql.functions.col("id"))
          .write
          .format("delta")
          .partitionBy("p")
          .option("delta.enableDeletionVectors", "true")
        properties.foldLeft(writer) { case (w, (k, v)) => w.option(k, v) }.save(path)
        spark.sql(s"DELETE FROM delta.`$path` WHERE id % 10 = 3") // DVs, in the checkpoint
        DeltaLog.forTable(spark, path).checkpoint()
        spark.sql(s"DELETE FROM delta.`$path` WHERE id = 7") // after it: one file of the tail
        withConf(
          "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
          "spark.deltareplay.index.buildInBackground" -> "false"
        ) {
          queries.foreach { q =>
            IndexCache.clear(spark)
            val (narrowed, m) = indexOf(path, q, checked = true)
            assert(m.replayMode.contains("checkpoint filtered by the query"), s"$q: $m")
            IndexCache.clear(spark)
            val (full, fm) = withConf("spark.deltareplay.replay.filterCheckpoint" -> "false") {
              indexOf(path, q, checked = false)
            }
            assert(!fm.replayMode.contains("checkpoint filtered"), s"$q: $fm")
            val all = entries(full)
            val few = entries(narrowed)
            assert(few.nonEmpty && few.size <= all.size, q)
            few.foreach { case (key, row) =>
              assert(all.get(key).contains(row), s"$q: $key")
            }
            if (q == "id >= 0") assert(few.keySet === all.keySet)
          }
        }
      }
    }
  }

  test("the first pass's filter resolved by its field paths is the analyzer's, or left to it") {
    val stats = new StructType().add("minValues", new StructType().add("id", LongType))
    val add = new StructType()
      .add("path", StringType)
      .add("partitionValues", MapType(StringType, StringType))
      .add("stats_parsed", stats)
    val schema = new StructType().add("add", add)
    def at(names: String*) = UnresolvedAttribute(names)
    val min = at("add", "stats_parsed", "minValues", "id")
    val day = Cast(GetMapValue(at("add", "partitionValues"), Literal("d")), DateType, Some("UTC"))
    val filter = And(
      Or(IsNull(min), LessThanOrEqual(min, Literal(5L))),
      Or(EqualTo(day, Literal.create(java.sql.Date.valueOf("2024-01-02"), DateType)), IsNull(day))
    )
    val attributes = toAttributes(schema)
    def bound(e: Expression, input: Seq[Attribute]) =
      BindReferences.bindReference(e, AttributeSeq(input))
    val byHand = CheckpointSelect.resolvedByName(filter, attributes)
    assert(byHand.isDefined)
    val empty = SparkBridge.internalDataFrame(spark, spark.sparkContext.emptyRDD, schema)
    val Filter(analysed, child) =
      empty.where(SparkBridge.column(filter)).queryExecution.analyzed: @unchecked
    assert(bound(byHand.get, attributes) === bound(analysed, child.output))
    // a path to no field, and a cast without its time zone: left to the analyzer
    assert(CheckpointSelect.resolvedByName(IsNull(at("add", "nope")), attributes).isEmpty)
    val noZone = Cast(GetMapValue(at("add", "partitionValues"), Literal("d")), TimestampType)
    assert(CheckpointSelect.resolvedByName(IsNull(noZone), attributes).isEmpty)
  }
}
