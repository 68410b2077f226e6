package io.deltareplay.internal.replay

import scala.collection.mutable

import io.deltareplay.internal.log.{CheckpointLayout, FileEntry, StatsFromJson, StatsReader}
import io.deltareplay.internal.skipping.{DataSkipping, FileFilter, Relax}
import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._

/**
 * A scan's [[FileFilter]] moved from index entries onto the raw rows of a checkpoint, so that a
 * read without an index decodes only the checkpoint adds its filters may match.
 *
 * Two conjuncts, both over the checkpoint's `add` struct:
 *   - exact: the entry predicate with each entry column replaced by where the checkpoint holds it:
 *     the partition struct cast from `add.partitionValues` as [[FileEntry]] casts it, each
 *     statistic from `add.stats_parsed` when the checkpoint has that field with the entry's type,
 *     else (and on a row whose `stats_parsed` is null) from the JSON `add.stats`, only the
 *     statistics compared and only of the types Spark's JSON reader converts without doubt
 *     ([[StatsFromJson]]); a statistic it cannot read with certainty is a null (which the rules of
 *     [[DataSkipping]] read as "may match"), so it never drops an add the entry predicate keeps.
 *   - pushable: a weaker form of the statistics part that Spark can hand to Parquet (comparisons of
 *     a column with a literal, each allowed to be null, in ANDs and ORs), so row groups and pages
 *     whose min/max exclude every match are never decoded.
 *
 * Only adds are meant to pass: removes and other actions may be dropped (the fast path of
 * [[DistributedReplay]] keeps only the checkpoint's adds).
 */
private[deltareplay] final case class CheckpointFilter(entry: FileEntry, filter: FileFilter) {

  /** Whether there is anything to filter by. */
  def filters: Boolean = filter.prunes || filter.skips

  /**
   * The filter over a checkpoint whose `add` struct is `addType`; None when it cannot move.
   * `parsedInEveryAdd`: every add of the checkpoint has `stats_parsed` (its footer proves it), so
   * the JSON statistics need not be read.
   */
  def column(addType: StructType, parsedInEveryAdd: Boolean = false): Option[Column] = {
    val statsType = addType.fields
      .find(_.name == CheckpointLayout.StatsParsedField)
      .map(_.dataType)
    // the partition part relaxes to true: Parquet gets the statistics part only
    // a checkpoint written with delta.checkpoint.writeStatsAsJson=false has no add.stats
    val hasJson = addType.fieldNames.contains("stats")
    val partitionParsed =
      CheckpointLayout.structField(addType, CheckpointLayout.PartitionParsedField)
    onCheckpoint(
      DataSkipping.and(filter.prune, filter.skip),
      statsType,
      parsedInEveryAdd,
      hasJson,
      partitionParsed
    ).map { exact =>
      SparkBridge.column(
        DataSkipping.and(
          Relax(exact, _.isInstanceOf[UnresolvedAttribute]),
          exact
        )
      )
    }
  }

  private val partitionAttr = entry.attribute("partition")
  private val statsAttr = entry.attribute("stats")

  /**
   * `e` with entry columns replaced by the checkpoint's; None if it uses another entry column. A
   * statistic comes from `add.stats_parsed` when the checkpoint has it with the entry's type, and
   * from the JSON `add.stats` ([[StatsFromJson]]: the statistics the filter compares, read as
   * Spark's JSON reader reads them) for the rows without typed statistics, or for all rows when the
   * checkpoint has no typed ones; a statistic neither holds with certainty is null (may match).
   */
  private def onCheckpoint(
      e: Expression,
      statsType: Option[DataType],
      parsedInEveryAdd: Boolean,
      hasJson: Boolean,
      partitionParsed: Option[StructType]
  ): Option[Expression] = {
    // a partition value typed in `add.partitionValues_parsed` (its fields here: those every add
    // has a value in) where the cast of the map's string gives that value whatever the session
    val typedPartition = (physical: String, t: DataType) =>
      partitionParsed
        .flatMap(_.fields.find(f => f.name == physical && f.dataType == t))
        .filter(f => CheckpointFilter.TypedPartitionTypes.contains(f.dataType))
        .map(f => UnresolvedAttribute(Seq("add", CheckpointLayout.PartitionParsedField, f.name)))
    val partition =
      entry.partitionFrom(UnresolvedAttribute(Seq("add", "partitionValues")), typedPartition)
    val statsField = CheckpointFilter.StatsField(statsAttr)
    def typed(names: Seq[String], t: DataType) =
      statsType.flatMap(s => CheckpointFilter.fieldType(s, names)).contains(t)
    // the statistics read from JSON: on by the session's partial-results setting, as Spark's
    // reader converts a document (a field it cannot convert leaves the others set)
    val partial = SQLConf.get.jsonEnablePartialResults
    val fromJson = mutable.LinkedHashMap.empty[Seq[String], DataType]
    e.foreach {
      case g @ statsField(names)
          if partial && hasJson && StatsReader.readable(g.dataType) &&
            !(typed(names, g.dataType) && parsedInEveryAdd) =>
        fromJson.getOrElseUpdate(names, g.dataType)
      case _ =>
    }
    val json =
      if (fromJson.isEmpty) None
      else {
        val paths = fromJson.keys.toSeq
        Some(
          paths.zipWithIndex.toMap -> StatsFromJson(
            UnresolvedAttribute(Seq("add", "stats")),
            paths,
            paths.map(fromJson),
            entry.timeZone
          )
        )
      }
    def jsonField(names: Seq[String]): Option[Expression] =
      json.flatMap { case (index, j) =>
        index.get(names).map(i => GetStructField(j, i, Some(s"_$i")))
      }
    val moved = e.transformDown {
      case g @ statsField(names) =>
        val parsed = UnresolvedAttribute("add" +: CheckpointLayout.StatsParsedField +: names)
        (typed(names, g.dataType), jsonField(names)) match {
          case (true, Some(j)) =>
            If(
              IsNull(UnresolvedAttribute(Seq("add", CheckpointLayout.StatsParsedField))),
              j,
              parsed
            )
          case (true, None) => parsed
          case (false, Some(j)) => j
          case (false, None) => Literal(null, g.dataType)
        }
      case a: AttributeReference if a.exprId == partitionAttr.exprId => partition
    }
    if (moved.exists(_.isInstanceOf[AttributeReference])) None else Some(moved)
  }
}

private[deltareplay] object CheckpointFilter {

  /**
   * Partition column types read from `add.partitionValues_parsed` when it has them: those whose
   * value the cast of the partition string gives exactly, with no time zone or rounding involved.
   */
  val TypedPartitionTypes: Set[DataType] =
    Set(StringType, BooleanType, ByteType, ShortType, IntegerType, LongType, DateType)

  /** A field of an entry's `stats` (the attribute `stats`), as its names from `stats` down. */
  final case class StatsField(stats: Attribute) {
    def unapply(e: Expression): Option[Seq[String]] = e match {
      case g: GetStructField => path(g)
      case _ => None
    }
    private def path(e: Expression): Option[Seq[String]] = e match {
      case a: AttributeReference if a.exprId == stats.exprId => Some(Vector.empty)
      case GetStructField(child, ordinal, _) =>
        path(child).map(_ :+ child.dataType.asInstanceOf[StructType](ordinal).name)
      case _ => None
    }
  }

  /** The type of the field at `names` inside `t`, if there is one. */
  def fieldType(t: DataType, names: Seq[String]): Option[DataType] = names match {
    case Seq() => Some(t)
    case head +: rest =>
      t match {
        case s: StructType =>
          s.fields.find(_.name == head).flatMap(f => fieldType(f.dataType, rest))
        case _ => None
      }
  }
}
