package io.deltareplay.internal.log

/**
 * What the log room takes of a read's settings, resolved once at the load (by
 * [[io.deltareplay.internal.scan.ReadConf]]): whether the per-session caches of protocol and
 * metadata, commit texts and checkpoint footers are used (`stateCache`), whether a version's
 * checksum file may stand in for the log's protocol and metadata (`useChecksum`), the tail up to
 * which the commits after a checkpoint are reconciled on the driver (`tailFastPathMaxBytes`, where
 * the checksum is trusted), and the session time zone at the load (`timeZone`), in which the read
 * takes a `timestampAsOf` and the partition values and bounds of its entries that name no offset
 * ([[FileEntry]]).
 */
private[deltareplay] final case class LogSettings(
    stateCache: Boolean,
    useChecksum: Boolean,
    tailFastPathMaxBytes: Long,
    timeZone: String
)
