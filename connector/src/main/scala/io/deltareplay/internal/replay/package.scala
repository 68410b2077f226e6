package io.deltareplay.internal

/**
 * Log replay: the rules that turn a checkpoint and commits into live files, on the driver
 * ([[LocalReplay]]) and as a Spark job ([[DistributedReplay]]: map-side filter or keyed window),
 * the checkpoint read narrowed by a query's filters ([[CheckpointFilter]], [[CheckpointSelect]],
 * [[TailFilter]]), the first files of a stream from one pass ([[DistributedReplay.firstFiles]]),
 * the tail parsed ahead of need ([[TailPrefetch]]) and what a failed log job tells the user
 * ([[LogJobErrors]]); the settings it runs by ([[ReplaySettings]]). Uses: `session`, `log` (what to
 * replay), `skipping` (the predicates it pushes into the checkpoint), `index` (the entries and
 * indexes it builds).
 */
package object replay
