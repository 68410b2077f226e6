package io.deltareplay.internal

import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
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
import org.apache.spark.sql.connector.read._
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

  /** What one aggregate function needs from each file's statistics (travels to executors). */
  sealed trait Function extends Serializable { def field: StructField }
  final case class CountStarOf() extends Function {
    def field: StructField = StructField("count(*)", LongType, nullable = false)
  }
  final case class CountOf(column: String, physical: String) extends Function {
    def field: StructField = StructField(s"count($column)", LongType, nullable = false)
  }
  final case class BoundOf(column: String, physical: String, dataType: DataType, isMin: Boolean)
      extends Function {
    def field: StructField =
      StructField(s"${if (isMin) "min" else "max"}($column)", dataType, nullable = true)
  }

  private def column(ref: NamedReference, schema: StructType): Option[StructField] =
    if (ref.fieldNames.length != 1) None
    else schema.fields.find(_.name.equalsIgnoreCase(ref.fieldNames.head))

  /** The functions of `agg` when statistics can answer each of them in principle. */
  def functions(agg: Aggregation, snapshot: TableSnapshot): Option[Seq[Function]] = {
    if (agg.groupByExpressions.nonEmpty) return None
    val schema = snapshot.schema
    val partitions = snapshot.partitionColumns.map(_.toLowerCase).toSet
    def dataColumn(e: Any): Option[StructField] = (e match {
      case ref: NamedReference => column(ref, schema)
      case _ => None
    }).filterNot(f => partitions.contains(f.name.toLowerCase))
    val out = agg.aggregateExpressions.toSeq.map {
      case _: CountStar => CountStarOf()
      case c: Count if !c.isDistinct =>
        val f = dataColumn(c.column).getOrElse(return None)
        CountOf(f.name, snapshot.meta.physicalName(f.name))
      case m @ (_: Min | _: Max) =>
        val (ref, isMin) = m match {
          case x: Min => (x.column, true)
          case x: Max => (x.column, false)
          case _ => return None
        }
        val f = dataColumn(ref).getOrElse(return None)
        f.dataType match {
          case ByteType | ShortType | IntegerType | LongType | DateType =>
            BoundOf(f.name, snapshot.meta.physicalName(f.name), f.dataType, isMin)
          case _ => return None
        }
      case _ => return None
    }
    Some(out)
  }

  /**
   * The aggregates over some of the files, so far: sums, bounds (as longs; dates as epoch days),
   * whether a file had a deletion vector, or that the statistics cannot answer (`failed`).
   */
  final class Partial(val functions: Array[Function]) extends Serializable {
    var failed = false
    var anyDv = false
    var files = 0L
    val sums = new Array[Long](functions.length)
    val bounds = new Array[Long](functions.length)
    val hasBound = new Array[Boolean](functions.length)
    @transient private lazy val mapper = new ObjectMapper()

    /** Adds one file, from its stats JSON and its DV cardinality (-1: no DV). */
    def add(stats: String, dvCardinality: Long): Unit = if (!failed) {
      files += 1
      val s =
        try if (stats == null) null else mapper.readTree(stats)
        catch { case NonFatal(_) => null }
      if (s == null || !s.path("numRecords").canConvertToLong) { failed = true; return }
      val rows = s.path("numRecords").asLong()
      val hasDv = dvCardinality >= 0
      anyDv ||= hasDv
      var i = 0
      while (i < functions.length && !failed) {
        functions(i) match {
          case CountStarOf() => sums(i) += rows - math.max(dvCardinality, 0L)
          case CountOf(_, phys) =>
            val nulls = s.path("nullCount").path(phys)
            if (!nulls.canConvertToLong) failed = true else sums(i) += rows - nulls.asLong()
          case BoundOf(_, phys, dataType, isMin) =>
            // Bounds are exact without a DV, or with one when the file says so.
            if (hasDv && !s.path("tightBounds").asBoolean(false)) failed = true
            else {
              val bound = s.path(if (isMin) "minValues" else "maxValues").path(phys)
              if (bound.isMissingNode || bound.isNull) {
                // No bound: fine only if the file's column is all null (or the file is empty).
                val nulls = s.path("nullCount").path(phys)
                if (!(rows == 0L || (nulls.canConvertToLong && nulls.asLong() == rows))) {
                  failed = true
                }
              } else
                asLong(bound, dataType) match {
                  case None => failed = true
                  case Some(v) =>
                    if (!hasBound(i) || (if (isMin) v < bounds(i) else v > bounds(i))) {
                      bounds(i) = v
                      hasBound(i) = true
                    }
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
            case BoundOf(_, _, _, isMin) =>
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
          case BoundOf(_, _, dataType, _) =>
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

  private def asLong(n: JsonNode, dataType: DataType): Option[Long] = dataType match {
    case ByteType | ShortType | IntegerType => Option.when(n.canConvertToInt)(n.asInt().toLong)
    case LongType => Option.when(n.canConvertToLong)(n.asLong())
    case DateType =>
      if (!n.isTextual) None
      else
        try Some(java.time.LocalDate.parse(n.asText()).toEpochDay)
        catch { case NonFatal(_) => None }
    case _ => None
  }

  /**
   * The answer for `agg` over `files` (on the driver), or None when the statistics cannot give it.
   */
  def answer(
      agg: Aggregation,
      files: Seq[LiveFile],
      snapshot: TableSnapshot
  ): Option[Answer] = functions(agg, snapshot).flatMap { fs =>
    val partial = new Partial(fs.toArray)
    files.foreach(f => partial.add(f.stats, f.dv.map(_.cardinality).getOrElse(-1L)))
    partial.finish()
  }

  /**
   * The answer for `agg` computed where the files are: the distributed replay's live files (with
   * statistics) are pruned by `partitionFilters` and folded into partial aggregates in the replay
   * tasks; only one partial per task reaches the driver. For tables whose file list is too big for
   * the driver (see [[ExecutorPlanning.chosen]]). Returns the answer and the replay's label.
   */
  def answerOnExecutors(
      spark: org.apache.spark.sql.SparkSession,
      snapshot: TableSnapshot,
      conf: ReadConf,
      agg: Aggregation,
      partitionFilters: Seq[org.apache.spark.sql.catalyst.expressions.Expression]
  ): Option[(Answer, String)] = functions(agg, snapshot).flatMap { fs =>
    val segment = snapshot.segment
    val filter = PartitionFilter(
      snapshot,
      partitionFilters,
      spark.sessionState.conf.sessionLocalTimeZone
    )
    val replay = new DistributedReplay(spark, segment, conf, needStats = true)
    val description = s"delta-replay: aggregates of ${segment.table} v${segment.version}"
    val (partials, _) = DistributedReplay.inJobGroup(spark, description) {
      val (frame, _) = replay.liveFrame()
      val functions = fs.toArray
      val folded = frame.queryExecution.toRdd.mapPartitions { rows =>
        val p = new Partial(functions)
        while (rows.hasNext && !p.failed) {
          val r = rows.next()
          import LiveFile.Ord
          val pv = if (r.isNullAt(Ord.PartitionValues)) null else r.getMap(Ord.PartitionValues)
          if (filter.matches(pv)) {
            val dv = if (r.isNullAt(Ord.Dv)) -1L else DvDescriptor.cardinalityOf(r, Ord.Dv)
            p.add(if (r.isNullAt(Ord.Stats)) null else r.getUTF8String(Ord.Stats).toString, dv)
          }
        }
        Iterator(p)
      }
      DistributedReplay.logErrors(segment)(folded.collect())
    }
    partials
      .reduceOption(_ merge _)
      .getOrElse(new Partial(fs.toArray))
      .finish()
      .map(_ -> s"${replay.modeLabel}, on the executors")
  }

  /** A scan that returns the one precomputed row (Spark adds its final aggregate on top). */
  final class StatsAggregateScan(
      snapshot: TableSnapshot,
      answer: Answer,
      replayMode: String,
      partitionFilters: String
  ) extends Scan
      with Batch {
    override def readSchema(): StructType = answer.schema
    override def description(): String =
      s"DeltaReplayScan ${snapshot.table} v${snapshot.version} [aggregates from log statistics: " +
        s"${answer.functions.mkString(", ")} over ${answer.files} files, no data file read; " +
        s"replay $replayMode] PartitionFilters: $partitionFilters"
    def metricsJson: String = {
      import ScanMetrics.quote
      s"""{"table":${quote(snapshot.table)},"version":${snapshot.version},""" +
        s""""replayMode":${quote(replayMode)},"filesAfterPartitionPruning":${answer.files},""" +
        s""""aggregatesFromStats":${answer.functions.map(quote).mkString("[", ",", "]")}}"""
    }
    override def toBatch: Batch = this
    override def planInputPartitions(): Array[InputPartition] = Array(RowPartition(answer.row))
    override def createReaderFactory(): PartitionReaderFactory = RowReaderFactory
  }

  final case class RowPartition(row: InternalRow) extends InputPartition

  object RowReaderFactory extends PartitionReaderFactory {
    override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
      val row = partition.asInstanceOf[RowPartition].row
      new PartitionReader[InternalRow] {
        private var served = false
        override def next(): Boolean = if (served) false else { served = true; true }
        override def get(): InternalRow = row
        override def close(): Unit = ()
      }
    }
  }
}
