package io.deltareplay.internal.log

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
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
    statsParsedInEveryAdd: Boolean,
    partitionParsed: Option[StructType] = None
) {

  val addType: StructType = readSchema("add").dataType.asInstanceOf[StructType]

  /**
   * The fields of [[readSchema]]'s `add` replay reads: all of them, but the JSON statistics only
   * when they are needed and not always taken typed (`typed`: the statistics type an index takes
   * from `stats_parsed`).
   */
  def addFields(needStats: Boolean, typed: Option[DataType]): StructType =
    if (needStats && !(statsParsedInEveryAdd && typed.isDefined)) addType
    else StructType(addType.filterNot(_.name == "stats"))

  /**
   * [[addFields]] for a read in two passes ([[CheckpointSelect]]), with the fields of
   * `add.partitionValues_parsed` that every add has a value in, last ([[FooterFacts]]): a partition
   * filter then reads those typed values ([[CheckpointFilter]]) rather than the
   * `add.partitionValues` map, whose keys and values are strings of every row.
   */
  def selectFields(needStats: Boolean, typed: Option[DataType]): StructType =
    partitionParsed.fold(addFields(needStats, typed)) { p =>
      addFields(needStats, typed).add(CheckpointLayout.PartitionParsedField, p)
    }

  /**
   * The index entry of a checkpoint add, as expressions over a row whose one column is `add` with
   * `fields` ([[addFields]]); the same values the distributed replay's frames give it: statistics
   * from `stats_parsed` aligned to `typed` where the layout has them, else from the JSON ones, or
   * from `stats_parsed` written as JSON in the entry's time zone when there is no type to align to.
   */
  def entryOfAdd(
      entry: FileEntry,
      fields: StructType,
      typed: Option[DataType],
      needStats: Boolean
  ): Seq[Expression] = {
    val add = BoundReference(0, fields, nullable = true)
    def field(name: String) = GetStructField(add, fields.fieldIndex(name), Some(name))
    val parsed = if (hasStatsParsed) Some(field(CheckpointLayout.StatsParsedField)) else None
    val aligned = for (p <- parsed; t <- typed) yield FileEntry.align(p, p.dataType, t)
    val noJson = Literal(null, StringType)
    val json = (aligned, parsed) match {
      case _ if !needStats => noJson
      case (Some(_), _) if statsParsedInEveryAdd => noJson
      case (Some(a), _) => If(IsNull(a), field("stats"), noJson)
      case (None, Some(p)) =>
        Coalesce(Seq(field("stats"), StructsToJson(Map.empty, p, Some(entry.timeZone))))
      case (None, None) => field("stats")
    }
    val live = Map(
      LiveFile.Ord.Path -> field("path"),
      LiveFile.Ord.PartitionValues -> field("partitionValues"),
      LiveFile.Ord.Size -> field("size"),
      LiveFile.Ord.ModificationTime -> field("modificationTime"),
      LiveFile.Ord.Stats -> json,
      LiveFile.Ord.Dv -> field("deletionVector")
    )
    // bottom-up: the expressions put in are not visited again
    val fromAdd = entry.fromLiveFile.map(_.transformUp { case b: BoundReference =>
      live(b.ordinal)
    })
    typed.fold(fromAdd) { t =>
      fromAdd.init :+ Coalesce(Seq(aligned.getOrElse(Literal(null, t)), fromAdd.last))
    }
  }

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
  val PartitionParsedField = "partitionValues_parsed"

  /**
   * `stats_parsed` with its `numRecords` only (a count's read, [[FileEntry.countOnly]]: the other
   * typed statistics are not decoded); none when it has no such field of type long.
   */
  private def numRecordsOnly(parsed: StructField): Option[StructField] = parsed.dataType match {
    case s: StructType =>
      s.fields
        .find(f => f.name == FileEntry.NumRecords && f.dataType == LongType)
        .map(f => parsed.copy(dataType = StructType(Seq(f))))
    case _ => None
  }

  /** The field `name` of `s`, when it is a struct. */
  def structField(s: StructType, name: String): Option[StructType] =
    s.fields.find(_.name == name).map(_.dataType).collect { case t: StructType => t }

  /** The layout of a checkpoint file with this footer. */
  def forFile(
      footer: FooterFacts,
      needStats: Boolean,
      countOnly: Boolean = false
  ): CheckpointLayout = {
    val footerAdd = structField(footer.schema, "add")
    val parsed = footerAdd
      .flatMap(_.fields.find(_.name == StatsParsedField))
      .filter(_ => needStats)
      .flatMap(p => if (countOnly) numRecordsOnly(p) else Some(p))
    val addType = parsed.fold(FileAction.AddType)(p => FileAction.AddType.add(p))
    CheckpointLayout(
      new StructType().add("add", addType).add("remove", FileAction.RemoveType),
      parsed.isDefined,
      parsed.isDefined && footer.statsParsedInEveryAdd,
      Some(footer.partitionParsedInEveryAdd).filter(_.nonEmpty)
    )
  }
}
