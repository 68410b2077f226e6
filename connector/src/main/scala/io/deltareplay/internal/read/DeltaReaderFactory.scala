package io.deltareplay.internal.read

import java.io.FileNotFoundException

import scala.util.control.NonFatal

import io.deltareplay.Errors
import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.internal.log.{FileEntry, ParquetConf}
import io.deltareplay.internal.log.{DvDescriptor, TableSnapshot}
import io.deltareplay.internal.planning.{
  DeltaInputPartition,
  ManifestPartition,
  ManifestReader,
  Manifests
}
import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.parquet.hadoop.ParquetInputFormat
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.{InternalRow, ProjectingInternalRow}
import org.apache.spark.sql.catalyst.expressions.{
  BoundReference,
  JoinedRow,
  Literal,
  UnsafeProjection
}
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.datasources.{
  PartitionedFile,
  SchemaColumnConvertNotSupportedException
}
import org.apache.spark.sql.execution.datasources.parquet.{
  ParquetOptions,
  ParquetReadSupport,
  ParquetUtils,
  ParquetWriteSupport
}
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.{LongType, StructType}
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.util.SerializableConfiguration

/**
 * Reads the files of a [[DeltaInputPartition]] with Spark's own Parquet reader, dropping the rows a
 * file's deletion vector marks as deleted. Small and serializable; does no planning.
 *
 * @param rowIndexOrdinal
 *   position of the Parquet row index in the reader's rows, or -1 when it is not read (no file of
 *   the scan has a deletion vector and no `_metadata.row_index` is asked for)
 * @param deletes
 *   whether deletion vectors drop rows (some file of the scan has one)
 * @param parquetOutput
 *   the reader's row schema (data columns, row index, partition columns)
 * @param metadata
 *   the fields of `_metadata` the scan returns after the other columns (empty: none)
 * @param ignoreMissingFiles
 *   `spark.sql.files.ignoreMissingFiles` when the scan was planned: a data file that is gone when
 *   its reader opens is skipped (logged), as Spark's file scans and V1 do
 * @param ignoreCorruptFiles
 *   `spark.sql.files.ignoreCorruptFiles`: a data file that cannot be opened or read is skipped from
 *   where it failed (the rows read before stay), as Spark's file scans and V1 do. Log files are
 *   never read under either setting (docs/correctness.md).
 * @param shareConf
 *   the files' readers share `conf` as it is ([[SharedJobConf]]): the scan pushes no Parquet filter
 *   and `read.shareHadoopConf` is on
 */
private[deltareplay] case class DeltaReaderFactory(
    parquet: ParquetPartitionReaderFactory,
    table: String,
    version: Long,
    tablePath: String,
    conf: Broadcast[SerializableConfiguration],
    rowIndexOrdinal: Int,
    deletes: Boolean,
    parquetOutput: StructType,
    columnar: Boolean,
    outputOrdinals: Array[Int] = null,
    vectorizedRows: Boolean = false,
    manifests: ManifestReader = null,
    metadata: StructType = new StructType(),
    ignoreMissingFiles: Boolean = false,
    ignoreCorruptFiles: Boolean = false,
    offHeapVectors: Boolean = false,
    shareConf: Boolean = false
) extends PartitionReaderFactory
    with Logging {

  override def supportColumnarReads(partition: InputPartition): Boolean = columnar

  /** The file splits of a partition and each split's deletion vector (or null). */
  private def splits(partition: InputPartition): (Array[PartitionedFile], Array[DvDescriptor]) =
    partition match {
      case p: DeltaInputPartition => (p.files, p.dvs)
      case p: ManifestPartition =>
        require(manifests != null, s"no manifest reader for $p")
        try manifests.expand(p)
        catch {
          case NonFatal(e) => throw Errors.manifestUnreadable(table, version, p.manifest, e)
        }
    }

  /** Makes `conf` the one its readers share, where they may (`shareConf`); once per JVM. */
  private def shared(): Unit = if (shareConf) SharedJobConf.share(conf.value)

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    shared()
    val (files, dvs) = splits(partition)
    val output = outputRows() // one per task, shared by its files (with `_metadata`, compiled)
    new ChainedReader[InternalRow](
      files.indices.iterator.map(i => rowReader(files(i), dvs(i), output))
    )
  }

  /**
   * The output row of a reader row: without the row index, columns in output order, `_metadata`
   * appended (over the reader row joined with the file's constant metadata, [[FileMetadata]]); null
   * when the reader's rows are already right. Without `_metadata` it is a view of the reader row,
   * not a copy: Spark projects the rows of a row-based scan to unsafe rows itself (a copy here
   * would be a second one of every value).
   */
  private def outputRows(): InternalRow => InternalRow =
    if (rowIndexOrdinal < 0 && outputOrdinals == null && metadata.isEmpty) null
    else if (metadata.isEmpty) {
      val visible = visibleInOrder.toIndexedSeq
      val view = ProjectingInternalRow(StructType(visible.map(parquetOutput(_))), visible)
      row => { view.project(row); view }
    } else {
      val columns = visibleInOrder.map { i =>
        BoundReference(i, parquetOutput(i).dataType, parquetOutput(i).nullable)
      }
      val rowIndex =
        if (rowIndexOrdinal < 0) Literal(null, LongType)
        else BoundReference(rowIndexOrdinal, LongType, nullable = true)
      UnsafeProjection.create(
        columns :+ FileMetadata.struct(metadata, parquetOutput.length, rowIndex)
      )
    }

  override def createColumnarReader(partition: InputPartition): PartitionReader[ColumnarBatch] = {
    shared()
    val (files, dvs) = splits(partition)
    val columns = outputColumns()
    new ChainedReader[ColumnarBatch](
      files.indices.iterator.map(i => columnarReader(files(i), dvs(i), columns))
    )
  }

  /**
   * The reader's columns a batch returns, in order (the row index dropped, the output order
   * applied); null when the reader's batches are already right.
   */
  private def outputColumns(): Array[Int] =
    if (rowIndexOrdinal < 0 && outputOrdinals == null) null else visibleInOrder.toArray

  /** The reader's columns but the row index, in output order. */
  private def visibleInOrder: Seq[Int] = {
    val visible = parquetOutput.indices.filter(_ != rowIndexOrdinal)
    if (outputOrdinals == null) visible else outputOrdinals.toSeq.map(visible)
  }

  /**
   * A file's reader, opened so that only its own close releases it
   * ([[SparkBridge.withoutTaskContext]]): [[ChainedReader]] closes each file's reader when it is
   * read, and the task's reader (Spark closes it when the task ends, failed or not) the one it
   * reads. Opened as Spark opens it when off-heap vectors are on (Spark allocates them only under a
   * task) or unreadable files are skipped (a file that fails after it was opened is then closed
   * when the task ends, as Spark closes it).
   */
  private def detached[T](open: => PartitionReader[T]): PartitionReader[T] =
    if (offHeapVectors || ignoreCorruptFiles) open else SparkBridge.withoutTaskContext(open)

  /** Whether a row (by its row index) is deleted by `dv`, when the scan drops deleted rows. */
  private def deletedBy(dv: DvDescriptor): Option[Long => Boolean] =
    if (dv == null || !deletes) None
    else Some(DeltaAdapter.loadDeletionVector(dv, new Path(tablePath), conf.value.value))

  /**
   * The batches of `file` as the Parquet reader decodes them; with a deletion vector, each batch
   * with a deleted row is a selection of the rows left ([[SelectedColumnVector]]), and a batch
   * whose rows are all deleted is skipped.
   */
  private def columnarReader(
      file: PartitionedFile,
      dv: DvDescriptor,
      columns: Array[Int]
  ): PartitionReader[ColumnarBatch] = {
    val base = guard(file)(detached(parquet.buildColumnarReader(file)))
    if (columns == null) base
    else {
      val deleted = deletedBy(dv).orNull
      new PartitionReader[ColumnarBatch] {
        private var current: ColumnarBatch = _
        override def next(): Boolean = {
          var found = false
          while (!found && base.next()) {
            val batch = base.get()
            val rows =
              if (deleted == null) null
              else SelectedColumnVector.kept(batch.column(rowIndexOrdinal), batch.numRows, deleted)
            if (rows == null || rows.length > 0) {
              current = SelectedColumnVector.select(batch, columns, rows)
              found = true
            }
          }
          found
        }
        override def get(): ColumnarBatch = current
        override def close(): Unit = base.close()
      }
    }
  }

  /**
   * Opens and reads `file`, turning a missing file into an error that names it; under
   * `ignoreMissingFiles` / `ignoreCorruptFiles` a file that is gone or unreadable ends early
   * instead, as Spark's file scans end it.
   */
  private def guard[T](file: PartitionedFile)(open: => PartitionReader[T]): PartitionReader[T] = {
    def missing(e: Throwable): Boolean =
      Errors.causes(e).exists(_.isInstanceOf[FileNotFoundException])
    def corrupt(e: Throwable): Boolean = e match {
      case _: SchemaColumnConvertNotSupportedException => false // a schema error, not the file's
      case _: RuntimeException | _: java.io.IOException => true
      case _ => false
    }
    def rethrow(e: Throwable): Nothing = Errors.storeFailure(table, file.urlEncodedPath, e) match {
      case Some(storeError) => throw storeError
      case None if missing(e) => throw Errors.missingDataFile(table, version, file.urlEncodedPath)
      case None => throw e
    }
    def skipped(e: Throwable, what: String): PartitionReader[T] = {
      logWarning(s"Skipped the $what data file ${file.urlEncodedPath} of $table v$version", e)
      EmptyReader.asInstanceOf[PartitionReader[T]]
    }
    // what input_file_name() and friends report, as Spark's file scans set it
    SparkBridge.setInputFile(file.urlEncodedPath, file.start, file.length)
    val reader =
      try open
      catch {
        case e: Exception if ignoreMissingFiles && missing(e) => skipped(e, "missing")
        case e: Exception if ignoreCorruptFiles && corrupt(e) => skipped(e, "unreadable")
        case e: Exception => rethrow(e)
      }
    new PartitionReader[T] {
      override def next(): Boolean = try reader.next()
      catch {
        case e: Exception if ignoreCorruptFiles && corrupt(e) =>
          logWarning(s"Skipped the rest of the unreadable data file ${file.urlEncodedPath}", e)
          false
        case e: Exception => rethrow(e)
      }
      override def get(): T = reader.get()
      override def close(): Unit = {
        reader.close()
        SparkBridge.unsetInputFile()
      }
    }
  }

  private def rowReader(
      file: PartitionedFile,
      dv: DvDescriptor,
      project: InternalRow => InternalRow
  ): PartitionReader[InternalRow] = {
    // With deletion vectors the rows are filtered one by one, but they are still decoded by the
    // vectorized Parquet reader when it supports the schema (much faster than parquet-mr rows).
    val base =
      if (vectorizedRows) {
        new BatchRowReader(guard(file)(detached(parquet.buildColumnarReader(file))))
      } else guard(file)(detached(parquet.buildReader(file)))
    if (project == null) base
    else {
      val deleted: Long => Boolean = deletedBy(dv).getOrElse(_ => false)
      val joined =
        if (metadata.isEmpty) null else new JoinedRow(null, FileMetadata.constants(file))
      new PartitionReader[InternalRow] {
        private var current: InternalRow = _
        override def next(): Boolean = {
          var found = false
          while (!found && base.next()) {
            val row = base.get()
            if (rowIndexOrdinal < 0 || !deleted(row.getLong(rowIndexOrdinal))) {
              current = project(if (joined == null) row else joined.withLeft(row))
              found = true
            }
          }
          found
        }
        override def get(): InternalRow = current
        override def close(): Unit = base.close()
      }
    }
  }
}

private[deltareplay] object DeltaReaderFactory {

  /**
   * A factory reading `readDataSchema` (logical; read through its physical names) and
   * `readPartitionSchema` with Spark's Parquet reader. With `deletes`, rows deleted by a file's
   * deletion vector are dropped; reads are columnar when Spark's vectorized reader takes the schema
   * and no `_metadata` field is asked for. With `manifests` (the entry layout of an index on the
   * executors, whose planning wrote the splits as manifest files), each split is read from its
   * manifest. Spark's Parquet reader is configured by `sqlConf`, the session's conf taken at the
   * load (copied again here before this read's own changes).
   */
  def create(
      spark: SparkSession,
      sqlConf: SQLConf,
      snapshot: TableSnapshot,
      readDataSchema: StructType,
      readPartitionSchema: StructType,
      parquetFilters: Array[Filter],
      deletes: Boolean,
      manifests: Option[FileEntry] = None,
      metadata: StructType = new StructType(),
      shareHadoopConf: Boolean = true
  ): DeltaReaderFactory = {
    val meta = snapshot.meta
    val withRowIndex = deletes || metadata.fieldNames.contains(FileMetadata.RowIndex)
    val physicalData = meta.physicalSchema(readDataSchema)
    val readData =
      if (withRowIndex) physicalData.add(ParquetConf.RowIndexField) else physicalData
    val fullData = {
      val d = meta.physicalSchema(
        StructType(snapshot.schema.filterNot(f => meta.partitionColumns.contains(f.name)))
      )
      if (withRowIndex) d.add(ParquetConf.RowIndexField) else d
    }
    val readConf = sqlConf.clone()
    // Columns are matched by field id under `id` column mapping only: under `name` mapping (also
    // when it was enabled on a table whose older files carry no ids) by physical name, as V1 reads,
    // whatever the session's own setting.
    readConf.setConf(SQLConf.PARQUET_FIELD_ID_READ_ENABLED, meta.columnMappingName == "id")
    val (parquet, broadcastConf) =
      parquetReader(spark, readConf, fullData, readData, readPartitionSchema, parquetFilters)
    // Spark returns batches only up to `spark.sql.codegen.maxFields` columns, but its vectorized
    // reader decodes any schema it supports: wider reads take rows from its batches, since
    // Spark's own row reader builds a projection per file and copies every row twice.
    val vectorized = ParquetUtils.isBatchReadSupportedForSchema(
      readConf,
      StructType(readPartitionSchema ++ readData)
    )
    // deletion vectors keep reads columnar (a selection of each batch's rows); `_metadata` is
    // joined to rows
    val columnar = parquet.supportColumnarReads(null) && metadata.isEmpty
    val manifestReader = manifests.fold(null: ManifestReader) { entry =>
      val manifestConf = sqlConf.clone()
      manifestConf.setConf(SQLConf.PARQUET_FIELD_ID_READ_ENABLED, false)
      val schema = Manifests.schema(entry)
      val (_, manifestHadoopConf) =
        parquetReader(spark, manifestConf, schema, schema, new StructType(), Array.empty)
      ManifestReader(
        snapshot.segment.paths,
        entry,
        manifestConf.getAllConfs,
        manifestHadoopConf,
        readPartitionSchema
      )
    }
    DeltaReaderFactory(
      parquet = parquet,
      table = snapshot.table,
      version = snapshot.version,
      tablePath = snapshot.tablePath.toString,
      conf = broadcastConf,
      rowIndexOrdinal = if (withRowIndex) readData.length - 1 else -1,
      deletes = deletes,
      parquetOutput = StructType(readData ++ readPartitionSchema),
      columnar = columnar,
      vectorizedRows = !columnar && vectorized,
      manifests = manifestReader,
      metadata = metadata,
      ignoreMissingFiles = sqlConf.ignoreMissingFiles,
      ignoreCorruptFiles = sqlConf.ignoreCorruptFiles,
      offHeapVectors = sqlConf.offHeapColumnVectorEnabled,
      // Spark's reader writes the Parquet filter it pushes to a file's configuration
      shareConf = shareHadoopConf && parquetFilters.isEmpty
    )
  }

  /** Spark's Parquet partition reader for `readData` of files laid out as `fullData`. */
  private def parquetReader(
      spark: SparkSession,
      sqlConf: SQLConf,
      fullData: StructType,
      readData: StructType,
      partitionSchema: StructType,
      filters: Array[Filter]
  ): (ParquetPartitionReaderFactory, Broadcast[SerializableConfiguration]) = {
    val hadoopConf = spark.sessionState.newHadoopConf()
    hadoopConf.set(ParquetInputFormat.READ_SUPPORT_CLASS, classOf[ParquetReadSupport].getName)
    hadoopConf.set(ParquetReadSupport.SPARK_ROW_REQUESTED_SCHEMA, readData.json)
    hadoopConf.set(ParquetWriteSupport.SPARK_ROW_SCHEMA, readData.json)
    hadoopConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, sqlConf.sessionLocalTimeZone)
    ParquetConf.copyFlags(sqlConf, hadoopConf)
    ParquetWriteSupport.setSchema(readData, hadoopConf)
    val broadcastConf = spark.sparkContext.broadcast(new SerializableConfiguration(hadoopConf))
    val factory = ParquetPartitionReaderFactory(
      sqlConf,
      broadcastConf,
      fullData,
      readData,
      partitionSchema,
      filters,
      None,
      new ParquetOptions(Map.empty[String, String], sqlConf)
    )
    (factory, broadcastConf)
  }

}
