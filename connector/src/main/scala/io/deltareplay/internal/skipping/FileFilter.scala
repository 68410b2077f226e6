package io.deltareplay.internal.skipping

import io.deltareplay.internal.log.FileEntry
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.vectorized.ColumnarBatch

/**
 * Partition pruning and data skipping of one scan, as predicates over [[FileEntry]] rows; plain
 * expressions, so it travels to planning tasks and compiles where it runs.
 */
private[deltareplay] final case class FileFilter(
    prune: Expression,
    skip: Expression,
    attributes: Seq[Attribute]
) {
  @transient private lazy val pruneP = FileFilter.compile(prune, attributes)
  @transient private lazy val skipP = FileFilter.compile(skip, attributes)

  /** Whether the file's partition values satisfy the partition filters. */
  def keepsPartition(entry: InternalRow): Boolean = pruneP.eval(entry)

  /** Whether the file's statistics allow a matching row (after [[keepsPartition]]). */
  def mayMatch(entry: InternalRow): Boolean = skipP.eval(entry)

  @transient private lazy val pruneVector = SkipVector(prune, attributes)
  @transient private lazy val skipVector = SkipVector(skip, attributes)

  /**
   * The rows of a batch of entries that [[keepsPartition]] may accept, found column by column
   * ([[SkipVector]]): every row it accepts is among them. None when the pass cannot tell rows
   * apart.
   */
  def pruneCandidates(batch: ColumnarBatch): Option[java.util.BitSet] =
    pruneVector.map(_.candidates(batch))

  /** [[pruneCandidates]] of [[mayMatch]]. */
  def skipCandidates(batch: ColumnarBatch): Option[java.util.BitSet] =
    skipVector.map(_.candidates(batch))

  def prunes: Boolean = prune != Literal.TrueLiteral
  def skips: Boolean = skip != Literal.TrueLiteral

  /**
   * This filter over `entry`'s attributes: each entry column it refers to replaced by `entry`'s
   * attribute at the same position. Two equal entries made apart have attributes of their own ids,
   * and what moves a filter onto the log's rows
   * ([[io.deltareplay.internal.replay.CheckpointFilter]],
   * [[io.deltareplay.internal.replay.TailFilter]]) finds the entry's columns by id: a filter made
   * over another instance would not move, and the read it should narrow would read everything. This
   * filter as it is when the two entries' columns differ.
   */
  def over(entry: FileEntry): FileFilter = {
    def columns(as: Seq[Attribute]) = as.map(a => (a.name, a.dataType))
    if (attributes == entry.attributes || columns(attributes) != columns(entry.attributes)) this
    else {
      val to = attributes.map(_.exprId).zip(entry.attributes).toMap
      def swap(e: Expression): Expression = e.transform {
        case a: AttributeReference if to.contains(a.exprId) => to(a.exprId)
      }
      FileFilter(swap(prune), swap(skip), entry.attributes)
    }
  }
}

private[deltareplay] object FileFilter {

  /** The filter of a scan: partition filters prune; the others skip (when skipping is on). */
  def apply(entry: FileEntry, filters: PushedFilters, skipping: Boolean): FileFilter = {
    val rules = new DataSkipping(entry)
    FileFilter(
      rules.partitionPredicate(filters.partition),
      if (skipping) rules.predicate(filters.skipping) else Literal.TrueLiteral,
      entry.attributes
    )
  }

  private def compile(e: Expression, attributes: Seq[Attribute]): BasePredicate =
    if (e == Literal.TrueLiteral) AlwaysTrue
    else {
      val p = Predicate.create(e, attributes)
      p.initialize(0)
      p
    }

  private object AlwaysTrue extends BasePredicate {
    override def eval(r: InternalRow): Boolean = true
    override def initialize(partitionIndex: Int): Unit = ()
  }
}
