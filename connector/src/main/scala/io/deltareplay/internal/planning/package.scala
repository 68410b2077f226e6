package io.deltareplay.internal

/**
 * How one read is served: the settings resolved for it ([[ReadConf]]), every decision about its
 * index ([[ReadPolicy]]), planning splits on the driver ([[ScanPlanner]]) or on the executors
 * ([[ExecutorPlanning]], [[Binner]], [[Manifests]]) and aggregates from statistics
 * ([[MetadataAggregates]]). Uses: `index`, `skipping`, `log`, `read` (the input partitions it
 * makes).
 */
package object planning
