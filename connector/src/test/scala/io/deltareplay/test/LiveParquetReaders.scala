package io.deltareplay.test

/** Counts the Parquet file readers alive in this JVM (a full GC first), from inside a task. */
object LiveParquetReaders {
  private val ReaderClass =
    "org.apache.spark.sql.execution.datasources.parquet.VectorizedParquetRecordReader"

  /** Live instances of the vectorized Parquet reader, from the JVM's class histogram. */
  def count(): Int = {
    val histogram = java.lang.management.ManagementFactory.getPlatformMBeanServer
      .invoke(
        new javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"),
        "gcClassHistogram",
        Array[AnyRef](Array.empty[String]),
        Array(classOf[Array[String]].getName)
      )
      .toString
    histogram.linesIterator
      .map(_.trim.split("\\s+"))
      .collectFirst { case Array(_, instances, _, ReaderClass) => instances.toInt }
      .getOrElse(0)
  }

  /** Reads `rows` through, counting the live readers after every `every` rows: the counts. */
  def sampled[T](rows: Iterator[T], every: Int): Iterator[Array[Int]] = {
    val counts = Array.newBuilder[Int]
    var n = 0L
    rows.foreach { _ =>
      n += 1
      if (n % every == 0) counts += count()
    }
    Iterator(counts.result())
  }
}
