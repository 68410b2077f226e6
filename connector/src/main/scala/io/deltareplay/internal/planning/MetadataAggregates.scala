package io.deltareplay.internal.planning

import io.deltareplay.internal.index.{DriverIndex, ExecutorIndex, TableIndex}
import io.deltareplay.internal.log.{DvDescriptor, FileEntry, TableSnapshot}
import io.deltareplay.internal.replay.{DistributedReplay, LogJobErrors, Replay}
import io.deltareplay.internal.skipping.FileFilter
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.connector.expressions.NamedReference
import org.apache.spark.sql.connector.expressions.aggregate.{
  Aggregation,
  Count,
  CountStar,
  Max,
  Min
}
import org.apache.spark.sql.types._

/**
 * Aggregates answered from the log's per-file statistics, without reading data files:
 *
 *   - `count(*)` = sum over the files of `numRecords` minus the DV cardinality;
 *   - `count(c)` = sum of `numRecords - nullCount.c`, only when no file has a deletion vector (a DV
 *     does not say whether the rows it deletes were null);
 *   - `min(c)` / `max(c)` for byte, short, int, long and date columns (string and timestamp bounds
 *     are truncated in the stats), only when every file has exact bounds: no deletion vector, or
 *     `tightBounds: true`. A file whose column is all null contributes nothing.
 *
 * Anything else (a file without `numRecords`, a column without bounds, a group by, a filter on a
 * data column: Spark does not push aggregates past filters it must re-evaluate) is not answered and
 * the query scans as usual. Partition filters are fine: they are applied to the file list first.
 */
private[deltareplay] object MetadataAggregates {

  /** One answered aggregation: its row (Spark's partial-aggregate schema) and what it used. */
  final case class Answer(schema: StructType, row: InternalRow, files: Long, functions: Seq[String])

  /**
   * What one aggregate function needs from each file's statistics (travels to executors). The
   * ordinals are those of the column in the entry's `nullCount` / `minValues` / `maxValues`.
   */
  sealed trait Function extends Serializable { def field: StructField }
  final case class CountStarOf() extends Function {
    def field: StructField = StructField("count(*)", LongType, nullable = false)
  }
  final case class CountOf(column: String, nullCountOrdinal: Int) extends Function {
    def field: StructField = StructField(s"count($column)", LongType, nullable = false)
  }
  final case class BoundOf(
      column: String,
      dataType: DataType,
      isMin: Boolean,
      boundOrdinal: Int,
      nullCountOrdinal: Int
  ) extends Function {
    def field: StructField =
      StructField(s"${if (isMin) "min" else "max"}($column)", dataType, nullable = true)
  }

  private def column(ref: NamedReference, schema: StructType): Option[StructField] =
    if (ref.fieldNames.length != 1) None
    else schema.fields.find(_.name.equalsIgnoreCase(ref.fieldNames.head))

  /** The functions of `agg` when statistics can answer each of them in principle. */
  def functions(agg: Aggregation, entry: FileEntry): Option[Seq[Function]] = {
    if (agg.groupByExpressions.nonEmpty) return None
    val schema = entry.tableSchema
    val partitions = entry.partitionColumns.map(_.toLowerCase).toSet
    def dataColumn(e: Any): Option[StructField] = (e match {
      case ref: NamedReference => column(ref, schema)
      case _ => None
    }).filterNot(f => partitions.contains(f.name.toLowerCase))
    def ordinalIn(kind: String, f: StructField): Option[Int] = {
      val struct = entry.statsSchema(kind).dataType.asInstanceOf[StructType]
      Some(struct.fieldNames.indexOf(FileEntry.physicalNameOf(f))).filter(_ >= 0)
    }
    val out = agg.aggregateExpressions.toSeq.map {
      case _: CountStar => CountStarOf()
      case c: Count if !c.isDistinct =>
        val f = dataColumn(c.column).getOrElse(return None)
        CountOf(f.name, ordinalIn(FileEntry.NullCount, f).getOrElse(return None))
      case m @ (_: Min | _: Max) =>
        val (ref, isMin) = m match {
          case x: Min => (x.column, true)
          case x: Max => (x.column, false)
          case _ => return None
        }
        val f = dataColumn(ref).getOrElse(return None)
        // Exact bounds only: integral and date statistics are not truncated.
        f.dataType match {
          case ByteType | ShortType | IntegerType | LongType | DateType =>
            val kind = if (isMin) FileEntry.MinValues else FileEntry.MaxValues
            BoundOf(
              f.name,
              f.dataType,
              isMin,
              ordinalIn(kind, f).getOrElse(return None),
              ordinalIn(FileEntry.NullCount, f).getOrElse(-1)
            )
          case _ => return None
        }
      case _ => return None
    }
    Some(out)
  }

  /** Where an entry's statistics are (ordinals), for [[Partial.add]] on executors. */
  final case class StatsLayout(
      stats: Int,
      dv: Int,
      arity: Int,
      numRecords: Int,
      tightBounds: Int,
      minValues: (Int, Int),
      maxValues: (Int, Int),
      nullCount: (Int, Int)
  )

  object StatsLayout {
    def apply(entry: FileEntry): StatsLayout = {
      val s = entry.statsSchema
      def struct(kind: String) =
        (s.fieldIndex(kind), s(kind).dataType.asInstanceOf[StructType].length)
      StatsLayout(
        entry.Ord.Stats,
        entry.Ord.Dv,
        s.length,
        s.fieldIndex(FileEntry.NumRecords),
        s.fieldIndex(FileEntry.TightBounds),
        struct(FileEntry.MinValues),
        struct(FileEntry.MaxValues),
        struct(FileEntry.NullCount)
      )
    }
  }

  /**
   * The aggregates over some of the files, so far: sums, bounds (as longs; dates as epoch days),
   * whether a file had a deletion vector, or that the statistics cannot answer (`failed`).
   */
  final class Partial(val functions: Array[Function], layout: StatsLayout)
      extends DistributedReplay.EntryFold[Partial] {
    var failed = false
    var anyDv = false
    var files = 0L
    val sums = new Array[Long](functions.length)
    val bounds = new Array[Long](functions.length)
    val hasBound = new Array[Boolean](functions.length)

    def stopped: Boolean = failed

    private def sub(stats: InternalRow, at: (Int, Int)): InternalRow =
      if (stats.isNullAt(at._1)) null else stats.getStruct(at._1, at._2)

    /** Adds one file, from its [[FileEntry]] row. */
    def add(e: InternalRow): Unit = if (!failed) {
      files += 1
      val s = if (e.isNullAt(layout.stats)) null else e.getStruct(layout.stats, layout.arity)
      if (s == null || s.isNullAt(layout.numRecords)) { failed = true; return }
      val rows = s.getLong(layout.numRecords)
      val hasDv = !e.isNullAt(layout.dv)
      val dvCardinality = DvDescriptor.cardinalityOf(e, layout.dv)
      anyDv ||= hasDv
      val nullCounts = sub(s, layout.nullCount)
      def nulls(i: Int): Option[Long] =
        if (nullCounts == null || nullCounts.isNullAt(i)) None else Some(nullCounts.getLong(i))
      var i = 0
      while (i < functions.length && !failed) {
        functions(i) match {
          case CountStarOf() => sums(i) += rows - dvCardinality
          case CountOf(_, ordinal) =>
            nulls(ordinal) match {
              case Some(n) => sums(i) += rows - n
              case None => failed = true
            }
          case BoundOf(_, dataType, isMin, ordinal, nullOrdinal) =>
            // Bounds are exact without a DV, or with one when the file says so.
            val tight = s.isNullAt(layout.tightBounds) || s.getBoolean(layout.tightBounds)
            val values = sub(s, if (isMin) layout.minValues else layout.maxValues)
            if (hasDv && !tight) failed = true
            else if (values == null || values.isNullAt(ordinal)) {
              // No bound: fine only if the file's column is all null (or the file is empty).
              val allNull = nullOrdinal >= 0 && nulls(nullOrdinal).contains(rows)
              if (rows != 0L && !allNull) failed = true
            } else {
              val v = dataType match {
                case ByteType => values.getByte(ordinal).toLong
                case ShortType => values.getShort(ordinal).toLong
                case IntegerType | DateType => values.getInt(ordinal).toLong
                case _ => values.getLong(ordinal)
              }
              if (!hasBound(i) || (if (isMin) v < bounds(i) else v > bounds(i))) {
                bounds(i) = v
                hasBound(i) = true
              }
            }
        }
        i += 1
      }
    }

    def merge(other: Partial): Partial = {
      failed ||= other.failed
      anyDv ||= other.anyDv
      files += other.files
      functions.indices.foreach { i =>
        sums(i) += other.sums(i)
        if (other.hasBound(i)) {
          val better = functions(i) match {
            case BoundOf(_, _, isMin, _, _) =>
              !hasBound(i) || (if (isMin) other.bounds(i) < bounds(i)
                               else other.bounds(i) > bounds(i))
            case _ => false
          }
          if (better) { bounds(i) = other.bounds(i); hasBound(i) = true }
        }
      }
      this
    }

    /** The answer, when the statistics of all files added give it exactly. */
    def finish(): Option[Answer] = {
      if (failed) return None
      // A DV does not say whether the rows it deletes were null.
      if (anyDv && functions.exists(_.isInstanceOf[CountOf])) return None
      val values = functions.indices.map { i =>
        functions(i) match {
          case CountStarOf() | CountOf(_, _) => Long.box(sums(i))
          case BoundOf(_, dataType, _, _, _) =>
            if (!hasBound(i)) null
            else
              // boxed one by one: a plain match would widen every branch to Long
              dataType match {
                case ByteType => Byte.box(bounds(i).toByte)
                case ShortType => Short.box(bounds(i).toShort)
                case IntegerType | DateType => Int.box(bounds(i).toInt)
                case _ => Long.box(bounds(i))
              }
        }
      }
      Some(
        Answer(
          StructType(functions.map(_.field).toSeq),
          new GenericInternalRow(values.toArray[Any]),
          files,
          functions.map(_.field.name).toSeq
        )
      )
    }
  }

  /**
   * The answer for `agg` from the statistics of the files `filter` keeps, computed where `index`
   * is: on the driver ([[answer]]) or in the executors' tasks ([[answerOnExecutors]]).
   */
  def answerWhere(
      spark: org.apache.spark.sql.SparkSession,
      snapshot: TableSnapshot,
      agg: Aggregation,
      index: TableIndex,
      filter: FileFilter
  ): Option[Answer] = index.byHome(new TableIndex.ByHome[Option[Answer]] {
    def onDriver(index: DriverIndex): Option[Answer] = answer(agg, index, filter)
    def onExecutors(index: ExecutorIndex): Option[Answer] =
      answerOnExecutors(spark, snapshot, agg, index, filter)
  })

  /**
   * The answer for `agg` over the indexed files (on the driver) that satisfy `filter`'s partition
   * filters, or None when the statistics cannot give it.
   */
  def answer(agg: Aggregation, index: DriverIndex, filter: FileFilter): Option[Answer] =
    functions(agg, index.entry).flatMap { fs =>
      val partial = new Partial(fs.toArray, StatsLayout(index.entry))
      index.foreachLive((e, _) => if (!partial.failed && filter.keepsPartition(e)) partial.add(e))
      partial.finish()
    }

  /**
   * The answer for `agg` computed where the files are: the entries of an index on the executors are
   * pruned by `filter`'s partition filters and folded into partial aggregates in its tasks; only
   * one partial per task reaches the driver.
   */
  def answerOnExecutors(
      spark: org.apache.spark.sql.SparkSession,
      snapshot: TableSnapshot,
      agg: Aggregation,
      index: ExecutorIndex,
      filter: FileFilter
  ): Option[Answer] = functions(agg, index.entry).flatMap { fs =>
    val segment = snapshot.segment
    val description = s"delta-replay: aggregates of ${segment.table} v${segment.version}"
    val layout = StatsLayout(index.entry)
    val (partials, _) = Replay.inJobGroup(spark, description) {
      val functions = fs.toArray
      val folded = index.frame.queryExecution.toRdd.mapPartitions { rows =>
        val p = new Partial(functions, layout)
        while (rows.hasNext && !p.failed) {
          val e = rows.next()
          if (filter.keepsPartition(e)) p.add(e)
        }
        Iterator(p)
      }
      LogJobErrors.forLog(segment)(folded.collect())
    }
    partials.reduceOption(_ merge _).getOrElse(new Partial(fs.toArray, layout)).finish()
  }
}
