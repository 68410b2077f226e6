package io.deltareplay.internal

/**
 * The snapshot index: the live files of one table version as [[FileEntry]] rows, in two homes
 * behind one sealed trait ([[TableIndex]]: [[DriverIndex]], compact columns on the driver;
 * [[ExecutorIndex]], a persisted dataset on the executors), each implementing planning, aggregates,
 * roll-forward, stream order and release; the per-session cache that rolls indexes forward
 * ([[IndexCache]]), narrowed indexes of filtered first reads and their background builds. Uses:
 * `log`, `replay` (to build and roll forward), `skipping` and `planning` (what a home does with a
 * filter).
 */
package object index
