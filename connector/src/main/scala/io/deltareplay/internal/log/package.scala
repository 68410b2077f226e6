package io.deltareplay.internal

/**
 * The transaction log: listing `_delta_log` (local and S3), log segments (checkpoint + commits),
 * reading commits and checkpoints and their layout ([[CheckpointLayout]]), protocol and metadata
 * ([[TableMeta]], the checksum file, [[MetaCache]]), the file-action rows and their codecs
 * ([[FileAction]], [[LiveFile]], [[DvDescriptor]]) and the typed entry of a live file
 * ([[FileEntry]]), the commits after a checkpoint reconciled ([[Reconciler]]), table paths and the
 * snapshot a read loads ([[TableSnapshot]]), read-ahead and the commit-text cache, store failures;
 * the settings it reads by ([[LogSettings]], with Spark's own taken at the load:
 * [[SparkSettings]]). Uses: `session` (per-session caches), `delta` (protocol checks,
 * column-mapping schemas).
 */
package object log
