package io.deltareplay.internal.skipping

import io.deltareplay.internal.log.FileEntry
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.types.PhysicalDataType
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * Which files may hold a row matching a query's filters, as a predicate over [[FileEntry]] rows:
 * the one definition of file pruning and skipping, evaluated on the driver (a compiled `Predicate`)
 * and in Spark jobs (a DataFrame filter) alike. It is true unless the file provably holds no
 * matching row, so skipping never drops a file that holds one.
 *
 * Comparisons run on typed values with Spark's own expressions, so they follow Spark's semantics
 * for the type: floats compared as floats, exact decimals, -0.0 = 0.0, NaN above every number,
 * strings in UTF-8 binary order. The rules:
 *
 *   - A predicate on partition columns only (deterministic) is evaluated exactly on the file's
 *     partition values: every row of the file has them.
 *   - `c = v`, `c < v`, `c <= v`, `c > v`, `c >= v`, `c <=> v`, `c IN (...)`, `startsWith(c, p)`
 *     for a data column (top-level or nested in structs) with bounds ([[FileEntry.hasBounds]]) and
 *     a literal of the column's type: compared with the file's min/max. Timestamp bounds are stored
 *     truncated to milliseconds, so a max is taken as up to 1 ms higher. A column whose values are
 *     all null matches no comparison.
 *   - `c IS NULL` / `c IS NOT NULL` with the null count (only its two informative values, 0 and
 *     numRecords, are used, as the protocol requires for wide bounds) of a leaf column; the null
 *     tests of a struct column keep every file.
 *   - `AND`, `OR`, and `NOT` pushed down to the rules above (`NOT c = v`: skipped when min = max =
 *     v).
 *   - Anything else, a missing statistic, or a file without statistics: the file may match.
 */
private[deltareplay] final class DataSkipping(entry: FileEntry) {
  import DataSkipping.and
  private val partitionColumns = entry.partitionSchema.fieldNames.map(_.toLowerCase).toSet
  private val partition = entry.attribute("partition")
  private val stats = entry.attribute("stats")

  /** The predicate for a conjunction of filters (over the table's attributes). */
  def predicate(filters: Seq[Expression]): Expression =
    filters.map(mayMatch).foldLeft(Literal.TrueLiteral: Expression)(and)

  /** Exact partition pruning for filters on partition columns only. */
  def partitionPredicate(filters: Seq[Expression]): Expression =
    filters.map(exact).foldLeft(Literal.TrueLiteral: Expression)(and)

  private def onPartitionsOnly(e: Expression): Boolean =
    e.references.nonEmpty && e.deterministic &&
      e.references.forall(a => partitionColumns.contains(a.name.toLowerCase))

  /** `e` evaluated on the file's partition values; null counts as no match. */
  private def exact(e: Expression): Expression = {
    val onValues = e.transformUp { case a: AttributeReference =>
      val i = entry.partitionSchema.fieldNames.indexWhere(_.equalsIgnoreCase(a.name))
      GetStructField(partition, i, Some(entry.partitionSchema(i).name))
    }
    Coalesce(Seq(onValues, Literal.FalseLiteral))
  }

  private def mayMatch(e: Expression): Expression = e match {
    case And(l, r) => and(mayMatch(l), mayMatch(r))
    case Or(l, r) => or(mayMatch(l), mayMatch(r))
    case Not(inner) => mayMatchNot(inner)
    case _ if onPartitionsOnly(e) => exact(e)
    case _ => leaf(e).getOrElse(Literal.TrueLiteral)
  }

  /** Whether some row may satisfy `NOT inner`. */
  private def mayMatchNot(inner: Expression): Expression = inner match {
    case And(l, r) => or(mayMatchNot(l), mayMatchNot(r))
    case Or(l, r) => and(mayMatchNot(l), mayMatchNot(r))
    case Not(x) => mayMatch(x)
    case _ if onPartitionsOnly(inner) => exact(Not(inner))
    case IsNull(c) => mayMatch(IsNotNull(c))
    case IsNotNull(c) => mayMatch(IsNull(c))
    case LessThan(l, r) => mayMatch(GreaterThanOrEqual(l, r))
    case LessThanOrEqual(l, r) => mayMatch(GreaterThan(l, r))
    case GreaterThan(l, r) => mayMatch(LessThanOrEqual(l, r))
    case GreaterThanOrEqual(l, r) => mayMatch(LessThan(l, r))
    case EqualTo(ColumnStats(c), Value(v)) => notEqual(c, v)
    case EqualTo(Value(v), ColumnStats(c)) => notEqual(c, v)
    case _ => Literal.TrueLiteral
  }

  /** The rule of one comparison or null test on a data column, when there is one. */
  private def leaf(e: Expression): Option[Expression] = e match {
    case IsNull(ColumnStats(c)) => Some(c.nullCount.fold(True)(n => orTrue(GreaterThan(n, Lit0))))
    case IsNotNull(ColumnStats(c)) => Some(notAllNull(c))
    case EqualTo(ColumnStats(c), Value(v)) => c.bounds(v).map(b => equal(c, b, v))
    case EqualTo(Value(v), ColumnStats(c)) => c.bounds(v).map(b => equal(c, b, v))
    case EqualNullSafe(ColumnStats(c), Value(v)) => c.bounds(v).map(b => equal(c, b, v))
    case EqualNullSafe(Value(v), ColumnStats(c)) => c.bounds(v).map(b => equal(c, b, v))
    case EqualNullSafe(ColumnStats(c), Literal(null, _)) => leaf(IsNull(c.expr))
    case LessThan(ColumnStats(c), Value(v)) =>
      c.bounds(v).map(b => boundsTest(c, LessThan(b._1, v)))
    case LessThanOrEqual(ColumnStats(c), Value(v)) =>
      c.bounds(v).map(b => boundsTest(c, LessThanOrEqual(b._1, v)))
    case GreaterThan(ColumnStats(c), Value(v)) =>
      c.bounds(v).map(b => boundsTest(c, GreaterThan(b._2, c.forMax(v))))
    case GreaterThanOrEqual(ColumnStats(c), Value(v)) =>
      c.bounds(v).map(b => boundsTest(c, GreaterThanOrEqual(b._2, c.forMax(v))))
    case LessThan(Value(v), c) => leaf(GreaterThan(c, v))
    case LessThanOrEqual(Value(v), c) => leaf(GreaterThanOrEqual(c, v))
    case GreaterThan(Value(v), c) => leaf(LessThan(c, v))
    case GreaterThanOrEqual(Value(v), c) => leaf(LessThanOrEqual(c, v))
    case In(ColumnStats(c), list) if list.forall(_.isInstanceOf[Literal]) =>
      in(c, list.collect { case Value(v) => v })
    case InSet(ColumnStats(c), set) =>
      in(c, set.toSeq.filter(_ != null).map(v => Literal.create(v, c.expr.dataType)))
    case StartsWith(ColumnStats(c), Value(Literal(p: UTF8String, _))) if c.isString =>
      c.bounds(Literal(p)).map { case (lo, hi) =>
        val n = Literal(p.numChars())
        skipAllNull(
          c,
          orTrue(
            And(
              LessThanOrEqual(Substring(lo, Literal(1), n), Literal(p)),
              GreaterThanOrEqual(Substring(hi, Literal(1), n), Literal(p))
            )
          )
        )
      }
    case _ => None
  }

  /** A test of the bounds (a max compared with [[ColumnStats.forMax]] of the value). */
  private def boundsTest(c: ColumnStats, test: Expression): Expression =
    skipAllNull(c, orTrue(test))

  private def equal(c: ColumnStats, bounds: (Expression, Expression), v: Literal): Expression =
    skipAllNull(
      c,
      orTrue(And(LessThanOrEqual(bounds._1, v), GreaterThanOrEqual(bounds._2, c.forMax(v))))
    )

  /** `NOT c = v`: no row matches when every non-null value equals v (min = max = v). */
  private def notEqual(c: ColumnStats, v: Literal): Expression =
    c.bounds(v) match {
      case Some((lo, hi)) if !c.isTimestamp =>
        skipAllNull(c, orTrue(Not(And(EqualTo(lo, v), EqualTo(hi, v)))))
      case _ => skipAllNull(c, True)
    }

  private def in(c: ColumnStats, values: Seq[Literal]): Option[Expression] =
    if (values.isEmpty) Some(Literal.FalseLiteral) // `c IN (NULL)` matches no row
    else if (values.size <= DataSkipping.MaxInValues) {
      val tests = values.flatMap(v => c.bounds(v).map(b => equal(c, b, v)))
      if (tests.size < values.size) None else Some(tests.reduce(or))
    } else {
      // Many values: the file's range against the values' range.
      val ordering = PhysicalDataType.ordering(c.expr.dataType)
      val lo = values.minBy(_.value)(ordering)
      val hi = values.maxBy(_.value)(ordering)
      c.bounds(lo).map { case (min, max) =>
        skipAllNull(c, orTrue(And(LessThanOrEqual(min, hi), GreaterThanOrEqual(max, c.forMax(lo)))))
      }
    }

  /** False when the column is null in every row of the file (so no comparison matches). */
  private def skipAllNull(c: ColumnStats, rest: Expression): Expression =
    c.allNull match {
      case Some(allNull) =>
        If(Coalesce(Seq(allNull, Literal.FalseLiteral)), Literal.FalseLiteral, rest)
      case None => rest
    }

  private def notAllNull(c: ColumnStats): Expression =
    c.allNull.fold(True)(a => Not(Coalesce(Seq(a, Literal.FalseLiteral))))

  private val True: Expression = Literal.TrueLiteral
  private val Lit0 = Literal(0L)
  private def orTrue(e: Expression): Expression = Coalesce(Seq(e, Literal.TrueLiteral))

  private def or(a: Expression, b: Expression): Expression = (a, b) match {
    case (Literal.TrueLiteral, _) | (_, Literal.TrueLiteral) => Literal.TrueLiteral
    case _ => Or(a, b)
  }

  /** A non-null literal (after Spark's constant folding). */
  private object Value {
    def unapply(e: Expression): Option[Literal] = e match {
      case l @ Literal(v, _) if v != null => Some(l)
      case _ => None
    }
  }

  /**
   * The statistics of a data column reference: a top-level data attribute or a chain of struct
   * field accesses on one, resolved to its fields in the entry's statistics.
   */
  private final case class ColumnStats(
      expr: Expression,
      physicalPath: Seq[String],
      field: StructField
  ) {
    private def statsField(kind: String): Option[Expression] = {
      var current: Expression =
        GetStructField(stats, entry.statsSchema.fieldIndex(kind), Some(kind))
      var t = entry.statsSchema(kind).dataType.asInstanceOf[StructType]
      physicalPath.foreach { name =>
        val i = t.fieldNames.indexOf(name)
        if (i < 0) return None
        current = GetStructField(current, i, Some(name))
        t = t(i).dataType match {
          case s: StructType => s
          case _ => null
        }
      }
      Some(current)
    }

    private def numRecords: Expression =
      GetStructField(stats, entry.statsSchema.fieldIndex(FileEntry.NumRecords), None)

    /**
     * The null count of a leaf column. A struct column has none of its own: its `nullCount` is a
     * struct of its fields' counts, and a row whose struct is null is not counted anywhere, so `s
     * IS NULL` cannot be decided from statistics.
     */
    def nullCount: Option[Expression] =
      if (field.dataType.isInstanceOf[StructType]) None else statsField(FileEntry.NullCount)

    def allNull: Option[Expression] = nullCount.map(n => EqualTo(n, numRecords))

    def isString: Boolean = field.dataType.isInstanceOf[StringType]
    def isTimestamp: Boolean = field.dataType == TimestampType || field.dataType == TimestampNTZType

    /** (min, max) when the column has bounds and `v` is of its type. */
    def bounds(v: Literal): Option[(Expression, Expression)] =
      if (!FileEntry.hasBounds(field) || v.dataType != field.dataType) None
      else
        for {
          lo <- statsField(FileEntry.MinValues)
          hi <- statsField(FileEntry.MaxValues)
        } yield (lo, hi)

    /**
     * `v` as compared with a max: a timestamp max is stored truncated to milliseconds, so the true
     * max may be up to 999 µs above it; comparing the stored max with v - 1 ms keeps it safe.
     */
    def forMax(v: Literal): Literal =
      if (!isTimestamp) v
      else {
        val micros = v.value.asInstanceOf[Long]
        Literal(if (micros < Long.MinValue + 1000L) Long.MinValue else micros - 1000L, v.dataType)
      }
  }

  private object ColumnStats {
    def unapply(e: Expression): Option[ColumnStats] = {
      def walk(x: Expression): Option[(AttributeReference, List[String])] = x match {
        case a: AttributeReference => Some((a, Nil))
        case g: GetStructField => walk(g.child).map { case (a, p) => (a, p :+ g.extractFieldName) }
        case _ => None
      }
      walk(e).flatMap { case (attr, nested) =>
        if (partitionColumns.contains(attr.name.toLowerCase)) None
        else
          entry.tableSchema.fields.find(_.name.equalsIgnoreCase(attr.name)).flatMap { top =>
            // resolve the nested names to fields (and their physical names)
            var f = top
            val physical = Seq.newBuilder[String]
            physical += FileEntry.physicalNameOf(top)
            nested.foreach { n =>
              f.dataType match {
                case s: StructType =>
                  f = s.fields.find(_.name.equalsIgnoreCase(n)).getOrElse(return None)
                  physical += FileEntry.physicalNameOf(f)
                case _ => return None
              }
            }
            if (f.dataType != e.dataType) None else Some(ColumnStats(e, physical.result(), f))
          }
      }
    }
  }
}

private[deltareplay] object DataSkipping {

  /** Up to this many IN values are tested one by one; more are tested as a range. */
  val MaxInValues = 64

  /** `a AND b`, a literal true on either side left out. */
  def and(a: Expression, b: Expression): Expression = (a, b) match {
    case (Literal.TrueLiteral, x) => x
    case (x, Literal.TrueLiteral) => x
    case _ => And(a, b)
  }
}
