package io.deltareplay.internal

/**
 * The only door to delta-spark's internal API: column-mapping schemas, protocol checks on its
 * action classes, deletion-vector loading, timestamp-to-version resolution, DeltaSource's schema
 * and change-commit rules and errors, the shape of delta-spark's analysed read. An upgrade of
 * delta-spark touches this room only. Uses: nothing of the other rooms (delta-spark and Spark);
 * what it reads of a table version and a deletion vector is its own [[TableActions]] and
 * [[DvFields]], which the log's values implement.
 */
package object delta
