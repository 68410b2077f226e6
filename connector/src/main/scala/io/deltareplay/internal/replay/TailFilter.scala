package io.deltareplay.internal.replay

import scala.collection.mutable

import io.deltareplay.internal.log.{FileEntry, LiveFile, StatsReader}
import io.deltareplay.internal.skipping.{DataSkipping, FileFilter, Relax}
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.internal.SQLConf

/**
 * A scan's [[FileFilter]] checked on the adds of the commits after a checkpoint before their index
 * entries are built, so that a narrowed read ([[CheckpointFilter]] on the checkpoint's side) parses
 * the statistics of only the tail adds its filters may match: building an entry parses the whole
 * statistics JSON with Spark's JSON reader, the largest cost of a first read's tail on a cold
 * driver. It only ever lets more through than the entry predicate: an add it drops is one the read
 * would skip.
 *
 *   - Partition part, exact: the prune predicate with each entry column replaced by the expression
 *     that computes it from the add ([[FileEntry.fromLiveFile]]: the same casts of the partition
 *     values).
 *   - Statistics part, relaxed ([[Relax]]): over the few statistics it compares with literals, read
 *     from the add's JSON token by token with a Jackson parser of the factory Spark's reader builds
 *     for the same (default) options, each value as that reader converts its type: integers of
 *     every width from integer tokens, floats from number tokens, booleans, and strings from string
 *     tokens. Any other token, a value out of range, a statistic of another type, or a missing one
 *     is null, which the relaxed predicate reads as "may match". A document that does not parse, or
 *     that has a key differing from a needed one only in case, keeps the add. A field Spark's
 *     reader fails to convert leaves the other fields set only with its partial results
 *     (`spark.sql.json.enablePartialResults`, on by default); with them off, the statistics part is
 *     not checked.
 */
private[deltareplay] final class TailFilter(entry: FileEntry, filter: FileFilter) {

  private val offset = LiveFile.Schema.length
  private val statsAttr = entry.attribute("stats")
  private val statsField = CheckpointFilter.StatsField(statsAttr)
  private val definitions: Map[ExprId, Expression] =
    entry.attributes.zip(entry.fromLiveFile).map { case (a, e) => a.exprId -> e }.toMap

  private val leaves = mutable.LinkedHashMap.empty[Seq[String], BoundReference]

  /** As Spark's JSON reader takes it (the session's `spark.sql.json.enablePartialResults`). */
  private val partialResults = SQLConf.get.jsonEnablePartialResults

  /** Entry columns other than `stats` replaced by their definition over a [[LiveFile]] row. */
  private def onAdd(e: Expression): Expression = e.transformUp {
    case a: AttributeReference if a.exprId != statsAttr.exprId && definitions.contains(a.exprId) =>
      definitions(a.exprId)
  }

  private val prune: Expression = onAdd(filter.prune) match {
    case p if p.references.isEmpty => p
    case _ => Literal.TrueLiteral // it reads statistics: left to the entries
  }

  private val skip: Expression =
    if (!partialResults || !filter.skips) Literal.TrueLiteral
    else {
      val moved = onAdd(filter.skip.transformDown {
        case g @ statsField(names) if StatsReader.readable(g.dataType) =>
          leaves.getOrElseUpdate(names, BoundReference(offset + leaves.size, g.dataType, true))
        case g @ statsField(_) => Literal(null, g.dataType)
      })
      val relaxed = Relax(
        moved,
        {
          case b: BoundReference => b.ordinal >= offset
          case _ => false
        }
      )
      if (relaxed.references.isEmpty) relaxed else Literal.TrueLiteral
    }

  private val predicate: Expression = DataSkipping.and(prune, skip)

  /** Whether it can drop anything. */
  val narrows: Boolean = predicate != Literal.TrueLiteral

  private val needsAdd = predicate.exists {
    case b: BoundReference => b.ordinal < offset
    case _ => false
  }
  private val noAdd = new GenericInternalRow(offset) // read only: stands for an unused add row
  private val reader =
    new StatsReader(leaves.toSeq.map { case (n, b) => n -> b.dataType }, entry.timeZone)

  /** Whether the read may match the add (false only where the entry predicate is false). */
  def keeps(f: LiveFile): Boolean = !narrows || {
    val values = new GenericInternalRow(leaves.size)
    val sure = leaves.isEmpty || f.stats == null || reader.read(f.stats, values)
    if (!sure) true
    else {
      val add = if (needsAdd) f.toInternalRow else noAdd
      predicate.eval(new JoinedRow(add, values)) != false
    }
  }
}
