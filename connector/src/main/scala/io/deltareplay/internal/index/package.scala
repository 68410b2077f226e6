package io.deltareplay.internal

/**
 * The snapshot index: the live files of one table version as entry rows
 * ([[io.deltareplay.internal.log.FileEntry]]), in two homes behind one trait ([[TableIndex]]:
 * [[DriverIndex]], compact columns on the driver; [[ExecutorIndex]], a persisted dataset on the
 * executors), each implementing planning, aggregates, roll-forward, stream order and release; the
 * per-session cache that rolls indexes forward ([[IndexCache]]), narrowed indexes of filtered first
 * reads and their background builds. Uses: `session`, `log`, `skipping` (what a home keeps of a
 * filter); and, against the layers (the edge python/tests/test_rooms.py still lists), `planning`
 * (the planning code each home runs, the read's policy).
 */
package object index
