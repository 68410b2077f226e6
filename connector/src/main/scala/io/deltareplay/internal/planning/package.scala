package io.deltareplay.internal

/**
 * How one read is served: every decision about its index ([[ReadPolicy]], by the planning settings
 * the load resolved, [[PlanningSettings]]), planning splits on the driver ([[ScanPlanner]]) or on
 * the executors ([[ExecutorPlanning]], [[Binner]], [[Manifests]]) and aggregates from statistics
 * ([[MetadataAggregates]]; the counts computed in replay tasks it keeps, [[KeptCounts]]). The input
 * partitions it makes ([[DeltaInputPartition]]) are its own; `read` reads them. Uses: `session`,
 * `log`, `skipping`, `index`, `replay`.
 */
package object planning
