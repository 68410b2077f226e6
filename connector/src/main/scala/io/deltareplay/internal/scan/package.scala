package io.deltareplay.internal

/**
 * The load and the DataSourceV2 batch surface: a read's settings, resolved once where it is loaded
 * ([[ReadConf]], which hands each room below its own typed part), the table ([[DeltaReplayTable]])
 * and its file index for Spark's file-based commands ([[DeltaReplayFileIndex]]), scan builder, scan
 * and batch, the scan of aggregates answered from statistics ([[StatsAggregateScan]]), and the
 * figures a scan reports ([[ScanMetrics]]). The scan plans lazily through `planning` and hands
 * `read` its splits. Uses: `delta`, `log`, `skipping`, `index`, `replay` (the replay settings it
 * resolves), `planning`, `read`, `streaming` (the micro-batch stream a scan hands Spark).
 */
package object scan
