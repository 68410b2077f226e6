package io.deltareplay.internal.skipping

import org.apache.spark.sql.catalyst.expressions._

/**
 * The relaxed form of a skipping predicate that the checkpoint read, the tail and [[SkipVector]]
 * share.
 */
private[deltareplay] object Relax {

  /**
   * A predicate at least as permissive as `e` (true wherever `e` is true or null) in the shapes
   * Spark translates to Parquet filters and [[SkipVector]] evaluates over columns: comparisons of a
   * column (`isColumn`) with a literal, each allowed to be null, in ANDs and ORs; true where
   * nothing simpler is known. `coalesce(x, true)` over such comparisons becomes `(col IS NULL OR
   * x)` per comparison: with AND and OR of such comparisons, the whole is false exactly when some
   * needed comparison is false on a non-null value, as the coalesce is.
   */
  def apply(e: Expression, isColumn: Expression => Boolean): Expression = {
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
