package io.deltareplay.internal

/**
 * The micro-batch stream: its DSv2 surface ([[DeltaReplayMicroBatchStream]]), what it reads next
 * ([[StreamPlanner]]), the initial snapshot in DeltaSource's order off the snapshot index
 * ([[StreamSnapshot]]), offsets compatible with DeltaSource ([[StreamOffset]]) its options
 * ([[StreamOptions]]) and the settings it runs by ([[StreamSettings]]). Uses: `delta`
 * (DeltaSource's rules and errors), `log`, `index`, `replay`, `planning`, `read`.
 */
package object streaming
