package io.deltareplay.internal.read

import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.internal.log.TableMeta
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  BoundReference,
  CreateNamedStruct,
  Expression,
  Literal
}
import org.apache.spark.sql.execution.datasources.{FileFormat, PartitionedFile}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * The `_metadata` column, with the values Spark's file sources give it: the file's path
 * (URL-encoded, as `input_file_name()` shows it), name, size, the split's start and length, the
 * file's modification time, and the row's index in the file. Delta's row-tracking fields (`row_id`,
 * `row_commit_version`, ...) are not served: a read that asks for them stays with delta-spark.
 */
private[deltareplay] object FileMetadata {
  val Column: String = FileFormat.METADATA_NAME
  val RowIndex = "row_index"

  /** The per-file fields, in the order of [[constants]]. */
  private val ConstantFields = Seq(
    "file_path" -> StringType,
    "file_name" -> StringType,
    "file_size" -> LongType,
    "file_block_start" -> LongType,
    "file_block_length" -> LongType,
    "file_modification_time" -> TimestampType
  )

  /** The fields this connector can fill. */
  val Supported: Set[String] = ConstantFields.map(_._1).toSet + RowIndex

  /**
   * The full column, as a table offers it (`SupportsMetadataColumns`): the fields delta-spark's
   * `_metadata` of the same table has (`row_index` only where it offers it) that this connector
   * fills.
   */
  def typeOf(meta: TableMeta): StructType = {
    val fields =
      if (DeltaAdapter.metadataHasRowIndex(meta)) ConstantFields :+ (RowIndex -> LongType)
      else ConstantFields
    StructType(fields.map { case (n, t) => StructField(n, t, nullable = false) })
  }

  /** Whether every field of a requested `_metadata` struct can be filled. */
  def servable(requested: DataType): Boolean = requested match {
    case s: StructType => s.fieldNames.forall(Supported.contains)
    case _ => false
  }

  /** One split's constant fields. */
  def constants(file: PartitionedFile): InternalRow = InternalRow(
    UTF8String.fromString(file.urlEncodedPath),
    UTF8String.fromString(file.toPath.getName),
    file.fileSize,
    file.start,
    file.length,
    file.modificationTime * 1000L
  )

  /**
   * The `_metadata` struct of `requested` fields over a row joined with [[constants]] at `offset`,
   * with `rowIndex` the row's index in its file.
   */
  def struct(requested: StructType, offset: Int, rowIndex: Expression): Expression =
    CreateNamedStruct(requested.fields.toSeq.flatMap { f =>
      val value =
        if (f.name == RowIndex) rowIndex
        else {
          val i = ConstantFields.indexWhere(_._1 == f.name)
          BoundReference(offset + i, ConstantFields(i)._2, nullable = false)
        }
      Seq(Literal(f.name), value)
    })
}
