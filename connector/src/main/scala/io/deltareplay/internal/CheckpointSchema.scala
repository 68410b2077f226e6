package io.deltareplay.internal

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, StructsToJson}
import org.apache.spark.sql.catalyst.util.MapData
import org.apache.spark.sql.types._

/**
 * How to read file actions out of one checkpoint Parquet file, given its footer schema: `add.stats`
 * (JSON) when present, else `add.stats_parsed` turned into the same JSON.
 */
private[deltareplay] case class CheckpointSchema(readSchema: StructType, hasStatsParsed: Boolean) {
  import CheckpointSchema._

  private lazy val statsToJson: Option[StructsToJson] =
    if (!hasStatsParsed) None
    else {
      val addType = readSchema("add").dataType.asInstanceOf[StructType]
      val parsedType = addType(StatsParsedField).dataType
      Some(
        StructsToJson(Map.empty[String, String], BoundReference(0, parsedType, true), Some("UTC"))
      )
    }

  def toAction(version: Long, row: InternalRow): Option[RawAction] =
    if (!row.isNullAt(0)) {
      val addType = readSchema("add").dataType.asInstanceOf[StructType]
      val add = row.getStruct(0, addType.length)
      val stats =
        if (!add.isNullAt(5)) add.getUTF8String(5).toString
        else
          statsToJson match {
            case Some(toJson) if !add.isNullAt(7) =>
              val parsed = InternalRow(add.getStruct(7, statsParsedArity(addType)))
              toJson.replacement.eval(parsed).toString
            case _ => null
          }
      Some(
        RawAction(
          version = version,
          isAdd = true,
          path = add.getUTF8String(0).toString,
          partitionValues = if (add.isNullAt(1)) Map.empty else toMap(add.getMap(1)),
          size = if (add.isNullAt(2)) 0L else add.getLong(2),
          modificationTime = if (add.isNullAt(3)) 0L else add.getLong(3),
          dataChange = add.isNullAt(4) || add.getBoolean(4),
          stats = stats,
          dv = dv(add, 6)
        )
      )
    } else if (!row.isNullAt(1)) {
      val remove = row.getStruct(1, FileActions.RemoveType.length)
      Some(
        RawAction(
          version = version,
          isAdd = false,
          path = remove.getUTF8String(0).toString,
          partitionValues = if (remove.isNullAt(3)) Map.empty else toMap(remove.getMap(3)),
          size = if (remove.isNullAt(4)) 0L else remove.getLong(4),
          modificationTime = 0L,
          dataChange = remove.isNullAt(2) || remove.getBoolean(2),
          stats = null,
          dv = dv(remove, 5)
        )
      )
    } else None

  private def statsParsedArity(addType: StructType): Int =
    addType(StatsParsedField).dataType.asInstanceOf[StructType].length
}

private[deltareplay] object CheckpointSchema {
  val StatsParsedField = "stats_parsed"

  /** The read schema: our add/remove fields, plus `add.stats_parsed` when stats need it. */
  def forFile(footer: StructType, needStats: Boolean): CheckpointSchema = {
    val footerAdd = footer.fields.find(_.name == "add").map(_.dataType).collect {
      case s: StructType => s
    }
    val parsed = footerAdd.flatMap(_.fields.find(_.name == StatsParsedField)).filter(_ => needStats)
    val addType = parsed.fold(FileActions.AddType)(p => FileActions.AddType.add(p))
    CheckpointSchema(
      new StructType().add("add", addType).add("remove", FileActions.RemoveType),
      parsed.isDefined
    )
  }

  def toMap(m: MapData): Map[String, String] = {
    val keys = m.keyArray()
    val values = m.valueArray()
    (0 until m.numElements()).map { i =>
      keys.getUTF8String(i).toString -> (if (values.isNullAt(i)) null
                                         else values.getUTF8String(i).toString)
    }.toMap
  }

  def dv(struct: InternalRow, ordinal: Int): Option[DvDescriptor] =
    if (struct.isNullAt(ordinal)) None
    else {
      val d = struct.getStruct(ordinal, FileActions.DvType.length)
      Some(
        DvDescriptor(
          storageType = d.getUTF8String(0).toString,
          pathOrInlineDv = d.getUTF8String(1).toString,
          offset = if (d.isNullAt(2)) None else Some(d.getInt(2)),
          sizeInBytes = d.getInt(3),
          cardinality = d.getLong(4)
        )
      )
    }
}
