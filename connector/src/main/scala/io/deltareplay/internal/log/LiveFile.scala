package io.deltareplay.internal.log

import org.apache.spark.sql.{Column, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * A data file live at the version read: what planning and reading need, and nothing else.
 *
 * @param path
 *   as the log stores it: relative to the table (URL-encoded) or absolute; resolve it with
 *   [[TablePaths.absolute]]
 * @param partitionValues
 *   by physical partition column name, serialized as strings
 * @param stats
 *   the JSON statistics, only when a filter can use them
 */
private[deltareplay] case class LiveFile(
    path: String,
    partitionValues: Map[String, String],
    size: Long,
    modificationTime: Long,
    stats: String,
    dv: Option[DvDescriptor]
) {
  def toInternalRow: InternalRow = {
    val r = new GenericInternalRow(LiveFile.Schema.length)
    r.update(LiveFile.Ord.Path, UTF8String.fromString(path))
    r.update(LiveFile.Ord.PartitionValues, FileAction.toMapData(partitionValues))
    r.setLong(LiveFile.Ord.Size, size)
    r.setLong(LiveFile.Ord.ModificationTime, modificationTime)
    r.update(LiveFile.Ord.Stats, if (stats == null) null else UTF8String.fromString(stats))
    r.update(LiveFile.Ord.Dv, dv.map(_.toInternalRow).orNull)
    r
  }

  def toRow: Row =
    Row(path, partitionValues, size, modificationTime, stats, dv.map(_.toRow).orNull)
}

private[deltareplay] object LiveFile {

  /** The rows of a live-file DataFrame (the distributed replay's output). */
  val Schema: StructType = new StructType()
    .add("path", StringType)
    .add("partitionValues", MapType(StringType, StringType))
    .add("size", LongType)
    .add("modificationTime", LongType)
    .add("stats", StringType)
    .add("dv", DvDescriptor.Type)

  object Ord {
    val Path: Int = Schema.fieldIndex("path")
    val PartitionValues: Int = Schema.fieldIndex("partitionValues")
    val Size: Int = Schema.fieldIndex("size")
    val ModificationTime: Int = Schema.fieldIndex("modificationTime")
    val Stats: Int = Schema.fieldIndex("stats")
    val Dv: Int = Schema.fieldIndex("dv")
  }

  /** The live-file columns of a [[FileAction.Schema]] DataFrame. */
  val columnsOfActions: Seq[Column] = Schema.fieldNames.toSeq.map(col)

  /** A live-file row ([[Schema]]) decoded; `intern` shares equal partition-value maps. */
  def fromInternalRow(
      r: InternalRow,
      intern: Map[String, String] => Map[String, String] = identity
  ): LiveFile =
    LiveFile(
      path = r.getUTF8String(Ord.Path).toString,
      partitionValues = intern(FileAction.stringMap(r, Ord.PartitionValues)),
      size = if (r.isNullAt(Ord.Size)) 0L else r.getLong(Ord.Size),
      modificationTime =
        if (r.isNullAt(Ord.ModificationTime)) 0L else r.getLong(Ord.ModificationTime),
      stats = if (r.isNullAt(Ord.Stats)) null else r.getUTF8String(Ord.Stats).toString,
      dv = DvDescriptor.fromInternalRow(r, Ord.Dv)
    )

  /** The same from a `Row` of [[Schema]] (fields by name, so extra columns may follow). */
  def fromRow(r: Row): LiveFile =
    LiveFile(
      path = r.getAs[String]("path"),
      partitionValues = Option(r.getAs[scala.collection.Map[String, String]]("partitionValues"))
        .map(_.toMap)
        .getOrElse(Map.empty),
      size = r.getAs[Long]("size"),
      modificationTime = r.getAs[Long]("modificationTime"),
      stats = r.getAs[String]("stats"),
      dv = DvDescriptor.fromRow(r.getAs[Row]("dv"))
    )
}
