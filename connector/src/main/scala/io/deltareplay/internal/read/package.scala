package io.deltareplay.internal

/**
 * Reading data files: the reader factory over Spark's Parquet reader with deletion vectors applied
 * as a selection of each batch ([[DeltaReaderFactory]], [[SelectedColumnVector]]), `_metadata`
 * ([[FileMetadata]]). Small and serializable: it does no planning. Uses: `delta` (DV loading),
 * `log` (table meta, DV descriptors), `planning` (the input partitions it reads, and the manifests
 * read on the executors).
 */
package object read
