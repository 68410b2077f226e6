package io.deltareplay.internal

/**
 * Log replay: the rules that turn a checkpoint and commits into live files, on the driver
 * ([[LocalReplay]]) and as a Spark job ([[DistributedReplay]]: map-side filter or keyed window),
 * the checkpoint read narrowed by a query's filters ([[CheckpointFilter]], [[CheckpointSelect]],
 * [[TailFilter]]), the first files of a stream from one pass ([[FirstFiles]]) and what a failed log
 * job tells the user ([[LogJobErrors]]). Uses: `log` (what to replay), `index` (the entries it
 * builds), `skipping` (the predicates it pushes into the checkpoint).
 */
package object replay
