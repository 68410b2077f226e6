package io.deltareplay.internal

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, StructsToJson}
import org.apache.spark.sql.types._

/**
 * How to read file actions out of one checkpoint Parquet file, given its footer: the add and remove
 * fields of [[FileAction.LogSchema]], plus `add.stats_parsed` (last in `add`) when statistics are
 * needed and the file has it; on the driver `add.stats` (JSON) wins when both are present.
 * `statsParsedInEveryAdd` ([[FooterFacts]]): the JSON statistics are never needed where the typed
 * ones are taken.
 */
private[deltareplay] case class CheckpointLayout(
    readSchema: StructType,
    hasStatsParsed: Boolean,
    statsParsedInEveryAdd: Boolean
) {

  private val addType = readSchema("add").dataType.asInstanceOf[StructType]

  /** `add.stats_parsed` turned into the same JSON `add.stats` holds (null when absent). */
  private lazy val parsedToJson: InternalRow => String =
    if (!hasStatsParsed) (_: InternalRow) => null
    else {
      val parsedType = addType(CheckpointLayout.StatsParsedField).dataType.asInstanceOf[StructType]
      val toJson =
        StructsToJson(Map.empty[String, String], BoundReference(0, parsedType, true), Some("UTC"))
      (add: InternalRow) =>
        if (add.isNullAt(FileAction.StatsParsedOrdinal)) null
        else {
          val parsed = add.getStruct(FileAction.StatsParsedOrdinal, parsedType.length)
          toJson.replacement.eval(InternalRow(parsed)).toString
        }
    }

  def toAction(version: Long, row: InternalRow): Option[FileAction.Action] =
    FileAction.fromCheckpointRow(row, version, addType.length, parsedToJson)
}

private[deltareplay] object CheckpointLayout {
  val StatsParsedField = "stats_parsed"

  /** The layout of a checkpoint file with this footer. */
  def forFile(footer: FooterFacts, needStats: Boolean): CheckpointLayout = {
    val footerAdd = footer.schema.fields.find(_.name == "add").map(_.dataType).collect {
      case s: StructType => s
    }
    val parsed = footerAdd.flatMap(_.fields.find(_.name == StatsParsedField)).filter(_ => needStats)
    val addType = parsed.fold(FileAction.AddType)(p => FileAction.AddType.add(p))
    CheckpointLayout(
      new StructType().add("add", addType).add("remove", FileAction.RemoveType),
      parsed.isDefined,
      parsed.isDefined && footer.statsParsedInEveryAdd
    )
  }
}
