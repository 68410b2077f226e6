package io.deltareplay.internal

/**
 * The DataSourceV2 batch surface: the table ([[DeltaReplayTable]]), scan builder, scan and batch,
 * and the figures a scan reports ([[ScanMetrics]]). The scan plans lazily through `planning` and
 * hands `read` its splits. Uses: `planning`, `read`, `skipping`, `log`.
 */
package object scan
