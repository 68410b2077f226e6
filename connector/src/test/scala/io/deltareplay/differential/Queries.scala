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
}

object Query {

  /** `SELECT columns WHERE pred` (at `version` when given). */
  final case class Select(columns: Seq[String], pred: Option[Pred], version: Option[Long])
      extends Query {
    def describe: String =
      s"SELECT ${columns.mkString(", ")}" + pred.fold("")(p => s" WHERE ${p.sql}") +
        version.fold("")(v => s" VERSION AS OF $v")
  }

  /** Aggregates (answered from statistics where possible), with an optional filter. */
  final case class Aggregate(functions: Seq[String], pred: Option[Pred]) extends Query {
    def describe: String =
      s"SELECT ${functions.mkString(", ")}" + pred.fold("")(p => s" WHERE ${p.sql}")
  }
}

/**
 * Random queries over a [[TableRecipe]]: comparisons (`=`, `<`, `<=`, `>`, `>=`, `<=>`, `!=`),
 * `IN`, null tests, `LIKE 'prefix%'` and `startsWith`, `AND`/`OR`/`NOT`, casts, a Scala UDF, on
 * data and partition columns mixed, with literals from the values the table holds and each type's
 * edge values; projections with partition columns, `_metadata` and `input_file_name()`; aggregates;
 * time travel.
 */
final class Queries(table: TableRecipe, versions: Seq[Long], r: Random) {
  private val pools = table.columns.map(c => c -> Values.pool(c.kind, r)).toMap
  private val written: Map[String, IndexedSeq[Any]] = table.columns.map { c =>
    val i = table.schema.fieldIndex(c.name)
    c.name -> table.ops
      .collect { case Op.Append(rows, _) => rows.map(_.get(i)) }
      .flatten
      .filter(_ != null)
      .toIndexedSeq
  }.toMap

  private def value(c: Column): Any = {
    val seen = written(c.name)
    if (seen.nonEmpty && r.nextInt(3) > 0) seen(r.nextInt(seen.size)) else Values.pick(pools(c), r)
  }

  private def leaf(): Pred = {
    val c = table.columns(r.nextInt(table.columns.size))
    val lit = c.kind.literal(value(c))
    val ops = Seq("=", "<", "<=", ">", ">=", "<=>", "!=")
    r.nextInt(12) match {
      case 0 => Pred.Leaf(s"${c.name} IS NULL")
      case 1 => Pred.Leaf(s"${c.name} IS NOT NULL")
      case 2 =>
        val values = Seq.fill(1 + r.nextInt(4))(c.kind.literal(value(c))) ++
          (if (r.nextInt(5) == 0) Seq(s"CAST(NULL AS ${c.kind.ddl})") else Nil)
        Pred.Leaf(s"${c.name} IN (${values.mkString(", ")})")
      case 3 if c.kind.isString =>
        val s = value(c).toString
        val cps = s.codePoints().toArray
        val prefix = new String(cps, 0, if (cps.isEmpty) 0 else r.nextInt(cps.length + 1))
        if (r.nextBoolean()) Pred.Leaf(s"${c.name} LIKE '${prefix.replace("%", "")}%'")
        else Pred.Leaf(s"startsWith(${c.name}, '$prefix')")
      case 4 => Pred.Leaf(s"CAST(${c.name} AS STRING) = CAST($lit AS STRING)")
      case 5 => Pred.Leaf(s"dr_same(CAST(${c.name} AS STRING)) = CAST($lit AS STRING)")
      case 6 if table.columns.size > 1 =>
        val d = table.columns(r.nextInt(table.columns.size))
        Pred.Leaf(s"${c.name} = $lit OR ${d.name} IS NULL")
      case _ => Pred.Leaf(s"${c.name} ${ops(r.nextInt(ops.size))} $lit")
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
    val parts = table.columns.filter(_.partition)
    if (parts.isEmpty) None
    else {
      val c = parts(r.nextInt(parts.size))
      Some(Pred.Leaf(s"${c.name} = ${c.kind.literal(value(c))} OR ${c.name} IS NULL"))
    }
  }

  def next(): Query = r.nextInt(10) match {
    case 0 =>
      val c = table.columns(r.nextInt(table.columns.size)).name
      val fs = Seq("count(*)", s"count($c)", s"min($c)", s"max($c)", "min(id)", "max(id)")
      Query.Aggregate(
        r.shuffle(fs).take(1 + r.nextInt(3)),
        if (r.nextBoolean()) partitionPred() else None
      )
    case 1 if versions.size > 1 =>
      Query.Select(Seq("*"), Some(pred()), Some(versions(r.nextInt(versions.size - 1))))
    case 2 =>
      Query.Select(Seq("id", "_metadata.file_name", "_metadata.file_size"), Some(pred()), None)
    case 3 => Query.Select(Seq("id", "input_file_name()"), Some(pred()), None)
    case 4 =>
      val cols = "id" +: r.shuffle(table.columns.map(_.name)).take(1 + r.nextInt(2))
      Query.Select(cols, Some(pred()), None)
    case _ => Query.Select(Seq("*"), Some(pred()), None)
  }
}
