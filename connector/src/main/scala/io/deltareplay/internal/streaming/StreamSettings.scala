package io.deltareplay.internal.streaming

import io.deltareplay.internal.planning.PlanningSettings
import org.apache.spark.storage.StorageLevel

/**
 * What the streaming room takes of a read's settings, resolved once at the load (by
 * [[io.deltareplay.internal.scan.ReadConf]]): the stream's own options, the planning settings its
 * initial snapshot is replayed and indexed by, the files per slice of that snapshot
 * (`snapshot.sliceFiles`), the storage level its snapshot index is kept at
 * (`snapshot.storageLevel`, else `index.storageLevel`) and whether its readers share one Hadoop
 * configuration.
 */
private[deltareplay] final case class StreamSettings(
    options: StreamOptions,
    planning: PlanningSettings,
    snapshotSliceFiles: Int,
    storageLevel: StorageLevel,
    shareHadoopConf: Boolean
)
