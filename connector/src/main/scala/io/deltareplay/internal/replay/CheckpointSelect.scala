package io.deltareplay.internal.replay

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import io.deltareplay.internal.log.{CheckpointLayout, FileEntry}
import io.deltareplay.internal.log.BufferedInputFile
import io.deltareplay.internal.skipping.SkipVector
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.parquet.HadoopReadOptions
import org.apache.parquet.column.page.PageReadStore
import org.apache.parquet.filter2.compat.FilterCompat
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.internal.filter2.columnindex.RowRanges
import org.apache.parquet.io.ColumnIOFactory
import org.apache.spark.paths.SparkPath
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.catalyst.types.DataTypeUtils.toAttributes
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.datasources.parquet.{
  DeltaReplayParquetRows,
  ParquetUtils,
  RowSplitParquetFormat,
  RowSplits
}
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.util.{LongAccumulator, SerializableConfiguration}

/**
 * Reads the rows of checkpoint Parquet files that a filter may keep, decoding the wide columns only
 * for those rows. A selective first query over a big table needs a handful of the checkpoint's
 * adds, but a one-pass read decodes every column of every row: above all `add.path`, a distinct
 * string per row that dictionary encoding cannot shrink. Page skipping by min/max does not help
 * there, since a checkpoint's rows are not ordered by the filtered column, so every page spans the
 * whole range.
 *
 * One task per split of a file (`spark.sql.files.maxPartitionBytes`, each taking the row groups
 * whose middle falls in its range, as a file scan does; with `replay.checkpointRowSplits`, splits
 * sized as a file scan sizes them, each taking the rows of its byte range, so that a file of one
 * row group is read by several tasks: [[RowSplitParquetFormat]]), two passes:
 *   1. Spark's vectorized Parquet reader decodes only the leaves the filter reads (a partition
 *      value, a column's min and max, ...), and the filter, with `add IS NOT NULL`, gives the
 *      positions of the rows it keeps. A struct's nulls are held by every leaf below it, so the
 *      pruned `add` and `add.stats_parsed` are null exactly where the full ones are. 2. parquet-mr
 *      reads the file's row groups restricted to exactly those rows (its page index: the offset
 *      index says which pages hold them, the pages of other rows are not read or decompressed, and
 *      within a page only the kept rows are assembled), and Spark's Parquet read support turns them
 *      into rows of the full read schema, as Spark's own reader would.
 *
 * When a file lacks offset indexes, or more than [[MaxSelectedShare]] of its rows pass, or the
 * first pass did not see the footer's row count, the task reads the file whole with the vectorized
 * reader instead (the filter runs after either way): never fewer rows than the filter keeps.
 *
 * Only the checkpoint's adds are wanted (the first pass asks for `add IS NOT NULL`; a file read
 * whole gives its other rows too, which the condition drops), and of them only the `add` fields the
 * caller asks for: a checkpoint row holds one action, so the other columns of an add's row are null
 * and their pages need not be read (in pass 2 a page per column and kept row).
 */
private[deltareplay] object CheckpointSelect {

  /** Above this share of a file's rows passing, the file is read whole (pass 2 is row by row). */
  val MaxSelectedShare = 0.05

  /**
   * Rows a task's condition or projection is interpreted for before it is compiled: a selective
   * filter leaves a handful, and in a new JVM compiling costs more than they do.
   */
  val InterpretedRows = 4096L

  /** `bound` as a predicate: interpreted for the first [[InterpretedRows]] rows, then compiled. */
  def predicateOf(bound: Expression): InternalRow => Boolean = {
    val interpreted = Predicate.createInterpreted(bound)
    interpreted.initialize(0)
    warming(interpreted.eval, { val p = Predicate.create(bound); p.initialize(0); p.eval })
  }

  /** `bound` as an unsafe projection: interpreted for the first rows, then compiled. */
  def projectionOf(bound: Seq[Expression]): InternalRow => UnsafeRow = {
    val interpreted = InterpretedUnsafeProjection.createProjection(bound)
    interpreted.initialize(0)
    warming(interpreted(_), { val p = UnsafeProjection.create(bound); p.initialize(0); p(_) })
  }

  /** `interpreted` for the first [[InterpretedRows]] rows, then `compiled` (made only then). */
  private def warming[T](
      interpreted: InternalRow => T,
      compiled: => InternalRow => T
  ): InternalRow => T = {
    lazy val later = compiled
    var calls = 0L
    row => {
      calls += 1
      if (calls <= InterpretedRows) interpreted(row) else later(row)
    }
  }

  /**
   * The adds of `files` (checkpoint Parquet files) that `filter` may keep, and maybe more rows:
   * `condition` (`filter` and `add IS NOT NULL`, bound to the rows) drops the rest. The rows hold
   * one column, `add`, with the fields of `addType` (those of the checkpoint's `add` a caller uses,
   * which must include the fields `filter` reads).
   */
  final case class Selected(rows: RDD[InternalRow], schema: StructType, condition: Expression) {

    /** The rows as a DataFrame (apply the filter to it). */
    def frame(spark: SparkSession): DataFrame = SparkBridge.internalDataFrame(spark, rows, schema)
  }

  /**
   * The adds of `files` (of `layout`) that `filter` keeps, as index entries of `entry` (statistics
   * as [[CheckpointLayout.entryOfAdd]] takes them): the filter and the entries computed in the
   * tasks, without a DataFrame.
   */
  def entries(
      spark: SparkSession,
      files: Seq[FileStatus],
      layout: CheckpointLayout,
      filter: Column,
      entry: FileEntry,
      typed: Option[DataType],
      needStats: Boolean,
      replay: ReplaySettings,
      rowsRead: LongAccumulator,
      rowsDecoded: LongAccumulator
  ): RDD[InternalRow] = {
    val fields = layout.selectFields(needStats, typed)
    val selected = select(spark, files, fields, filter, replay, rowsRead, rowsDecoded)
    val condition = selected.condition
    val toEntry = layout.entryOfAdd(entry, fields, typed, needStats)
    SparkBridge.mapPartitionsUncleaned(selected.rows) { rows =>
      val keep = predicateOf(condition)
      val project = projectionOf(toEntry)
      rows.filter(keep).map(project)
    }
  }

  /**
   * The rows of `files` that `filter` may keep (see [[Selected]]). `rowsRead` counts the rows the
   * first pass read, `rowsDecoded` the rows decoded in full.
   */
  def select(
      spark: SparkSession,
      files: Seq[FileStatus],
      addType: StructType,
      filter: Column,
      replay: ReplaySettings,
      rowsRead: LongAccumulator,
      rowsDecoded: LongAccumulator
  ): Selected = {
    val rowSplits = replay.checkpointRowSplits
    val sparkSettings = replay.log.sparkSettings
    val sql = sparkSettings.sql
    val decoded = new StructType().add("add", addType)
    val (condition, pass) = firstPass(spark, decoded, filter)
    val readPass = new RowSplitParquetFormat(rowSplits, sql).buildReaderWithPartitionValues(
      spark,
      pass.schema,
      new StructType(),
      pass.schema,
      Nil,
      Map(
        "returning_batch" -> ParquetUtils.isBatchReadSupportedForSchema(sql, pass.schema).toString
      ),
      spark.sessionState.newHadoopConf()
    )
    // building the whole-file reader also puts the read schema and Spark's Parquet settings into
    // `conf`, which the row reader of the second pass reads them from
    val conf = spark.sessionState.newHadoopConf()
    val readWhole = new RowSplitParquetFormat(rowSplits, sql).buildReaderWithPartitionValues(
      spark,
      decoded,
      new StructType(),
      decoded,
      Nil,
      Map("returning_batch" -> "false"),
      conf
    )
    val settings = DeltaReplayParquetRows.settings(sql)
    // both passes must read the same rows of a split: both by rows, or both by row groups
    val byRowsFirst = RowSplitParquetFormat.splitsByRows(rowSplits, sql, pass.schema)
    val byRows = byRowsFirst && RowSplitParquetFormat.splitsByRows(rowSplits, sql, decoded)
    val sharedConf = spark.sparkContext.broadcast(new SerializableConfiguration(conf))
    // by rows: splits sized as a file scan sizes them (Spark's rule: `maxPartitionBytes`, the open
    // cost and the cores), each reading the rows of its byte range (in both passes); by row groups:
    // splits of `maxPartitionBytes` (more, smaller ones would leave a file of one row group in one
    // of them and the others empty, each still opening the file); a file of passes that would not
    // agree is read in one split
    val splitBytes =
      if (byRowsFirst != byRows) Long.MaxValue
      else if (!byRows) math.max(1L, sparkSettings.maxPartitionBytes)
      else
        math.max(
          1L,
          sparkSettings.maxSplitBytes(
            files.iterator.map(_.getLen + sparkSettings.openCostInBytes).sum
          )
        )
    val described = files.flatMap { f =>
      (0L until math.max(1L, f.getLen) by splitBytes).map { start =>
        val length = math.min(splitBytes, f.getLen - start)
        (f.getPath.toString, start, length, f.getLen, f.getModificationTime)
      }
    }
    val splits = spark.sparkContext.parallelize(described, math.max(1, described.size))
    val rows = SparkBridge.mapPartitionsUncleaned(splits) { it =>
      // made only for a file read whole (a compile of the wide read schema otherwise saved)
      lazy val project = UnsafeProjection.create(decoded)
      it.flatMap { case (path, start, length, fileLength, modified) =>
        val file = PartitionedFile(
          InternalRow.empty,
          SparkPath.fromPath(new Path(path)),
          start,
          length,
          Array.empty,
          modified,
          fileLength,
          Map.empty
        )
        val keep = positions(readPass(file), pass)
        rowsRead.add(keep.seen)
        if (keep.rows.isEmpty) Iterator.empty
        else
          {
            val few = keep.rows.length <= MaxSelectedShare * keep.seen
            if (few) selected(file, keep, sharedConf.value.value, settings, byRows) else None
          } match {
            case Some(found) =>
              rowsDecoded.add(found.length.toLong)
              found.iterator
            case None =>
              rowsDecoded.add(keep.seen)
              readWhole(file).map(project(_).copy())
          }
      }
    }
    Selected(rows, decoded, condition)
  }

  /** Kept row positions (ascending, over the split's rows) and the number of rows seen. */
  private final case class Kept(rows: Array[Long], seen: Long)

  /**
   * The positions of the rows `pass` keeps. The reader hands out columnar batches (or rows, when
   * the session turned the vectorized reader off): in a batch, [[SkipVector]] first finds the rows
   * the condition may keep with one loop per comparison, and the condition runs on those only.
   */
  private def positions(rows: Iterator[InternalRow], pass: FirstPass): Kept = {
    val predicate = predicateOf(pass.bound)
    lazy val vector = SkipVector(pass.condition, pass.input)
    val kept = mutable.ArrayBuilder.make[Long]
    var at = 0L
    rows.asInstanceOf[Iterator[Any]].foreach {
      case batch: ColumnarBatch =>
        val n = batch.numRows()
        val maybe = vector.fold { val all = new java.util.BitSet(n); all.set(0, n); all }(
          _.candidates(batch)
        )
        var i = maybe.nextSetBit(0)
        while (i >= 0 && i < n) {
          if (predicate(batch.getRow(i))) kept += at + i
          i = maybe.nextSetBit(i + 1)
        }
        at += n
      case row: InternalRow =>
        if (predicate(row)) kept += at
        at += 1
    }
    Kept(kept.result(), at)
  }

  /**
   * The first pass: its read schema, and its condition (the filter and `add IS NOT NULL`) over
   * `input` (its attributes), also bound to them.
   */
  private final case class FirstPass(
      schema: StructType,
      condition: Expression,
      input: Seq[Attribute],
      bound: Expression
  )

  /**
   * The rows at `keep`'s positions, decoded by parquet-mr through Spark's read support; None when
   * the file cannot be read that way (no offset index for a column read, or another row count than
   * the first pass saw).
   */
  private def selected(
      file: PartitionedFile,
      keep: Kept,
      conf: org.apache.hadoop.conf.Configuration,
      settings: DeltaReplayParquetRows.Settings,
      splitByRows: Boolean
  ): Option[Array[InternalRow]] = {
    val path = file.toPath
    // opened with its known length and time: on an object store, no HEAD request
    val status = new FileStatus(file.fileSize, false, 1, 0L, file.modificationTime, path)
    // the rows the first pass read: by the row rule when it split the file by rows, else the row
    // groups Parquet's range gives the split
    val byRows = splitByRows && !RowSplits.coversFile(file)
    val options = HadoopReadOptions.builder(conf, path)
    if (!byRows) options.withRange(file.start, file.start + file.length)
    val reader = ParquetFileReader.open(
      new BufferedInputFile(HadoopInputFile.fromStatus(status, conf), IndexBufferBytes),
      options.build()
    )
    try {
      val meta = reader.getFooter.getFileMetaData
      val blocks = reader.getRowGroups.asScala.toSeq
      // a file the first pass read by Spark's rule although split by rows is read whole
      if (byRows && !RowSplits.splittable(blocks)) return None
      val parts =
        if (byRows) RowSplits.rowsOf(blocks, file.start, file.length)
        else blocks.indices.map(b => (b, 0L, blocks(b).getRowCount)).toArray
      val (materializer, requested) = DeltaReplayParquetRows.materializer(conf, meta, settings)
      val readPaths = requested.getColumns.asScala.map(_.getPath.toSeq).toSet
      val indexed = parts.forall { case (b, _, _) =>
        blocks(b).getColumns.asScala
          .filter(c => readPaths.contains(c.getPath.toArray.toSeq))
          .forall(_.getOffsetIndexReference != null)
      }
      if (!indexed || parts.map { case (_, lo, hi) => hi - lo }.sum != keep.seen) return None
      reader.setRequestedSchema(requested)
      val io = new ColumnIOFactory(meta.getCreatedBy).getColumnIO(requested, meta.getSchema, true)
      val out = mutable.ArrayBuilder.make[InternalRow]
      var start = 0L // the split's position of the part's first row
      var next = 0 // the first position not read yet
      parts.foreach { case (b, lo, hi) =>
        val count = hi - lo
        val from = next
        while (next < keep.rows.length && keep.rows(next) < start + count) next += 1
        if (next > from) {
          val inBlock = keep.rows.slice(from, next).map(_ - start + lo)
          val pages: PageReadStore =
            reader.readFilteredRowGroup(b, rowRanges(blocks(b).getRowCount, inBlock))
          val records = io.getRecordReader(pages, materializer, FilterCompat.NOOP)
          val indexes = pages.getRowIndexes.orElse(null) // one iterator (each call makes one)
          var i = 0L
          while (i < pages.getRowCount) {
            val row = records.read()
            // rows outside the asked ranges would only be extra rows (the filter runs after), but
            // a reader that returns them means its ranges are not what this counts on
            if (indexes != null && java.util.Arrays.binarySearch(inBlock, indexes.nextLong()) < 0) {
              return None
            }
            out += row.copy()
            i += 1
          }
        }
        start += count
      }
      Some(out.result())
    } finally reader.close()
  }

  /**
   * Small reads of the second pass (the offset indexes, decoded a byte per read) come from buffers
   * of this size: the offset indexes of a checkpoint's columns are side by side near its footer.
   */
  val IndexBufferBytes: Int = 64 << 10

  /** Ranges of single rows (positions within a row group, ascending). */
  private def rowRanges(rowCount: Long, rows: Array[Long]): RowRanges =
    RowSplits.ranges(rowCount, rows.length, rows(_), rows(_))

  /**
   * `filter` bound to rows of `readSchema`, and the first pass: the leaves of `readSchema` that
   * `filter` reads (and one leaf of `add` at least) and the condition over them, `filter` and `add
   * IS NOT NULL`. The filter is analysed once and moved onto the cut-down columns by field name.
   */
  private def firstPass(
      spark: SparkSession,
      readSchema: StructType,
      filter: Column
  ): (Expression, FirstPass) = {
    val (condition, output) = {
      val attributes = toAttributes(readSchema)
      resolvedByName(SparkBridge.expression(filter), attributes).map(_ -> attributes).getOrElse {
        val empty = SparkBridge.internalDataFrame(spark, spark.sparkContext.emptyRDD, readSchema)
        empty.where(filter).queryExecution.analyzed match {
          case Filter(c, child) => (c, child.output)
          case other => throw new IllegalStateException(s"not a filter: $other")
        }
      }
    }
    val pruned = StructType(readSchema.fields.flatMap { f =>
      val paths = leafPaths(condition, f.name)
      if (paths.nonEmpty) Some(f.copy(dataType = keep(f.dataType, paths)))
      else if (f.name == "add") Some(f.copy(dataType = keep(f.dataType, Seq(Read(Nil, true)))))
      else None
    })
    val input = toAttributes(pruned)
    val byName = input.map(a => a.name -> a).toMap
    def moved(e: Expression): Expression = e match {
      case a: AttributeReference => byName(a.name)
      case g: GetStructField =>
        val name = g.childSchema(g.ordinal).name
        val child = moved(g.child)
        GetStructField(child, child.dataType.asInstanceOf[StructType].fieldIndex(name), Some(name))
      case other => other.withNewChildren(other.children.map(moved))
    }
    val onPruned =
      byName.get("add").fold(moved(condition))(a => And(moved(condition), IsNotNull(a)))
    val onRows = output.find(_.name == "add").fold(condition)(a => And(condition, IsNotNull(a)))
    (
      BindReferences.bindReference(onRows, AttributeSeq(output)),
      FirstPass(
        pruned,
        onPruned,
        input,
        BindReferences.bindReference(onPruned, AttributeSeq(input))
      )
    )
  }

  /**
   * `filter` over `output` without Spark's analysis, a noticeable part of a first read on a new
   * driver: [[CheckpointFilter]] names checkpoint fields by their exact paths and builds everything
   * else resolved and typed (casts with their time zone), so resolving is looking the paths up.
   * None when that does not hold (a path that is not exactly one field, anything left unresolved):
   * the analyzer resolves it then.
   */
  private[internal] def resolvedByName(
      filter: Expression,
      output: Seq[Attribute]
  ): Option[Expression] = {
    def field(names: Seq[String]): Option[Expression] =
      output.filter(_.name == names.head) match {
        case Seq(a) =>
          names.tail.foldLeft(Option[Expression](a)) { (found, name) =>
            found.flatMap { e =>
              e.dataType match {
                case s: StructType if s.fieldNames.count(_ == name) == 1 =>
                  Some(GetStructField(e, s.fieldIndex(name), Some(name)))
                case _ => None
              }
            }
          }
        case _ => None
      }
    var complete = true
    val resolved = filter.transformUp { case u: UnresolvedAttribute =>
      field(u.nameParts).getOrElse { complete = false; u }
    }
    Some(resolved).filter(r => complete && r.resolved && r.dataType == BooleanType)
  }

  /**
   * The field paths below the top-level column `name` that `e` reads (a struct read whole, as in
   * `add.stats_parsed IS NULL`, gives its own path; [[keep]] then keeps one leaf of it).
   */
  private def leafPaths(e: Expression, name: String): Seq[Read] = {
    def path(x: Expression): Option[Seq[String]] = x match {
      case a: AttributeReference if a.name == name => Some(Vector.empty)
      case GetStructField(child, ordinal, _) =>
        path(child).map(_ :+ child.dataType.asInstanceOf[StructType](ordinal).name)
      case _ => None
    }
    val found = mutable.ArrayBuffer.empty[Read]
    def walk(x: Expression): Unit = x match {
      case IsNull(c) if path(c).isDefined => found += Read(path(c).get, nullsOnly = true)
      case IsNotNull(c) if path(c).isDefined => found += Read(path(c).get, nullsOnly = true)
      case _ =>
        path(x) match {
          case Some(p) => found += Read(p, nullsOnly = false)
          case None => x.children.foreach(walk)
        }
    }
    walk(e)
    found.toSeq
  }

  /** A field path an expression reads; `nullsOnly`: only whether it is null. */
  private final case class Read(path: Seq[String], nullsOnly: Boolean)

  /**
   * `t` cut down to what `reads` (paths inside it) need: a value read whole keeps its type whole; a
   * struct of which only fields are read keeps those fields (cut down the same way); a struct of
   * which only the nulls are read keeps its first field, whose leaves hold the struct's nulls.
   */
  private def keep(t: DataType, reads: Seq[Read]): DataType = t match {
    case s: StructType if s.nonEmpty && !reads.exists(r => r.path.isEmpty && !r.nullsOnly) =>
      val inner = reads.filter(_.path.nonEmpty)
      val wanted =
        if (inner.isEmpty) Seq(s.fields.head.name)
        else s.fieldNames.toSeq.filter(n => inner.exists(_.path.head == n))
      StructType(wanted.map { n =>
        val f = s(n)
        val below = inner.filter(_.path.head == n).map(r => r.copy(path = r.path.tail))
        f.copy(dataType = keep(f.dataType, if (below.isEmpty) Seq(Read(Nil, true)) else below))
      })
    case other => other
  }
}
