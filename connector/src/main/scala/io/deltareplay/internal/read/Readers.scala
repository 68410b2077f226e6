package io.deltareplay.internal.read

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.PartitionReader
import org.apache.spark.sql.vectorized.ColumnarBatch

/** A reader of nothing: a data file skipped under `ignoreMissingFiles` / `ignoreCorruptFiles`. */
private[deltareplay] object EmptyReader extends PartitionReader[Nothing] {
  override def next(): Boolean = false
  override def get(): Nothing = throw new NoSuchElementException("an empty reader has no row")
  override def close(): Unit = ()
}

/** The rows of a columnar reader's batches, one at a time (each row valid until the next). */
private[deltareplay] final class BatchRowReader(batches: PartitionReader[ColumnarBatch])
    extends PartitionReader[InternalRow] {
  private var rows: java.util.Iterator[InternalRow] = java.util.Collections.emptyIterator()
  private var current: InternalRow = _

  override def next(): Boolean = {
    while (!rows.hasNext) {
      if (!batches.next()) return false
      rows = batches.get().rowIterator()
    }
    current = rows.next()
    true
  }

  override def get(): InternalRow = current

  override def close(): Unit = batches.close()
}

/** Reads one reader after another, opening each lazily and closing it when done. */
private[deltareplay] final class ChainedReader[T](readers: Iterator[PartitionReader[T]])
    extends PartitionReader[T] {
  private var current: PartitionReader[T] = _

  override def next(): Boolean = {
    while (true) {
      if (current != null && current.next()) return true
      if (current != null) { current.close(); current = null }
      if (!readers.hasNext) return false
      current = readers.next()
    }
    false
  }

  override def get(): T = current.get()

  override def close(): Unit = if (current != null) current.close()
}
