package io.deltareplay.internal

/**
 * Reading data files: the reader factory over Spark's Parquet reader with deletion vectors applied
 * as a selection of each batch ([[DeltaReaderFactory]], [[SelectedColumnVector]]), input
 * partitions, `_metadata` ([[FileMetadata]]). Small and serializable: it does no planning. Uses:
 * `log` (table meta, DV descriptors), `delta` (DV loading).
 */
package object read
