package io.deltareplay.internal.log

import com.fasterxml.jackson.databind.JsonNode
import io.deltareplay.internal.delta.DvFields
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/** A deletion vector descriptor, as the log stores it. */
private[deltareplay] case class DvDescriptor(
    storageType: String,
    pathOrInlineDv: String,
    offset: Option[Int],
    sizeInBytes: Int,
    cardinality: Long
) extends DvFields {

  /** The protocol's unique id of this deletion vector (part of a file's replay key). */
  def uniqueId: String = offset match {
    case Some(o) => s"$storageType$pathOrInlineDv@$o"
    case None => s"$storageType$pathOrInlineDv"
  }

  def toInternalRow: InternalRow = {
    val r = new GenericInternalRow(DvDescriptor.Type.length)
    r.update(DvDescriptor.Ord.StorageType, UTF8String.fromString(storageType))
    r.update(DvDescriptor.Ord.PathOrInline, UTF8String.fromString(pathOrInlineDv))
    r.update(DvDescriptor.Ord.Offset, offset.map(Int.box).orNull)
    r.setInt(DvDescriptor.Ord.Size, sizeInBytes)
    r.setLong(DvDescriptor.Ord.Cardinality, cardinality)
    r
  }

  def toRow: Row =
    Row(storageType, pathOrInlineDv, offset.map(Int.box).orNull, sizeInBytes, cardinality)
}

private[deltareplay] object DvDescriptor {
  val Type: StructType = new StructType()
    .add("storageType", StringType)
    .add("pathOrInlineDv", StringType)
    .add("offset", IntegerType)
    .add("sizeInBytes", IntegerType)
    .add("cardinality", LongType)

  object Ord {
    val StorageType: Int = Type.fieldIndex("storageType")
    val PathOrInline: Int = Type.fieldIndex("pathOrInlineDv")
    val Offset: Int = Type.fieldIndex("offset")
    val Size: Int = Type.fieldIndex("sizeInBytes")
    val Cardinality: Int = Type.fieldIndex("cardinality")
  }

  /** The descriptor in field `ordinal` of `struct` (None when null). */
  def fromInternalRow(struct: InternalRow, ordinal: Int): Option[DvDescriptor] =
    if (struct.isNullAt(ordinal)) None
    else {
      val d = struct.getStruct(ordinal, Type.length)
      Some(
        DvDescriptor(
          storageType = d.getUTF8String(Ord.StorageType).toString,
          pathOrInlineDv = d.getUTF8String(Ord.PathOrInline).toString,
          offset = if (d.isNullAt(Ord.Offset)) None else Some(d.getInt(Ord.Offset)),
          sizeInBytes = d.getInt(Ord.Size),
          cardinality = d.getLong(Ord.Cardinality)
        )
      )
    }

  /** The cardinality of the descriptor in field `ordinal` of `struct`, or 0 when it is null. */
  def cardinalityOf(struct: InternalRow, ordinal: Int): Long =
    if (struct.isNullAt(ordinal)) 0L
    else struct.getStruct(ordinal, Type.length).getLong(Ord.Cardinality)

  def fromRow(r: Row): Option[DvDescriptor] =
    Option(r).map { d =>
      DvDescriptor(
        d.getString(Ord.StorageType),
        d.getString(Ord.PathOrInline),
        if (d.isNullAt(Ord.Offset)) None else Some(d.getInt(Ord.Offset)),
        d.getInt(Ord.Size),
        d.getLong(Ord.Cardinality)
      )
    }

  def fromJson(d: JsonNode): DvDescriptor =
    DvDescriptor(
      storageType = d.get("storageType").asText(),
      pathOrInlineDv = d.get("pathOrInlineDv").asText(),
      offset = Option(d.get("offset")).filterNot(_.isNull).map(_.asInt()),
      sizeInBytes = d.get("sizeInBytes").asInt(),
      cardinality = d.get("cardinality").asLong()
    )
}
