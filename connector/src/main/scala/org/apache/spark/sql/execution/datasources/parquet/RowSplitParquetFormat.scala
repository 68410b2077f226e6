package org.apache.spark.sql.execution.datasources.parquet

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus
import org.apache.hadoop.mapreduce.{JobID, TaskAttemptID, TaskID, TaskType}
import org.apache.hadoop.mapred.FileSplit
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl
import org.apache.parquet.HadoopReadOptions
import org.apache.parquet.column.page.PageReadStore
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.BlockMetaData
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.internal.column.columnindex.OffsetIndex
import org.apache.parquet.internal.filter2.columnindex.RowRanges
import org.apache.spark.TaskContext
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.{
  FileFormat,
  PartitionedFile,
  RecordReaderIterator
}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.SerializableConfiguration

/**
 * Spark's Parquet format, with a file's splits dividing its row groups by rows rather than handing
 * each row group whole to one split. A checkpoint of a million files written as one Parquet file of
 * one row group (delta-spark's, with Parquet's default block size) is otherwise read by one task
 * however many cores wait: Spark cuts the file into splits, and the split holding the row group's
 * middle reads it all.
 *
 * The rule ([[RowSplits.rowsOf]]): row `r` of a row group of `n` rows that starts at byte `o` and
 * spans `s` bytes sits at byte `o + floor(s * r / n)`, and a split reads the rows that sit in its
 * byte range. Splits tile a file, so each row is read by exactly one of them, and a split covering
 * the whole file reads every row, as Spark's reader does. A split reads only the pages holding its
 * rows (parquet-mr's page index: the offset index says which pages those are) and skips the other
 * rows of those pages, as Spark's vectorized reader does for a filter that column indexes narrow.
 *
 * Spark's reader reads a file when the split covers the whole file, when the vectorized reader does
 * not serve the read schema, or when some column chunk of the file has no offset index (then every
 * split of it keeps Spark's rule, decided from the footer alone, so the splits still agree). A
 * filter pushed to Parquet prunes only in Spark's reader: the rows of a split read here are all
 * returned, and the scan's filter drops them after, as it does for any row a pushed filter keeps.
 */
class RowSplitParquetFormat(rowSplits: Boolean, sql: SQLConf) extends ParquetFileFormat {

  override def toString: String = "Parquet (row splits)"

  override def buildReaderWithPartitionValues(
      sparkSession: SparkSession,
      dataSchema: StructType,
      partitionSchema: StructType,
      requiredSchema: StructType,
      filters: Seq[Filter],
      options: Map[String, String],
      hadoopConf: Configuration
  ): PartitionedFile => Iterator[InternalRow] = {
    // Spark's reader first: building it puts the read schema and Spark's Parquet settings into
    // `hadoopConf`, which the split reader's read support takes them from
    val whole = super.buildReaderWithPartitionValues(
      sparkSession,
      dataSchema,
      partitionSchema,
      requiredSchema,
      filters,
      options,
      hadoopConf
    )
    val byRows = RowSplitParquetFormat.splitsByRows(
      rowSplits,
      sql,
      StructType(requiredSchema.fields ++ partitionSchema.fields)
    )
    // (off: Spark's reader as it is, with nothing more broadcast)
    if (!byRows) return whole
    val returningBatch = options.get(FileFormat.OPTION_RETURNING_BATCH).exists(_.toBoolean)
    val split = RowSplits.Reading(
      DeltaReplayParquetRows.settings(sql),
      sql.offHeapColumnVectorEnabled,
      sql.parquetVectorizedReaderBatchSize,
      partitionSchema,
      returningBatch
    )
    val conf = sparkSession.sparkContext.broadcast(new SerializableConfiguration(hadoopConf))
    (file: PartitionedFile) =>
      if (RowSplits.coversFile(file)) whole(file)
      else RowSplits.read(file, conf.value.value, split).getOrElse(whole(file))
  }
}

object RowSplitParquetFormat {

  /**
   * Whether a read of `schema` (its columns and partition columns) divides row groups by rows: when
   * the read's settings turn row splits on (`rowSplits`: `replay.checkpointRowSplits`) and Spark's
   * vectorized reader serves it.
   */
  def splitsByRows(rowSplits: Boolean, conf: SQLConf, schema: StructType): Boolean =
    rowSplits && conf.parquetVectorizedReaderEnabled &&
      ParquetUtils.isBatchReadSupportedForSchema(conf, schema)
}

/** The row rule of [[RowSplitParquetFormat]] and its reader. */
object RowSplits {

  /**
   * Whether a file's splits divide its row groups by rows: every column chunk has an offset index.
   */
  def splittable(blocks: Seq[BlockMetaData]): Boolean =
    blocks.forall(_.getColumns.asScala.forall(_.getOffsetIndexReference != null))

  /**
   * The rows of `blocks` (a file's row groups, in file order) that the split `[start, start +
   * length)` reads: (row group index, first row, end row), non-empty ranges only.
   */
  def rowsOf(blocks: Seq[BlockMetaData], start: Long, length: Long): Array[(Int, Long, Long)] =
    blocks.zipWithIndex.flatMap { case (b, i) =>
      val n = b.getRowCount
      val s = b.getCompressedSize
      // the first row at or after byte `at`: the smallest r with floor(s * r / n) >= at - o
      def firstAt(at: Long): Long = {
        val k = at - b.getStartingPos
        if (k <= 0) 0L
        else if (s <= 0 || k >= s) n
        else ((BigInt(k) * n + s - 1) / s).toLong.min(n)
      }
      val (lo, hi) = (firstAt(start), firstAt(start + length))
      if (hi > lo) Some((i, lo, hi)) else None
    }.toArray

  /**
   * `count` ranges of rows of a row group of `rowCount` rows, range `i` from row `first(i)` to row
   * `last(i)` (both included; ascending), as parquet-mr's page index takes them.
   */
  def ranges(rowCount: Long, count: Int, first: Int => Long, last: Int => Long): RowRanges =
    RowRanges.create(
      rowCount,
      java.util.stream.IntStream.range(0, count).iterator(),
      new OffsetIndex {
        // one "page" per range: RowRanges reads only the first and last row of each
        def getPageCount: Int = count
        def getOffset(i: Int): Long = 0L
        def getCompressedPageSize(i: Int): Int = 0
        def getFirstRowIndex(i: Int): Long = first(i)
        override def getLastRowIndex(i: Int, rowGroupRowCount: Long): Long = last(i)
      }
    )

  /** The pages of `file`'s row group `b` holding rows `[lo, hi)` (the group whole if all). */
  def pages(file: ParquetFileReader, b: Int, lo: Long, hi: Long): PageReadStore = {
    val count = file.getRowGroups.get(b).getRowCount
    if (lo == 0 && hi == count) file.readRowGroup(b)
    else file.readFilteredRowGroup(b, ranges(count, 1, _ => lo, _ => hi - 1))
  }

  /** Whether a split covers its whole file (every rule then reads every row of it). */
  def coversFile(file: PartitionedFile): Boolean = file.start == 0 && file.length >= file.fileSize

  /** What a split read needs from the driver. */
  final case class Reading(
      settings: DeltaReplayParquetRows.Settings,
      offHeap: Boolean,
      capacity: Int,
      partitionSchema: StructType,
      returningBatch: Boolean
  )

  /**
   * The rows of `file`'s split by the row rule, as Spark's vectorized reader makes them; None when
   * the file keeps Spark's rule (a column chunk without an offset index).
   */
  def read(
      file: PartitionedFile,
      conf: Configuration,
      how: Reading
  ): Option[Iterator[InternalRow]] = {
    val path = file.toPath
    // opened with its known length and time: on an object store, no HEAD request
    val status = new FileStatus(file.fileSize, false, 1, 0L, file.modificationTime, path)
    val input = HadoopInputFile.fromStatus(status, conf)
    val parquet = ParquetFileReader.open(input, HadoopReadOptions.builder(conf, path).build())
    val reader =
      try {
        val blocks = parquet.getRowGroups.asScala.toSeq
        if (!splittable(blocks)) {
          parquet.close()
          return None
        }
        val rows = rowsOf(blocks, file.start, file.length)
        if (rows.isEmpty) {
          parquet.close()
          return Some(Iterator.empty)
        }
        val c = DeltaReplayParquetRows.conversions(parquet.getFooter.getFileMetaData, how.settings)
        val r = new RowSplitReader(
          c.convertTz.orNull,
          c.datetime.mode.toString,
          c.datetime.timeZone,
          c.int96.mode.toString,
          c.int96.timeZone,
          how.offHeap && TaskContext.get() != null,
          how.capacity
        )
        val attempt = new TaskAttemptID(new TaskID(new JobID(), TaskType.MAP, 0), 0)
        r.initialize(
          new FileSplit(path, 0, file.fileSize, Array.empty[String]),
          new TaskAttemptContextImpl(conf, attempt)
        )
        r.restrict(parquet, rows)
        r.initBatch(how.partitionSchema, file.partitionValues)
        if (how.returningBatch) r.enableReturningBatches()
        r
      } catch {
        case e: Throwable =>
          parquet.close()
          throw e
      }
    val iter = new RecordReaderIterator(reader)
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => iter.close()))
    Some(iter.asInstanceOf[Iterator[InternalRow]])
  }
}

/**
 * Spark's vectorized reader over chosen rows of chosen row groups: initialized as Spark initializes
 * it (read schema, missing columns, types), then handed the row groups to read.
 *
 * The reader takes its row groups from a `ParquetRowGroupReader`, an interface private to Spark's
 * package. This class is loaded by another class loader than Spark's when the connector comes as a
 * jar (`--jars`, `--packages`), which makes it another package to the JVM: it can neither name nor
 * implement that interface. So the row groups come through a proxy defined beside the interface,
 * set into the reader's field by reflection, and the reader's own `close` closes the one it had.
 */
private final class RowSplitReader(
    convertTz: java.time.ZoneId,
    datetimeRebaseMode: String,
    datetimeRebaseTz: String,
    int96RebaseMode: String,
    int96RebaseTz: String,
    useOffHeap: Boolean,
    capacity: Int
) extends VectorizedParquetRecordReader(
      convertTz,
      datetimeRebaseMode,
      datetimeRebaseTz,
      int96RebaseMode,
      int96RebaseTz,
      useOffHeap,
      capacity
    ) {

  /**
   * Read `rows` (row group, first row, end row) of `file` instead of the split's row groups. Call
   * after `initialize`, before `initBatch`.
   */
  def restrict(file: ParquetFileReader, rows: Array[(Int, Long, Long)]): Unit = {
    close() // the row groups Spark's initialization opened (no batch exists yet)
    file.setRequestedSchema(requestedSchema)
    val groups = rows.iterator
    val handler: java.lang.reflect.InvocationHandler = (_, method, _) =>
      method.getName match {
        case "readNextRowGroup" =>
          if (!groups.hasNext) null
          else {
            val (b, lo, hi) = groups.next()
            RowSplits.pages(file, b, lo, hi)
          }
        case "close" => file.close(); null
        case "toString" => s"row splits of ${file.getFile}"
        case "hashCode" => Int.box(System.identityHashCode(file))
        case "equals" => Boolean.box(false)
        case other => throw new UnsupportedOperationException(other)
      }
    val proxy = java.lang.reflect.Proxy
      .newProxyInstance(
        RowSplitReader.Interface.getClassLoader,
        Array(RowSplitReader.Interface),
        handler
      )
    RowSplitReader.ReaderField.set(this, proxy)
    totalRowCount = rows.map { case (_, lo, hi) => hi - lo }.sum
  }
}

private object RowSplitReader {

  /** Spark's row group source interface, by name (see [[RowSplitReader]]). */
  val Interface: Class[_] = Class.forName(
    classOf[SpecificParquetRecordReaderBase[_]].getName + "$ParquetRowGroupReader",
    false,
    classOf[SpecificParquetRecordReaderBase[_]].getClassLoader
  )

  /** The reader's field holding its row group source. */
  val ReaderField: java.lang.reflect.Field = {
    val f = classOf[SpecificParquetRecordReaderBase[_]].getDeclaredField("reader")
    f.setAccessible(true)
    f
  }
}
