package org.apache.spark.sql.delta

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.delta.actions.DeletionVectorDescriptor

/** delta-spark's own `private[delta]` path and key functions, for tests that compare with them. */
object DeltaInternals {

  /** delta-spark's canonical form of a log path (the path part of its replay key). */
  def canonicalPath(path: String, hadoopConf: Configuration): String =
    new DeltaLog.CanonicalPathFunction(() => hadoopConf).apply(path)

  /** The file delta-spark reads for a log path of the table at `root`. */
  def absolutePath(root: Path, path: String): Path =
    util.DeltaFileOperations.absolutePath(root.toString, path)

  def dvUniqueId(
      storageType: String,
      pathOrInline: String,
      offset: Option[Int],
      size: Int,
      cardinality: Long
  ): String =
    DeletionVectorDescriptor(storageType, pathOrInline, offset, size, cardinality).uniqueId
}
