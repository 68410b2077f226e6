package io.deltareplay.internal.scan

import io.deltareplay.internal.log.TableSnapshot
import io.deltareplay.internal.planning.MetadataAggregates.Answer
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.types.StructType

/** A scan that returns the one precomputed row (Spark adds its final aggregate on top). */
private[deltareplay] final class StatsAggregateScan(
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

private[deltareplay] final case class RowPartition(row: InternalRow) extends InputPartition

private[deltareplay] object RowReaderFactory extends PartitionReaderFactory {
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
