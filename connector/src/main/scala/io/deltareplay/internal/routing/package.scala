package io.deltareplay.internal

/**
 * The session extension's rules: plain `format("delta")` loads, SQL and catalog reads, streams and
 * write targets, each routed to this connector or left to delta-spark; the SQL functions it
 * registers. Uses: `delta` (the shape of delta-spark's plans), `log` (the snapshot), `replay` (the
 * tail parsed ahead of a routed stream), `read`, `scan` (the relation it builds, the read's
 * settings). Its own session switches: [[RoutingSwitches]].
 */
package object routing
