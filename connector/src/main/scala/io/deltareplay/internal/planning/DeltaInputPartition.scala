package io.deltareplay.internal.planning

import scala.collection.mutable

import io.deltareplay.internal.log.DvDescriptor
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.execution.datasources.PartitionedFile

/** A group of file splits read by one task, with the deletion vector of each split's file. */
private[deltareplay] case class DeltaInputPartition(
    index: Int,
    files: Array[PartitionedFile],
    dvs: Array[DvDescriptor]
) extends InputPartition {
  override def preferredLocations(): Array[String] = Array.empty
}

private[deltareplay] object DeltaInputPartition {

  /** Packs splits (largest first) into partitions of about `maxSplit` bytes, as Spark does. */
  def pack(
      splits: Seq[(PartitionedFile, Option[DvDescriptor])],
      maxSplit: Long,
      openCost: Long
  ): Array[DeltaInputPartition] = {
    val out = mutable.ArrayBuffer.empty[DeltaInputPartition]
    val files = mutable.ArrayBuffer.empty[PartitionedFile]
    val dvs = mutable.ArrayBuffer.empty[DvDescriptor]
    val packer = new BinPacker(maxSplit, openCost)
    var bin = 0
    def close(): Unit = if (files.nonEmpty) {
      out += DeltaInputPartition(out.size, files.toArray, dvs.toArray)
      files.clear(); dvs.clear()
    }
    splits.foreach { case (f, dv) =>
      val next = packer.add(f.length)
      if (next != bin) { close(); bin = next }
      files += f
      dvs += dv.orNull
    }
    close()
    out.toArray
  }
}
