package io.deltareplay.internal.planning

import scala.jdk.CollectionConverters._
import scala.util.Random

import io.deltareplay.internal.index.KeptFile
import io.deltareplay.internal.log.FileEntry
import io.deltareplay.internal.log.{LiveFile, LogSegment, SparkSettings, TableMeta}
import io.deltareplay.internal.log.{TablePaths, TableSnapshot}
import io.deltareplay.internal.skipping.FileFilter
import io.deltareplay.test.SharedSparkSession
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GreaterThan, Literal}
import org.apache.spark.sql.execution.PartitionedFileUtil
import org.apache.spark.sql.execution.datasources.{
  FilePartition,
  FileStatusWithMetadata,
  PartitionDirectory,
  PartitionedFile
}
import org.apache.spark.sql.types.StructType
import org.scalatest.funsuite.AnyFunSuite

/**
 * Bin packing of file splits: the driver's ([[ScanPlanner.splits]], [[DeltaInputPartition.pack]])
 * gives exactly the input partitions Spark's own file scan gives (`FilePartition.maxSplitBytes`,
 * `PartitionedFileUtil.splitFiles`, `FilePartition.getFilePartitions`) for the same files and
 * settings; the executors' ([[Binner]], arrival order, so its bins differ by design) keeps every
 * bin within `maxPartitionBytes` and loses and repeats no split.
 */
class BinnerSuite extends AnyFunSuite with SharedSparkSession {

  private val seed = sys.props.get("deltareplay.test.seed").map(_.toLong).getOrElse(20261125L)

  private val root = new Path("file:/data/binner")
  private val paths = TablePaths(root, FileSystem.getDefaultUri(new Configuration()))
  private val meta = TableMeta(
    TableMeta.Protocol(1, 2, Set.empty, Set.empty, """{"protocol":{}}"""),
    TableMeta.Metadata("id-1", new StructType().add("id", "long"), Nil, Map.empty, "{}")
  )
  private val snapshot = TableSnapshot(
    LogSegment(root, paths, 0L, None, "none", Nil, Nil),
    meta,
    0L,
    meta.schema
  )

  /** File sizes: some tiny, some around the split size, some spanning many splits, ties. */
  private def sizes(r: Random, maxSplit: Long): Seq[Long] =
    Seq
      .fill(1 + r.nextInt(40)) {
        r.nextInt(5) match {
          case 0 => 1L + r.nextInt(64)
          case 1 => maxSplit + r.nextInt(3) - 1
          case 2 => maxSplit * (1 + r.nextInt(4)) + r.nextInt(100)
          case 3 => 1024L * (1 + r.nextInt(4)) // equal sizes: order among ties matters
          case _ => 1L + (r.nextDouble() * maxSplit * 2).toLong
        }
      }
      .map(math.max(1L, _))

  private def name(i: Int) = f"part-$i%05d.parquet"

  private def shape(ps: Seq[Seq[PartitionedFile]]): Seq[Seq[(String, Long, Long)]] =
    ps.map(_.map(f => (f.toPath.getName, f.start, f.length)))

  private def withConf[T](pairs: (String, String)*)(body: => T): T = {
    pairs.foreach { case (k, v) => spark.conf.set(k, v) }
    try body
    finally pairs.foreach { case (k, _) => spark.conf.unset(k) }
  }

  /** Spark's packing of these files, as its file scan plans a non-bucketed read. */
  private def sparkPartitions(files: Seq[(String, Long)]): Seq[Seq[PartitionedFile]] = {
    val statuses = files.map { case (n, size) =>
      FileStatusWithMetadata(new FileStatus(size, false, 1, 1L << 27, 0L, new Path(root, n)))
    }
    val dirs = Seq(PartitionDirectory(InternalRow.empty, statuses))
    val maxSplit = FilePartition.maxSplitBytes(spark, dirs)
    val splits = statuses
      .flatMap(s => PartitionedFileUtil.splitFiles(s, s.getPath, true, maxSplit, InternalRow.empty))
      .sortBy(_.length)(Ordering[Long].reverse)
    FilePartition.getFilePartitions(spark, splits, maxSplit).map(_.files.toSeq)
  }

  private def ourPartitions(files: Seq[(String, Long)]): Seq[Seq[PartitionedFile]] = {
    val kept = files.map { case (n, size) => KeptFile(n, size, 0L, None, InternalRow.empty, None) }
    ScanPlanner.splits(SparkSettings.of(spark), snapshot, kept).toSeq.map(_.files.toSeq)
  }

  test("driver packing: the same input partitions as Spark's file scan, on generated sizes") {
    val r = new Random(seed)
    val settings = Seq(
      Seq.empty[(String, String)],
      Seq(
        "spark.sql.files.maxPartitionBytes" -> "4096",
        "spark.sql.files.openCostInBytes" -> "512"
      ),
      Seq("spark.sql.files.maxPartitionBytes" -> "10000", "spark.sql.files.openCostInBytes" -> "0"),
      Seq(
        "spark.sql.files.maxPartitionBytes" -> "1000",
        "spark.sql.files.openCostInBytes" -> "4000"
      )
    )
    var compared = 0
    settings.foreach { conf =>
      withConf(conf: _*) {
        val maxBytes = spark.sessionState.conf.filesMaxPartitionBytes
        (0 until 60).foreach { iteration =>
          val files = sizes(r, maxBytes / (1 + r.nextInt(4))).zipWithIndex.map { case (s, i) =>
            name(i) -> s
          }
          val expected = shape(sparkPartitions(files))
          assert(
            shape(ourPartitions(files)) === expected,
            s"[seed $seed, settings $conf, iteration $iteration] sizes ${files.map(_._2)}"
          )
          compared += 1
        }
      }
    }
    info(s"seed $seed: $compared file lists packed as Spark packs them")
  }

  test("driver packing follows Spark's minimum partition number settings") {
    val files = (0 until 40).map(i => name(i) -> (100000L + i * 1000L))
    Seq("spark.sql.files.minPartitionNum" -> "32", "spark.sql.leafNodeDefaultParallelism" -> "16")
      .foreach { setting =>
        withConf(setting) {
          val expected = shape(sparkPartitions(files))
          assert(shape(ourPartitions(files)) === expected, setting)
        }
      }
  }

  test("BinPacker: a split joins the open bin unless it would overflow it; each costs openCost") {
    val p = new BinPacker(maxSplit = 100, openCost = 10)
    // 60 (+10) -> 70; 30 fits (70 + 30 = 100); then 1 would overflow
    assert(Seq(60L, 30L, 1L, 100L, 0L, 0L, 200L, 5L).map(p.add) === Seq(0, 0, 1, 2, 3, 3, 4, 5))
  }

  test("executor binner: every bin within maxPartitionBytes; no split lost or repeated") {
    val r = new Random(seed + 1)
    val entry = FileEntry(meta, "UTC")
    Seq(4096L -> 512L, 10000L -> 0L, 1000L -> 4000L).foreach { case (maxSplit, openCost) =>
      withTempDir { dir =>
        // many splits below maxSplit (bins of several), some tiny (skipped), some of many splits
        val generated = Seq.fill(30 + r.nextInt(30))(1L + r.nextInt(maxSplit.toInt)) ++
          Seq.fill(3)(maxSplit * (1 + r.nextInt(3)) + r.nextInt(50))
        val files = generated.zipWithIndex.map { case (s, i) =>
          LiveFile(name(i), Map.empty, s, i.toLong, null, None)
        }
        // a skipping filter over the entries: files of at most 40 bytes are dropped
        val filter = FileFilter(
          Literal.TrueLiteral,
          GreaterThan(entry.attribute("size"), Literal(40L)),
          entry.attributes
        )
        val live = spark.sparkContext.longAccumulator
        val pruned = spark.sparkContext.longAccumulator
        val binner = new Binner(entry, filter, maxSplit, openCost, live, pruned)
        val writer = ManifestWriter(
          spark,
          spark.sessionState.conf,
          new Path(dir.toURI),
          Manifests.schema(entry)
        )
        val summaries = spark
          .createDataFrame(r.shuffle(files).map(_.toRow).asJava, LiveFile.Schema)
          .repartition(3) // three tasks, three arrival orders, three manifests
          .select(entry.columnsFromLiveFile(typedStats = false): _*)
          .queryExecution
          .toRdd
          .mapPartitions(rows => binner.write(rows, writer))
          .collect()
          .toSeq
        val clue =
          s"[seed $seed, maxSplit $maxSplit, openCost $openCost, sizes ${files.map(_.size)}]"
        assert(live.sum === files.size && pruned.sum === files.size, clue)

        // the splits each manifest holds, by (manifest, bin)
        val manifests = summaries.map(_.manifest).distinct
        val written = manifests.flatMap { m =>
          spark.read
            .parquet(m)
            .select("bin", "path", "start", "length")
            .collect()
            .map(row => (m, row.getInt(0), row.getString(1), row.getLong(2), row.getLong(3)))
        }
        val bins = written.groupBy(w => (w._1, w._2))
        assert(bins.keySet === summaries.map(s => (s.manifest, s.bin)).toSet, clue)
        bins.foreach { case (bin, splits) =>
          val bytes = splits.map(_._5).sum
          assert(bytes + openCost * (splits.size - 1) <= maxSplit, s"$clue bin $bin: $splits")
          val summary = summaries.find(s => (s.manifest, s.bin) == bin).get
          assert(summary.bytes === bytes && summary.files === splits.count(_._4 == 0), clue)
        }

        // exactly the splits of the files skipping keeps, each once
        val expected = files.filter(_.size > 40).flatMap { f =>
          (0L until f.size by maxSplit).map(s => (f.path, s, math.min(maxSplit, f.size - s)))
        }
        val actual = written.map(w => (w._3, w._4, w._5))
        assert(actual.sorted === expected.sorted, clue)
      }
    }
  }
}
