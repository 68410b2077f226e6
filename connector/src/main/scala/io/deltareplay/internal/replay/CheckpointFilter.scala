package io.deltareplay.internal.replay

import io.deltareplay.internal.index.FileEntry
import io.deltareplay.internal.skipping.{DataSkipping, FileFilter}
import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * A scan's [[FileFilter]] moved from index entries onto the raw rows of a checkpoint, so that a
 * read without an index decodes only the checkpoint adds its filters may match.
 *
 * Two conjuncts, both over the checkpoint's `add` struct:
 *   - exact: the entry predicate with each entry column replaced by where the checkpoint holds it:
 *     the partition struct cast from `add.partitionValues` as [[FileEntry]] casts it, each
 *     statistic from `add.stats_parsed` when the checkpoint has that field with the entry's type,
 *     else a null (which the rules of [[DataSkipping]] read as "may match"). On a row whose
 *     `stats_parsed` is null (statistics only as JSON) it keeps the file, so it never drops an add
 *     the entry predicate keeps.
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

  /** The filter over a checkpoint whose `add` struct is `addType`; None when it cannot move. */
  def column(addType: StructType): Option[Column] = {
    val statsType = addType.fields
      .find(_.name == CheckpointLayout.StatsParsedField)
      .map(_.dataType)
    // the partition part relaxes to true: Parquet gets the statistics part only
    onCheckpoint(DataSkipping.and(filter.prune, filter.skip), statsType).map { exact =>
      SparkBridge.column(
        DataSkipping.and(CheckpointFilter.relax(exact, _.isInstanceOf[UnresolvedAttribute]), exact)
      )
    }
  }

  private val partitionAttr = entry.attribute("partition")
  private val statsAttr = entry.attribute("stats")

  /** `e` with entry columns replaced by the checkpoint's; None if it uses another entry column. */
  private def onCheckpoint(e: Expression, statsType: Option[DataType]): Option[Expression] = {
    val partition = entry.partitionFrom(UnresolvedAttribute(Seq("add", "partitionValues")))
    val statsField = CheckpointFilter.StatsField(statsAttr)
    val moved = e.transformDown {
      case g @ statsField(names) =>
        val found = statsType.flatMap(t => CheckpointFilter.fieldType(t, names))
        if (found.contains(g.dataType)) UnresolvedAttribute("add" +: "stats_parsed" +: names)
        else Literal(null, g.dataType)
      case a: AttributeReference if a.exprId == partitionAttr.exprId => partition
    }
    if (moved.exists(_.isInstanceOf[AttributeReference])) None else Some(moved)
  }
}

private[deltareplay] object CheckpointFilter {

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

  /**
   * A predicate at least as permissive as `e` (true wherever `e` is true or null) in the shapes
   * Spark translates to Parquet filters and [[SkipVector]] evaluates over columns: comparisons of a
   * column (`isColumn`) with a literal, each allowed to be null, in ANDs and ORs; true where
   * nothing simpler is known. `coalesce(x, true)` over such comparisons becomes `(col IS NULL OR
   * x)` per comparison: with AND and OR of such comparisons, the whole is false exactly when some
   * needed comparison is false on a non-null value, as the coalesce is.
   */
  def relax(e: Expression, isColumn: Expression => Boolean): Expression = {
    def columnVsLiteral(c: BinaryComparison): Boolean = (c.left, c.right) match {
      case (_: Literal, r) => isColumn(r)
      case (l, _: Literal) => isColumn(l)
      case _ => false
    }
    def nullOrTrue(e: Expression): Expression = e match {
      case And(l, r) => And(nullOrTrue(l), nullOrTrue(r))
      case Or(l, r) => Or(nullOrTrue(l), nullOrTrue(r))
      case c: BinaryComparison if columnVsLiteral(c) =>
        val column = if (c.left.isInstanceOf[Literal]) c.right else c.left
        Or(IsNull(column), c)
      case _ => Literal.TrueLiteral
    }
    def go(e: Expression): Expression = e match {
      case And(l, r) => And(go(l), go(r))
      case Or(l, r) => Or(go(l), go(r))
      // skipAllNull: dropping the "every value is null" test only lets more through
      case If(_, Literal.FalseLiteral, rest) => go(rest)
      case Coalesce(Seq(x, Literal.TrueLiteral)) => nullOrTrue(x)
      case c: BinaryComparison if columnVsLiteral(c) => c
      case _ => Literal.TrueLiteral
    }
    go(e)
  }
}
