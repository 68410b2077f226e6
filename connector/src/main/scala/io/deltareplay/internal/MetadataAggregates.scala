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

  private val mapper = new ObjectMapper()

  /** One answered aggregation: its row (Spark's partial-aggregate schema) and what it used. */
  final case class Answer(schema: StructType, row: InternalRow, files: Long, functions: Seq[String])

  private def column(ref: NamedReference, schema: StructType): Option[StructField] =
    if (ref.fieldNames.length != 1) None
    else schema.fields.find(_.name.equalsIgnoreCase(ref.fieldNames.head))

  /** The answer for `agg` over `files`, or None when the statistics cannot give it exactly. */
  def answer(
      agg: Aggregation,
      files: Seq[LiveFile],
      snapshot: TableSnapshot
  ): Option[Answer] = {
    if (agg.groupByExpressions.nonEmpty) return None
    val schema = snapshot.schema
    val partitions = snapshot.partitionColumns.map(_.toLowerCase).toSet
    val parsed =
      try files.map(f => (f, if (f.stats == null) null else mapper.readTree(f.stats)))
      catch { case NonFatal(_) => return None }
    if (parsed.exists { case (_, s) => s == null || !s.path("numRecords").canConvertToLong })
      return None
    val anyDv = files.exists(_.dv.isDefined)
    def exactBounds(f: LiveFile, s: JsonNode): Boolean =
      f.dv.isEmpty || s.path("tightBounds").asBoolean(false)

    val fields = Seq.newBuilder[StructField]
    val values = Seq.newBuilder[Any]
    val names = Seq.newBuilder[String]
    agg.aggregateExpressions.foreach {
      case _: CountStar =>
        val n = parsed.map { case (f, s) =>
          s.path("numRecords").asLong() - f.dv.map(_.cardinality).getOrElse(0L)
        }.sum
        fields += StructField("count(*)", LongType, nullable = false)
        values += n
        names += "count(*)"
      case c: Count if !c.isDistinct && !anyDv =>
        val field = c.column match {
          case ref: NamedReference => column(ref, schema)
          case _ => None
        }
        if (field.isEmpty || partitions.contains(field.get.name.toLowerCase)) return None
        val phys = snapshot.meta.physicalName(field.get.name)
        val counts = parsed.map { case (_, s) =>
          val nulls = s.path("nullCount").path(phys)
          if (!nulls.canConvertToLong) return None
          s.path("numRecords").asLong() - nulls.asLong()
        }
        fields += StructField(s"count(${field.get.name})", LongType, nullable = false)
        values += counts.sum
        names += s"count(${field.get.name})"
      case m @ (_: Min | _: Max) =>
        val (ref, isMin) = m match {
          case x: Min => (x.column, true)
          case x: Max => (x.column, false)
          case _ => return None
        }
        val field = ref match {
          case r: NamedReference => column(r, schema)
          case _ => None
        }
        if (field.isEmpty || partitions.contains(field.get.name.toLowerCase)) return None
        val f = field.get
        val convert: JsonNode => Option[Any] = f.dataType match {
          case ByteType => n => Option.when(n.canConvertToInt)(n.asInt().toByte)
          case ShortType => n => Option.when(n.canConvertToInt)(n.asInt().toShort)
          case IntegerType => n => Option.when(n.canConvertToInt)(n.asInt())
          case LongType => n => Option.when(n.canConvertToLong)(n.asLong())
          case DateType =>
            n =>
              if (!n.isTextual) None
              else
                try Some(java.time.LocalDate.parse(n.asText()).toEpochDay.toInt)
                catch { case NonFatal(_) => None }
          case _ => return None
        }
        val phys = snapshot.meta.physicalName(f.name)
        val bounds = parsed.flatMap { case (lf, s) =>
          if (!exactBounds(lf, s)) return None
          val bound = s.path(if (isMin) "minValues" else "maxValues").path(phys)
          if (bound.isMissingNode || bound.isNull) {
            // No bound: fine only if the file's column is all null (or the file is empty).
            val nulls = s.path("nullCount").path(phys)
            val rows = s.path("numRecords").asLong()
            if (rows == 0L || (nulls.canConvertToLong && nulls.asLong() == rows)) None
            else return None
          } else {
            Some(convert(bound).getOrElse(return None))
          }
        }
        val ordering = f.dataType match {
          case ByteType => Ordering.Byte.asInstanceOf[Ordering[Any]]
          case ShortType => Ordering.Short.asInstanceOf[Ordering[Any]]
          case IntegerType | DateType => Ordering.Int.asInstanceOf[Ordering[Any]]
          case _ => Ordering.Long.asInstanceOf[Ordering[Any]]
        }
        val result =
          if (bounds.isEmpty) null else if (isMin) bounds.min(ordering) else bounds.max(ordering)
        val name = s"${if (isMin) "min" else "max"}(${f.name})"
        fields += StructField(name, f.dataType, nullable = true)
        values += result
        names += name
      case _ => return None
    }
    val row = new GenericInternalRow(values.result().toArray)
    Some(Answer(StructType(fields.result()), row, files.size.toLong, names.result()))
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
