package io.deltareplay.internal.index

import io.deltareplay.internal.log.DvDescriptor
import org.apache.spark.sql.catalyst.InternalRow

/**
 * What a split needs of a file kept by planning or a stream's snapshot, taken out of its index row
 * (which is a view over the index's columns).
 */
private[deltareplay] final case class KeptFile(
    path: String,
    size: Long,
    modificationTime: Long,
    dv: Option[DvDescriptor],
    partition: InternalRow,
    rows: Option[Long]
)
