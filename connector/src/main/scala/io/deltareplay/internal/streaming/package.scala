package io.deltareplay.internal

/**
 * The micro-batch stream: its DSv2 surface ([[DeltaReplayMicroBatchStream]]), what it reads next
 * ([[StreamPlanner]]), the initial snapshot in DeltaSource's order off the snapshot index
 * ([[StreamSnapshot]]), offsets compatible with DeltaSource ([[StreamOffset]]) and its options.
 * Uses: `index`, `replay`, `planning`, `read`, `log`, `delta` (DeltaSource's rules and errors).
 */
package object streaming
