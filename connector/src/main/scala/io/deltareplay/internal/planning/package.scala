package io.deltareplay.internal

/**
 * How one read is served: the settings resolved for it ([[ReadConf]], which hands each room below
 * its own), every decision about its index ([[ReadPolicy]]), planning splits on the driver
 * ([[ScanPlanner]]) or on the executors ([[ExecutorPlanning]], [[Binner]], [[Manifests]]),
 * aggregates from statistics ([[MetadataAggregates]]) and a stream's options ([[StreamOptions]]).
 * The input partitions it makes ([[DeltaInputPartition]]) are its own; `read` reads them. Uses:
 * `log`, `skipping`, `index`, `replay`.
 */
package object planning
