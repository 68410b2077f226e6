package io.deltareplay.differential

import scala.util.Random

/** A generated predicate over a table's columns, rendered as Spark SQL. */
sealed trait Pred {
  def sql: String

  /** Smaller predicates that may still show a difference (for a minimal recipe). */
  def shrink: Seq[Pred] = Nil
}

object Pred {
  final case class Leaf(sql: String) extends Pred
  final case class Not(p: Pred) extends Pred {
    def sql = s"NOT (${p.sql})"
    override def shrink: Seq[Pred] = Seq(p)
  }
  final case class And(a: Pred, b: Pred) extends Pred {
    def sql = s"(${a.sql}) AND (${b.sql})"
    override def shrink: Seq[Pred] = Seq(a, b)
  }
  final case class Or(a: Pred, b: Pred) extends Pred {
    def sql = s"(${a.sql}) OR (${b.sql})"
    override def shrink: Seq[Pred] = Seq(a, b)
  }
}

/** What a generated query asks of the table. */
sealed trait Query {
  def describe: String

  /** The features this query exercises. */
  def features: Set[String] = Set.empty
}

object Query {

  /** How a query reads the table: the newest version, or an older one by version or timestamp. */
  sealed trait At {
    def options: Map[String, String]
    def describe: String
  }
  case object Newest extends At {
    def options: Map[String, String] = Map.empty
    def describe = ""
  }
  final case class AtVersion(v: Long) extends At {
    def options: Map[String, String] = Map("versionAsOf" -> v.toString)
    def describe = s" VERSION AS OF $v"
  }
  final case class AtTimestamp(ts: String) extends At {
    def options: Map[String, String] = Map("timestampAsOf" -> ts)
    def describe = s" TIMESTAMP AS OF '$ts'"
  }

  /** `SELECT columns WHERE pred` (at `at`). */
  final case class Select(columns: Seq[String], pred: Option[Pred], at: At = Newest) extends Query {
    def describe: String =
      s"SELECT ${columns.mkString(", ")}" + pred.fold("")(p => s" WHERE ${p.sql}") + at.describe
    override def features: Set[String] = at match {
      case AtVersion(_) => Set(Feature.TravelVersion)
      case AtTimestamp(_) => Set(Feature.TravelTimestamp)
      case Newest => Set.empty
    }
  }

  /** Aggregates (answered from statistics where possible), with an optional filter. */
  final case class Aggregate(functions: Seq[String], pred: Option[Pred]) extends Query {
    def describe: String =
      s"SELECT ${functions.mkString(", ")}" + pred.fold("")(p => s" WHERE ${p.sql}")
  }
}

/** An earlier version of the table a query may travel to, with its columns then. */
final case class Travel(version: Long, timestamp: String, columns: Seq[Column])

/**
 * Random queries over a table's columns at one point of its history: comparisons (`=`, `<`, `<=`,
 * `>`, `>=`, `<=>`, `!=`), `IN`, null tests (of structs and their fields too), `LIKE 'prefix%'` and
 * `startsWith`, struct fields, array sizes and elements, map values, `AND`/`OR`/`NOT`, casts, a
 * Scala UDF, on data and partition columns mixed (every name quoted), with literals from the values
 * the table holds and each type's edge values; projections with partition columns, `_metadata` and
 * `input_file_name()`; aggregates; time travel by version and by timestamp.
 */
final class Queries(
    columns: Seq[Column],
    written: Column => IndexedSeq[Any],
    travels: Seq[Travel],
    r: Random
) {
  private val leaves = columns.filter(!_.kind.nested)

  private def value(c: Column): Any = {
    val seen = written(c)
    if (seen.nonEmpty && r.nextInt(3) > 0) seen(r.nextInt(seen.size))
    else Values.pick(Values.pool(c.kind, r), r)
  }

  private def comparison(ref: String, kind: ColumnType, v: Any): Pred = {
    val ops = Seq("=", "<", "<=", ">", ">=", "<=>", "!=")
    Pred.Leaf(s"$ref ${ops(r.nextInt(ops.size))} ${kind.literal(v)}")
  }

  /** A test of a struct, array or map column. */
  private def nestedLeaf(c: Column): Pred = c.kind match {
    case ColumnType.Struct_(fields) =>
      val (f, t) = fields(r.nextInt(fields.size))
      val v = Values.pick(Values.pool(t, r), r)
      r.nextInt(5) match {
        case 0 => Pred.Leaf(s"${c.q} IS NULL")
        case 1 => Pred.Leaf(s"${c.q} IS NOT NULL")
        case 2 => Pred.Leaf(s"${c.q}.$f IS NULL")
        case 3 => Pred.Leaf(s"${c.q}.$f IS NOT NULL")
        case _ => comparison(s"${c.q}.$f", t, v)
      }
    case ColumnType.Array_(element) =>
      r.nextInt(4) match {
        case 0 => Pred.Leaf(s"${c.q} IS NULL")
        case 1 => Pred.Leaf(s"size(${c.q}) > ${r.nextInt(3)}")
        case _ =>
          val v = Values.pick(Values.pool(element, r), r)
          Pred.Leaf(s"array_contains(${c.q}, ${element.literal(v)})")
      }
    case m @ ColumnType.Map_(valueType) =>
      r.nextInt(3) match {
        case 0 => Pred.Leaf(s"${c.q} IS NOT NULL")
        case _ =>
          val k = m.keys(r.nextInt(m.keys.size))
          comparison(s"${c.q}['$k']", valueType, Values.pick(Values.pool(valueType, r), r))
      }
    case _ => Pred.Leaf("true")
  }

  private def leaf(): Pred = {
    val c = columns(r.nextInt(columns.size))
    if (c.kind.nested) return nestedLeaf(c)
    val lit = c.kind.literal(value(c))
    r.nextInt(12) match {
      case 0 => Pred.Leaf(s"${c.q} IS NULL")
      case 1 => Pred.Leaf(s"${c.q} IS NOT NULL")
      case 2 =>
        val values = Seq.fill(1 + r.nextInt(4))(c.kind.literal(value(c))) ++
          (if (r.nextInt(5) == 0) Seq(s"CAST(NULL AS ${c.kind.ddl})") else Nil)
        Pred.Leaf(s"${c.q} IN (${values.mkString(", ")})")
      case 3 if c.kind.isString =>
        val s = value(c).toString.replace("'", "").replace("\\", "")
        val cps = s.codePoints().toArray
        val prefix = new String(cps, 0, if (cps.isEmpty) 0 else r.nextInt(cps.length + 1))
        if (r.nextBoolean()) Pred.Leaf(s"${c.q} LIKE '${prefix.replace("%", "")}%'")
        else Pred.Leaf(s"startsWith(${c.q}, '$prefix')")
      case 4 => Pred.Leaf(s"CAST(${c.q} AS STRING) = CAST($lit AS STRING)")
      case 5 => Pred.Leaf(s"dr_same(CAST(${c.q} AS STRING)) = CAST($lit AS STRING)")
      case 6 if columns.size > 1 =>
        val d = columns(r.nextInt(columns.size))
        Pred.Leaf(s"${c.q} = $lit OR ${d.q} IS NULL")
      case 7 => Pred.Leaf(s"id ${Seq("<", ">=", "=")(r.nextInt(3))} ${r.nextInt(40)}")
      case _ => comparison(c.q, c.kind, value(c))
    }
  }

  def pred(depth: Int = 0): Pred =
    if (depth >= 2 || r.nextInt(3) == 0) leaf()
    else
      r.nextInt(5) match {
        case 0 => Pred.Not(pred(depth + 1))
        case 1 | 2 => Pred.And(pred(depth + 1), pred(depth + 1))
        case _ => Pred.Or(pred(depth + 1), pred(depth + 1))
      }

  /** A predicate on partition columns only (None when the table has none). */
  private def partitionPred(): Option[Pred] = {
    val parts = columns.filter(_.partition)
    if (parts.isEmpty) None
    else {
      val c = parts(r.nextInt(parts.size))
      Some(Pred.Leaf(s"${c.q} = ${c.kind.literal(value(c))} OR ${c.q} IS NULL"))
    }
  }

  def next(): Query = r.nextInt(12) match {
    case 0 if leaves.nonEmpty =>
      val c = leaves(r.nextInt(leaves.size)).q
      val fs = Seq("count(*)", s"count($c)", s"min($c)", s"max($c)", "min(id)", "max(id)")
      Query.Aggregate(
        r.shuffle(fs).take(1 + r.nextInt(3)),
        if (r.nextBoolean()) partitionPred() else None
      )
    case 1 | 2 if travels.nonEmpty =>
      val t = travels(r.nextInt(travels.size))
      val at = if (r.nextBoolean()) Query.AtVersion(t.version) else Query.AtTimestamp(t.timestamp)
      val past = new Queries(t.columns, written, Nil, r)
      Query.Select(Seq("*"), Some(past.pred()), at)
    case 3 =>
      Query.Select(Seq("id", "_metadata.file_name", "_metadata.file_size"), Some(pred()))
    case 4 => Query.Select(Seq("id", "input_file_name()"), Some(pred()))
    case 5 =>
      val cols = "id" +: r.shuffle(columns.map(_.q)).take(1 + r.nextInt(2))
      Query.Select(cols, Some(pred()))
    case _ => Query.Select(Seq("*"), Some(pred()))
  }
}
