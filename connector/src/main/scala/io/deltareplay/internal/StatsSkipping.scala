package io.deltareplay.internal

import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * Data skipping with the per-file statistics of the log (numRecords, minValues, maxValues,
 * nullCount). [[mightMatch]] answers "can any row of this file satisfy the filter?"; it answers yes
 * whenever the statistics cannot tell, so skipping never drops a matching file.
 *
 * Supported: `=`, `<`, `<=`, `>`, `>=`, `IN`, `IS NULL`, `IS NOT NULL`, `startsWith`, `AND`, `OR`,
 * and `NOT` over `IS NULL`, on top-level columns of numeric, string, date, timestamp and boolean
 * type. Timestamp maxima are stored truncated to milliseconds, so they are widened by 999
 * microseconds.
 *
 * @param physicalName
 *   the statistics key of a logical top-level column
 */
private[deltareplay] final class StatsSkipping(
    filters: Seq[Expression],
    columnTypes: Map[String, DataType],
    physicalName: String => String,
    timeZone: String
) {
  private val mapper = new ObjectMapper()

  /** Whether the file with these JSON stats may hold a row matching all filters. */
  def mightMatch(statsJson: String): Boolean =
    if (statsJson == null || filters.isEmpty) true
    else {
      val stats =
        try mapper.readTree(statsJson)
        catch { case NonFatal(_) => return true }
      filters.forall(f => eval(f, stats))
    }

  private def column(e: Expression): Option[(String, DataType)] = e match {
    case a: AttributeReference => columnTypes.get(a.name).map(a.name -> _)
    case Cast(a: AttributeReference, _, _, _) => None
    case _ => None
  }

  private def literal(e: Expression): Option[Any] = e match {
    case Literal(v, _) if v != null => Some(v)
    case _ => None
  }

  private def eval(e: Expression, s: JsonNode): Boolean = e match {
    case And(l, r) => eval(l, s) && eval(r, s)
    case Or(l, r) => eval(l, s) || eval(r, s)
    case IsNull(c) => column(c).forall { case (n, _) => nullCount(s, n).forall(_ > 0) }
    case Not(IsNull(c)) => eval(IsNotNull(c), s)
    case IsNotNull(c) =>
      column(c).forall { case (n, _) => !allNull(s, n) }
    case EqualTo(c, v) if column(c).isDefined && literal(v).isDefined =>
      compare(s, c, v)((min, max, x) => min <= x && max >= x)
    case EqualTo(v, c) if column(c).isDefined => eval(EqualTo(c, v), s)
    case EqualNullSafe(c, v) if column(c).isDefined && literal(v).isDefined =>
      eval(EqualTo(c, v), s)
    case LessThan(c, v) if column(c).isDefined => compare(s, c, v)((min, _, x) => min < x)
    case LessThan(v, c) if column(c).isDefined => eval(GreaterThan(c, v), s)
    case LessThanOrEqual(c, v) if column(c).isDefined => compare(s, c, v)((min, _, x) => min <= x)
    case LessThanOrEqual(v, c) if column(c).isDefined => eval(GreaterThanOrEqual(c, v), s)
    case GreaterThan(c, v) if column(c).isDefined => compare(s, c, v)((_, max, x) => max > x)
    case GreaterThan(v, c) if column(c).isDefined => eval(LessThan(c, v), s)
    case GreaterThanOrEqual(c, v) if column(c).isDefined =>
      compare(s, c, v)((_, max, x) => max >= x)
    case GreaterThanOrEqual(v, c) if column(c).isDefined => eval(LessThanOrEqual(c, v), s)
    case In(c, values) if column(c).isDefined && values.forall(literal(_).isDefined) =>
      values.exists(v => eval(EqualTo(c, v), s))
    case InSet(c, values) if column(c).isDefined =>
      values.exists(v => v != null && eval(EqualTo(c, Literal.create(v, c.dataType)), s))
    case StartsWith(c, Literal(prefix: UTF8String, StringType)) if column(c).isDefined =>
      val (name, _) = column(c).get
      if (allNull(s, name)) false
      else
        (bound(s, "minValues", name), bound(s, "maxValues", name)) match {
          case (Some(min), Some(max)) =>
            val p = prefix.toString
            val lo = min.asText()
            val hi = max.asText()
            // Some value v with lo <= v <= hi starts with p iff p's range meets [lo, hi].
            !(hi < p && !hi.startsWith(p)) && !(lo.take(p.length) > p)
          case _ => true
        }
    case _ => true
  }

  private def nullCount(s: JsonNode, name: String): Option[Long] =
    Option(s.get("nullCount"))
      .flatMap(n => Option(n.get(physicalName(name))))
      .filter(_.isNumber)
      .map(_.asLong())

  private def allNull(s: JsonNode, name: String): Boolean =
    (nullCount(s, name), Option(s.get("numRecords")).filter(_.isNumber).map(_.asLong())) match {
      case (Some(nulls), Some(rows)) => nulls == rows
      case _ => false
    }

  private def bound(s: JsonNode, kind: String, name: String): Option[JsonNode] =
    Option(s.get(kind)).flatMap(n => Option(n.get(physicalName(name)))).filterNot(_.isNull)

  /**
   * Applies `ok(min, max, value)` on a common ordered representation; true when unknown. A column
   * whose every value is null matches no comparison.
   */
  private def compare(s: JsonNode, c: Expression, v: Expression)(
      ok: (Ordered[Any], Ordered[Any], Any) => Boolean
  ): Boolean = {
    val (name, dataType) = column(c).get
    val value = literal(v).getOrElse(return true)
    if (allNull(s, name)) return false
    (bound(s, "minValues", name), bound(s, "maxValues", name)) match {
      case (Some(min), Some(max)) =>
        (
          toKey(min, dataType, isMax = false),
          toKey(max, dataType, isMax = true),
          litKey(value, dataType)
        ) match {
          case (Some(lo), Some(hi), Some(x)) => ok(lo, hi, x.value)
          case _ => true
        }
      case _ => true
    }
  }

  private val longCmp = (a: Any, b: Any) =>
    java.lang.Long.compare(a.asInstanceOf[Long], b.asInstanceOf[Long])
  private val doubleCmp = (a: Any, b: Any) =>
    java.lang.Double.compare(a.asInstanceOf[Double], b.asInstanceOf[Double])
  private val decimalCmp = (a: Any, b: Any) =>
    a.asInstanceOf[BigDecimal].compare(b.asInstanceOf[BigDecimal])
  private val stringCmp = (a: Any, b: Any) =>
    a.asInstanceOf[UTF8String].binaryCompare(b.asInstanceOf[UTF8String])
  private val boolCmp = (a: Any, b: Any) =>
    java.lang.Boolean.compare(a.asInstanceOf[Boolean], b.asInstanceOf[Boolean])

  private def toKey(node: JsonNode, dt: DataType, isMax: Boolean): Option[Key] =
    try
      dt match {
        case ByteType | ShortType | IntegerType | LongType if node.isNumber =>
          Some(Key(node.asLong(), longCmp))
        case FloatType | DoubleType if node.isNumber => Some(Key(node.asDouble(), doubleCmp))
        case _: DecimalType if node.isNumber =>
          Some(Key(BigDecimal(node.decimalValue()), decimalCmp))
        case StringType if node.isTextual =>
          Some(Key(UTF8String.fromString(node.asText()), stringCmp))
        case DateType if node.isTextual =>
          DateTimeUtils
            .stringToDate(UTF8String.fromString(node.asText()))
            .map(d => Key(d.toLong, longCmp))
        case TimestampType | TimestampNTZType if node.isTextual =>
          val parsed =
            if (dt == TimestampType) {
              DateTimeUtils.stringToTimestamp(
                UTF8String.fromString(node.asText()),
                DateTimeUtils.getZoneId(timeZone)
              )
            } else
              DateTimeUtils.stringToTimestampWithoutTimeZone(UTF8String.fromString(node.asText()))
          parsed.map(us => Key(if (isMax) us + 999L else us, longCmp))
        case BooleanType if node.isBoolean => Some(Key(node.asBoolean(), boolCmp))
        case _ => None
      }
    catch { case NonFatal(_) => None }

  private def litKey(v: Any, dt: DataType): Option[Key] = (v, dt) match {
    case (x: Byte, _) => Some(Key(x.toLong, longCmp))
    case (x: Short, _) => Some(Key(x.toLong, longCmp))
    case (x: Int, DateType) => Some(Key(x.toLong, longCmp))
    case (x: Int, _) => Some(Key(x.toLong, longCmp))
    case (x: Long, _) => Some(Key(x, longCmp))
    case (x: Float, _) => Some(Key(x.toDouble, doubleCmp))
    case (x: Double, _) => Some(Key(x, doubleCmp))
    case (x: Decimal, _) => Some(Key(x.toBigDecimal, decimalCmp))
    case (x: UTF8String, _) => Some(Key(x, stringCmp))
    case (x: Boolean, _) => Some(Key(x, boolCmp))
    case _ => None
  }
}

/** A value wrapped so that min/max/literal compare in the column's order. */
private final case class Key(value: Any, cmp: (Any, Any) => Int) extends Ordered[Any] {
  override def compare(that: Any): Int = cmp(value, that)
}
