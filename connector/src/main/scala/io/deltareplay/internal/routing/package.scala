package io.deltareplay.internal

/**
 * The session extension's rules: plain `format("delta")` loads, SQL and catalog reads, streams and
 * write targets, each routed to this connector or left to delta-spark; the SQL functions it
 * registers. Uses: `scan` (the relation it builds), `log` (the snapshot), `delta` (the shape of
 * delta-spark's plans).
 */
package object routing
