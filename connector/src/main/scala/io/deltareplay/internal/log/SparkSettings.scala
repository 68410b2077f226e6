package io.deltareplay.internal.log

import io.deltareplay.internal.delta.DeltaAdapter
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.internal.SQLConf

/**
 * Spark's and delta-spark's own settings a read follows, taken from the session once at the load
 * (by [[io.deltareplay.internal.scan.ReadConf]]) with the connector's, so that one read sees one
 * value of each even when the session's conf changes while it runs, and no room below the load
 * reads the session's conf:
 *
 *   - the session time zone (`timeZone`), in which a `timestampAsOf` and the partition values and
 *     bounds that name no offset are taken ([[FileEntry]]);
 *   - how files are cut into splits, by Spark's rule for file scans (`maxPartitionBytes`,
 *     `openCostInBytes`, `minPartitions`: `spark.sql.files.minPartitionNum`, else the leaf-node
 *     parallelism of the session at the load), see [[maxSplitBytes]];
 *   - the width of the replay's dedup shuffle when the read sets none (`shufflePartitions`);
 *   - the size a batch scan reports to Spark, scaled as V1's relation scales its files' size
 *     (`fileCompressionFactor`, see `DeltaReplayScan.readSize`);
 *   - the columns delta-spark's relation shows (`dropNullColumns`: delta's
 *     `createDataFrame.dropNullColumns`; `caseSensitive`: Spark's analysis) and whether a query
 *     analysed at one version may read a newer one after checking its schema (`checkSchemaOnRead`:
 *     delta's `checkLatestSchemaOnRead`);
 *   - for Spark's Parquet reader and writer, which take a whole SQL conf: a copy of the session's
 *     (`sql`), never changed after the load (a reader that needs another value sets it on its own
 *     copy). It is not part of equality (a scan's equality, which Spark's exchange reuse asks,
 *     compares the typed settings, as it did before they were taken here).
 *
 * Not here: the JSON settings statistics are parsed by (`spark.sql.json.enablePartialResults`, the
 * corrupt-record column). Spark's JSON parser reads them from the conf of wherever it runs
 * (`SQLConf.get`, on the executors the conf of the job), and the filters that decide which fields a
 * parse keeps read them there too, so the two always agree.
 */
private[deltareplay] final case class SparkSettings(
    timeZone: String,
    maxPartitionBytes: Long,
    openCostInBytes: Long,
    minPartitions: Int,
    shufflePartitions: Int,
    caseSensitive: Boolean,
    dropNullColumns: Boolean,
    checkSchemaOnRead: Boolean,
    fileCompressionFactor: Double
)(val sql: SQLConf) {

  /**
   * The split size of a file scan over files of `totalBytes` (each counted with the open cost), by
   * Spark's rule (`FilePartition.maxSplitBytes`): the files spread over the minimum number of
   * partitions, between the open cost and `maxPartitionBytes`.
   */
  def maxSplitBytes(totalBytes: Long): Long =
    math.min(maxPartitionBytes, math.max(openCostInBytes, totalBytes / minPartitions))
}

private[deltareplay] object SparkSettings {

  /** The settings of `spark`'s session now: at the load only. */
  def of(spark: SparkSession): SparkSettings = {
    val conf = spark.sessionState.conf
    val delta = DeltaAdapter.readFlags(spark)
    SparkSettings(
      timeZone = conf.sessionLocalTimeZone,
      maxPartitionBytes = conf.filesMaxPartitionBytes,
      openCostInBytes = conf.filesOpenCostInBytes,
      minPartitions = math.max(
        1,
        conf.filesMinPartitionNum.getOrElse(SparkBridge.leafNodeDefaultParallelism(spark))
      ),
      shufflePartitions = conf.numShufflePartitions,
      caseSensitive = conf.caseSensitiveAnalysis,
      dropNullColumns = delta.dropNullColumns,
      checkSchemaOnRead = delta.checkSchemaOnRead,
      fileCompressionFactor = conf.fileCompressionFactor
    )(conf.clone())
  }
}
