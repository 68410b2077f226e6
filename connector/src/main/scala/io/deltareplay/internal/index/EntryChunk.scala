package io.deltareplay.internal.index

import io.deltareplay.internal.log.FileEntry
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.vectorized.ColumnarBatch

/** Builds an [[EntryChunk]] a [[FileEntry]] row at a time (the rows need not outlive the call). */
private[deltareplay] final class EntryChunkBuilder(entry: FileEntry) {
  private val columns = entry.schema.fields.map(f => ColumnBuilder(f.dataType))
  private var hashes = new Array[Long](1024)
  private var n = 0

  def size: Int = n

  def append(row: InternalRow, keyHash: Long): Unit = {
    if (n == hashes.length) hashes = java.util.Arrays.copyOf(hashes, n * 2)
    hashes(n) = keyHash
    var i = 0
    while (i < columns.length) {
      columns(i).append(row, i)
      i += 1
    }
    n += 1
  }

  def result(): EntryChunk =
    EntryChunk(columns.map(_.result()), java.util.Arrays.copyOf(hashes, n), n)
}

/**
 * A chunk of the driver index: `numRows` [[FileEntry]] rows as columns, in entry order, with the
 * 64-bit hash of each row's replay key (to find the rows a later commit removes).
 */
private[deltareplay] final case class EntryChunk(
    columns: Array[ColumnData],
    keyHashes: Array[Long],
    numRows: Int
) {
  @transient lazy val batch: ColumnarBatch = new ColumnarBatch(columns.map(_.vector), numRows)

  def bytes: Long = columns.map(_.bytes).sum + 8L * keyHashes.length + 64
}

private[deltareplay] object EntryChunk {

  /** Columns of `rows` ([[FileEntry]] rows of `entry`) and their key hashes. */
  def apply(entry: FileEntry, rows: IndexedSeq[InternalRow], keyHashes: Array[Long]): EntryChunk = {
    val b = new EntryChunkBuilder(entry)
    var i = 0
    while (i < rows.size) {
      b.append(rows(i), keyHashes(i))
      i += 1
    }
    b.result()
  }
}
