package io.deltareplay.internal

/**
 * The snapshot index: the live files of one table version as entry rows
 * ([[io.deltareplay.internal.log.FileEntry]]), in two homes behind one trait ([[TableIndex]]:
 * [[DriverIndex]], compact columns on the driver; [[ExecutorIndex]], a persisted dataset on the
 * executors), each implementing roll-forward, stream order and release, and handing itself to the
 * caller's function for its home ([[TableIndex.byHome]]: how `planning` plans and aggregates where
 * the index is); the per-session cache that rolls indexes forward ([[IndexCache]]), narrowed
 * indexes of filtered first reads and their background builds, both asked for by a read through
 * [[IndexRequest]]. Uses: `session`, `log`, `skipping` (what a home keeps of a filter).
 */
package object index
