package io.deltareplay.internal.skipping

import java.io.File
import java.math.{BigDecimal => JBigDecimal}
import java.sql.{Date, Timestamp}

import scala.jdk.CollectionConverters._
import scala.util.Random

import io.deltareplay.internal.index.EntryChunk
import io.deltareplay.internal.log.{CheckpointLayout, FileEntry, LiveFile, LogReader, TableSnapshot}
import io.deltareplay.internal.replay.{CheckpointFilter, LocalReplay, TailFilter}
import io.deltareplay.test.{SharedSparkSession, SparkDefaults}
import org.apache.spark.sql.{functions, Column, DataFrame, Row}
import org.apache.spark.sql.catalyst.expressions.{Expression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/**
 * Data skipping ([[DataSkipping]] over [[FileEntry]] rows) as a property: on small Delta tables
 * written by delta-spark (so the statistics are delta-spark's: 32-character string prefixes,
 * millisecond timestamps, NaN, -0.0, wide decimals, all-null columns), a generated predicate never
 * skips a file that holds a row Spark accepts, and the driver's evaluation (entries projected on
 * the driver) and the Spark job's (entries built by `columnsFromLiveFile` in tasks) keep the same
 * files, and the column-wise first pass over index columns ([[SkipVector]]), the filter moved onto
 * a checkpoint ([[CheckpointFilter]]) and the one checked on a commit tail's adds before their
 * entries are built ([[TailFilter]]) leave each of them in.
 *
 * Seeded: `DELTAREPLAY_TEST_SEED=N build/sbt ...` replays a run, `DELTAREPLAY_TEST_TABLES=N` runs
 * more tables (build.sbt passes them on); a failure prints the seed, the table and the predicate.
 */
class DataSkippingSuite
    extends AnyFunSuite
    with SharedSparkSession
    with SparkDefaults
    with PredicateHelper {

  private val seed = sys.props.get("deltareplay.test.seed").map(_.toLong).getOrElse(20261125L)
  private val tables = sys.props.get("deltareplay.test.tables").map(_.toInt).getOrElse(2)
  private val predicatesPerTable = 40

  private val schema = new StructType()
    .add("i", IntegerType)
    .add("l", LongType)
    .add("f", FloatType)
    .add("d", DoubleType)
    .add("dec", DecimalType(38, 18))
    .add("s", StringType)
    .add("dt", DateType)
    .add("ts", TimestampType)
    .add("b", BooleanType)
    .add("n", new StructType().add("x", IntegerType))

  private def timestamp(micros: Long): Timestamp = {
    val t = new Timestamp(Math.floorDiv(micros, 1000L))
    t.setNanos((Math.floorMod(micros, 1000000L) * 1000L).toInt)
    t
  }

  private def dec(s: String) = new JBigDecimal(s).setScale(18)

  private val baseMicros = 1700000000000000L

  /** The edge values of each column, from which files draw theirs and predicates their literals. */
  private val domains: Map[String, IndexedSeq[Any]] = Map(
    "i" -> IndexedSeq[Int](Int.MinValue, -3, -1, 0, 1, 2, 3, 7, Int.MaxValue),
    "l" -> IndexedSeq[Long](Long.MinValue, -2L, 0L, 1L, 5L, 1L << 40, Long.MaxValue),
    "f" -> IndexedSeq[Float](
      Float.NaN,
      0.0f,
      -0.0f,
      Float.PositiveInfinity,
      Float.NegativeInfinity,
      Float.MinPositiveValue,
      -1.5f,
      1.5f,
      3.25f,
      Float.MaxValue
    ),
    "d" -> IndexedSeq[Double](
      Double.NaN,
      0.0,
      -0.0,
      Double.PositiveInfinity,
      Double.NegativeInfinity,
      Double.MinPositiveValue,
      -1.5,
      1.5,
      Math.nextUp(1.5),
      1e300
    ),
    "dec" -> IndexedSeq(
      "0",
      "0.000000000000000001",
      "-0.000000000000000001",
      "1.5",
      "12345678901234567890.123456789012345678",
      "-12345678901234567890.123456789012345678",
      "99999999999999999999.999999999999999999",
      "-99999999999999999999.999999999999999999"
    ).map(dec),
    "s" -> IndexedSeq(
      "",
      "a",
      "ab",
      "abc",
      "b",
      "é",
      "\uD83D\uDE00", // non-BMP
      "a\uD83D\uDE00",
      "\uFFFF",
      "zz",
      "x" * 32,
      "x" * 32 + "a",
      "x" * 32 + "b",
      "x" * 31 + "\uD83D\uDE00c", // a surrogate pair across the 32-character cut
      "y" * 40,
      "\uD83D\uDE00" * 33
    ),
    "dt" -> IndexedSeq("1900-01-01", "1969-12-31", "1970-01-01", "2024-02-29", "2100-12-31")
      .map(Date.valueOf),
    // micro-seconds apart within one millisecond, and across millisecond boundaries
    "ts" -> IndexedSeq(0L, 1L, 999L, 1000L, 1001L, 1999L, 2000L, 5000123L, -1L)
      .map(d => timestamp(baseMicros + d)),
    "b" -> IndexedSeq(true, false),
    "n.x" -> IndexedSeq(-5, 0, 4, 9)
  )

  private val leafColumns = Seq("i", "l", "f", "d", "dec", "s", "dt", "ts", "b", "n.x")

  private def dataType(c: String): DataType = c match {
    case "n.x" => IntegerType
    case other => schema(other).dataType
  }

  /** A literal near the column's values: one of them, or a neighbour (±1 µs, next float, ...). */
  private def literal(r: Random, c: String): Any = {
    val v = domains(c)(r.nextInt(domains(c).size))
    if (r.nextInt(3) != 0) v
    else
      v match {
        case x: Int => x + (r.nextInt(3) - 1)
        case x: Long => x + (r.nextInt(3) - 1)
        case x: Float => if (r.nextBoolean()) Math.nextUp(x) else Math.nextDown(x)
        case x: Double => if (r.nextBoolean()) Math.nextUp(x) else Math.nextDown(x)
        case x: JBigDecimal =>
          val y =
            x.add(dec("0.000000000000000001").multiply(JBigDecimal.valueOf(r.nextInt(3) - 1L)))
          if (y.precision > 38) x else y
        case x: String => if (x.isEmpty) "a" else x.substring(0, r.nextInt(x.length + 1))
        case x: Date => new Date(x.getTime + 86400000L * (r.nextInt(3) - 1))
        case x: Timestamp =>
          val micros =
            Math.multiplyExact(Math.floorDiv(x.getTime, 1000L), 1000000L) + x.getNanos / 1000
          timestamp(micros + r.nextInt(3) - 1)
        case x => x
      }
  }

  private def literalOf(c: String, v: Any): Column =
    if (v == null) functions.lit(null).cast(dataType(c))
    else functions.lit(v).cast(dataType(c))

  private def leaf(r: Random): Column = {
    val c = leafColumns(r.nextInt(leafColumns.size))
    val column = col(c)
    r.nextInt(12) match {
      case 0 => column.isNull
      case 1 => column.isNotNull
      case 2 | 3 =>
        // a few values, over ten (InSet), or more than DataSkipping.MaxInValues (range rule)
        val n = Seq(1, 2, 3, 12, DataSkipping.MaxInValues + 6)(r.nextInt(5))
        val values = Seq.fill(n)(literal(r, c)) ++ (if (r.nextInt(4) == 0) Seq(null) else Nil)
        column.isin(values.map(v => literalOf(c, v)): _*)
      case 4 if c == "s" =>
        val p = literal(r, c).asInstanceOf[String]
        if (r.nextBoolean()) column.startsWith(p) else column.like(p + "%")
      case k =>
        val v = literalOf(c, literal(r, c))
        val (a, b) = if (k % 2 == 0) (column, v) else (v, column)
        r.nextInt(6) match {
          case 0 => a === b
          case 1 => a < b
          case 2 => a <= b
          case 3 => a > b
          case 4 => a >= b
          case _ => a <=> b
        }
    }
  }

  private def predicate(r: Random, depth: Int): Column =
    if (depth == 0 || r.nextInt(3) == 0) leaf(r)
    else
      r.nextInt(3) match {
        case 0 => predicate(r, depth - 1) && predicate(r, depth - 1)
        case 1 => predicate(r, depth - 1) || predicate(r, depth - 1)
        case _ => !predicate(r, depth - 1)
      }

  /** Rows of `files` files; each file draws each column from a few of its values (or all null). */
  private def rows(r: Random, files: Int): Seq[Row] =
    (0 until files).flatMap { file =>
      val narrow = leafColumns.map { c =>
        val d = domains(c)
        c -> (if (r.nextInt(8) == 0) IndexedSeq[Any](null)
              else IndexedSeq.fill(1 + r.nextInt(3))(d(r.nextInt(d.size))))
      }.toMap
      def value(c: String) = {
        val vs = narrow(c)
        if (r.nextInt(10) == 0) null else vs(r.nextInt(vs.size))
      }
      (0 until 1 + r.nextInt(12)).map { _ =>
        Row(
          file,
          value("i"),
          value("l"),
          value("f"),
          value("d"),
          value("dec"),
          value("s"),
          value("dt"),
          value("ts"),
          value("b"),
          if (r.nextInt(10) == 0) null else Row(value("n.x"))
        )
      }
    }

  test(
    "skipping never drops a file holding a matching row; driver, Spark jobs, the column-wise " +
      "pass and the checkpoint filter agree"
  ) {
    var checked, skipped, checkpointAgrees, vectorLeftOut, tailLeftOut, jsonDropped = 0L
    val millis = scala.collection.mutable.LinkedHashMap.empty[String, Long].withDefaultValue(0L)
    var mark = System.nanoTime()
    def phase(name: String): Unit = {
      val now = System.nanoTime()
      millis(name) += (now - mark) / 1000000
      mark = now
    }
    (0 until tables).foreach { t =>
      val r = new Random(seed * 1000003L + t)
      withTempDir { dir =>
        val path = new File(dir, "t").getAbsolutePath
        val nFiles = 6 + r.nextInt(7)
        spark
          .createDataFrame(
            rows(r, nFiles).asJava,
            StructType(StructField("_file", IntegerType) +: schema.fields)
          )
          .repartitionByRange(nFiles, col("_file"))
          .drop("_file")
          .write
          .format("delta")
          .save(path)

        phase("write")
        // the files and the statistics delta-spark wrote, as this connector's log replay reads them
        val snapshot = TableSnapshot.load(spark, path, None, None, sessionConf.log)
        val files = LocalReplay
          .run(
            new LogReader(spark, snapshot.segment, sessionConf.log),
            snapshot.segment,
            needStats = true
          )
          ._1
          .toSeq
        assert(files.size >= 1 && files.forall(_.stats != null), "delta-spark wrote no statistics")
        val entry = FileEntry(snapshot.meta, "UTC")

        phase("stats")
        // predicates as Spark hands them to a scan: resolved, optimized, split into conjuncts
        // (the table's Parquet files read as a plain Parquet table: one commit, so all are live;
        // a Delta read would run delta-spark's own skipping jobs in every optimization)
        val table = spark.read.parquet(path)
        assert(table.inputFiles.length === files.size)
        val predicates = Seq.fill(predicatesPerTable)(predicate(r, 2))
        val pushed: Seq[Seq[Expression]] = predicates.map { p =>
          table
            .where(p)
            .queryExecution
            .optimizedPlan
            .collectFirst { case f: Filter => f.condition }
            .toSeq
            .flatMap(splitConjunctivePredicates)
            .filter(PushedFilters.evaluable)
        }
        val filters = pushed.map(f =>
          FileFilter(entry, PushedFilters(Nil, f, Array.empty, Nil), skipping = true)
        )

        phase("pushdown")
        // which predicates each file's rows satisfy, evaluated by Spark on the rows
        val matching: Map[String, Array[Boolean]] = table
          .select(
            col("_metadata.file_name") +: predicates.zipWithIndex.map { case (p, i) =>
              coalesce(p, functions.lit(false)).as(s"p$i")
            }: _*
          )
          .collect()
          .groupBy(_.getString(0))
          .map { case (file, rs) =>
            file -> predicates.indices.map(i => rs.exists(_.getBoolean(i + 1))).toArray
          }

        phase("rows")
        // what skipping keeps: on the driver, and in a Spark job over the entry columns
        val toEntry = entry.projector()
        val onDriver: Map[String, Seq[Boolean]] = files.map { f =>
          val e = toEntry(f)
          f.path -> filters.map(ff => ff.keepsPartition(e) && ff.mayMatch(e))
        }.toMap
        val pathOrdinal = entry.Ord.Path
        val inJob: Map[String, Seq[Boolean]] = spark
          .createDataFrame(files.map(_.toRow).asJava, LiveFile.Schema)
          .coalesce(1) // one task: each filter compiles once
          .select(entry.columnsFromLiveFile(typedStats = false): _*)
          .queryExecution
          .toRdd
          .map(e =>
            e.getUTF8String(pathOrdinal).toString -> filters.map(ff =>
              ff.keepsPartition(e) && ff.mayMatch(e)
            )
          )
          .collect()
          .toMap

        // the column-wise first passes over the same entries as index columns (an EntryChunk, as
        // the driver index holds them) leave in every file the row-wise predicates keep
        val entries = files.map(toEntry).toIndexedSeq
        val batch = EntryChunk(entry, entries, Array.fill(entries.size)(0L)).batch
        filters.zipWithIndex.foreach { case (ff, i) =>
          val prune = ff.pruneCandidates(batch)
          val skip = ff.skipCandidates(batch)
          files.indices.foreach { k =>
            val e = entries(k)
            if (ff.keepsPartition(e))
              assert(prune.forall(_.get(k)), s"pruning pass left out ${files(k).path}")
            if (ff.mayMatch(e)) {
              assert(
                skip.forall(_.get(k)),
                s"[seed $seed, table $t, predicate $i: ${predicates(i)}] the column-wise skipping " +
                  s"pass left out ${files(k).path} (${files(k).stats})"
              )
            }
            if (skip.exists(!_.get(k))) vectorLeftOut += 1
          }
        }

        phase("skipping")
        // the same filters moved onto the raw rows of a checkpoint (CheckpointFilter), as a
        // first read without an index applies them: never dropping an add skipping keeps
        org.apache.spark.sql.delta.DeltaLog.forTable(spark, path).checkpoint()
        val checkpoint = new File(path, "_delta_log/00000000000000000000.checkpoint.parquet")
        val raw = spark.read.parquet(checkpoint.getAbsolutePath)
        val addType = raw.schema("add").dataType.asInstanceOf[StructType]
        assert(addType.fieldNames.contains(CheckpointLayout.StatsParsedField))
        // one pass over a checkpoint's adds: a column per filter (a filter that cannot move keeps
        // every add); the paths each filter keeps
        def keptBy(adds: DataFrame): Seq[Set[String]] = {
          val fields = adds.schema("add").dataType.asInstanceOf[StructType]
          val kept = adds
            .select(col("add.path") +: filters.map { ff =>
              coalesce(CheckpointFilter(entry, ff).column(fields).getOrElse(lit(true)), lit(false))
            }: _*)
            .collect()
          filters.indices.map(i => kept.filter(_.getBoolean(i + 1)).map(_.getString(0)).toSet)
        }
        val adds = raw.where(col("add").isNotNull)
        val inCheckpoint = keptBy(adds)
        // a checkpoint with statistics as JSON only (as delta-rs writes it, or delta-spark with
        // writeStatsAsStruct off): the filters read the statistics they compare from the JSON
        val inJsonCheckpoint =
          keptBy(adds.withColumn("add", col("add").dropFields(CheckpointLayout.StatsParsedField)))
        // and typed statistics only (delta.checkpoint.writeStatsAsJson=false: no add.stats)
        val inTypedCheckpoint = keptBy(adds.withColumn("add", col("add").dropFields("stats")))

        phase("checkpoint filter")
        // and onto the adds of a commit tail (TailFilter), before their entries are built
        val onTail: Seq[Set[String]] = filters.map { ff =>
          val tf = new TailFilter(entry, ff)
          files.filter(tf.keeps).map(_.path).toSet
        }

        phase("tail filter")
        assert(
          matching.keySet.subsetOf(
            files.map(f => new org.apache.hadoop.fs.Path(f.path).getName).toSet
          )
        )
        predicates.indices.foreach { i =>
          def clue =
            s"[seed $seed, table $t, predicate $i: ${predicates(i)}; pushed: ${pushed(i).mkString(" AND ")}]"
          files.foreach { f =>
            val name = new org.apache.hadoop.fs.Path(f.path).getName
            val rowsMatch = matching.get(name).exists(_(i))
            assert(
              onDriver(f.path)(i) === inJob(f.path)(i),
              s"$clue driver and job differ on $name (${f.stats})"
            )
            assert(
              !onDriver(f.path)(i) || inCheckpoint(i).contains(f.path),
              s"$clue the checkpoint filter dropped $name, which skipping keeps (${f.stats})"
            )
            if (inCheckpoint(i).contains(f.path) == onDriver(f.path)(i)) checkpointAgrees += 1
            assert(
              !onDriver(f.path)(i) || inJsonCheckpoint(i).contains(f.path),
              s"$clue the checkpoint filter over JSON statistics dropped $name, which skipping " +
                s"keeps (${f.stats})"
            )
            if (!inJsonCheckpoint(i).contains(f.path)) jsonDropped += 1
            assert(
              !onDriver(f.path)(i) || inTypedCheckpoint(i).contains(f.path),
              s"$clue the checkpoint filter over typed statistics only dropped $name, which " +
                s"skipping keeps (${f.stats})"
            )
            assert(
              !onDriver(f.path)(i) || onTail(i).contains(f.path),
              s"$clue the tail filter dropped $name, which skipping keeps (${f.stats})"
            )
            if (!onTail(i).contains(f.path)) tailLeftOut += 1
            if (rowsMatch) {
              assert(
                onDriver(f.path)(i),
                s"$clue skipped $name, which holds a matching row (${f.stats})"
              )
            }
            checked += 1
            if (!onDriver(f.path)(i)) skipped += 1
          }
        }
      }
    }
    info(s"time by phase (ms): ${millis.mkString(", ")}")
    info(s"seed $seed: $checked (file, predicate) pairs checked, $skipped skipped")
    info(s"the checkpoint filter decided as skipping does on $checkpointAgrees of them")
    // with stats_parsed in the checkpoint it is as selective as skipping on the entries
    assert(checkpointAgrees > checked * 9 / 10, s"seed $seed: $checkpointAgrees of $checked")
    info(s"the column-wise pass left out $vectorLeftOut of them before the row-wise predicate")
    // it does narrow (floats, decimals, booleans and IN lists are left to the row-wise predicate)
    assert(vectorLeftOut > skipped / 4, s"seed $seed: $vectorLeftOut of $skipped")
    info(s"the checkpoint filter over JSON statistics dropped $jsonDropped of them")
    // it narrows as the tail filter does (the same reader of the JSON)
    assert(jsonDropped > skipped / 4, s"seed $seed: $jsonDropped of $skipped")
    info(s"the tail filter left out $tailLeftOut of them before their entries were built")
    // it narrows too (decimals, dates and timestamps are left to the entries)
    assert(tailLeftOut > skipped / 4, s"seed $seed: $tailLeftOut of $skipped")
    // the property is not vacuous: the rules do skip files
    assert(skipped > checked / 10, s"seed $seed: only $skipped of $checked skipped")
  }
}
