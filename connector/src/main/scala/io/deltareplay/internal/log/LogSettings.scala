package io.deltareplay.internal.log

/**
 * What the log room takes of a read's settings, resolved once at the load (by
 * [[io.deltareplay.internal.scan.ReadConf]]): whether the per-session caches of protocol and
 * metadata, commit texts and checkpoint footers are used (`stateCache`), whether a version's
 * checksum file may stand in for the log's protocol and metadata (`useChecksum`), the tail up to
 * which the commits after a checkpoint are reconciled on the driver (`tailFastPathMaxBytes`, where
 * the checksum is trusted), and Spark's own settings taken at the same load ([[SparkSettings]]: the
 * session time zone, in which the read takes a `timestampAsOf` and the partition values and bounds
 * of its entries that name no offset, split sizing, the Parquet reader's conf).
 */
private[deltareplay] final case class LogSettings(
    stateCache: Boolean,
    useChecksum: Boolean,
    tailFastPathMaxBytes: Long,
    sparkSettings: SparkSettings
) {

  /** The session time zone at the load. */
  def timeZone: String = sparkSettings.timeZone
}
