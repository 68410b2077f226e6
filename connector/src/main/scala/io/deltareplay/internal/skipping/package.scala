package io.deltareplay.internal

/**
 * Which files a query may need: filters sorted as Spark's file sources sort them
 * ([[PushedFilters]]), partition pruning and statistics skipping as one predicate over index
 * entries ([[DataSkipping]], [[FileFilter]]), its relaxed form pushed into log reads ([[Relax]])
 * and its column-wise first pass ([[SkipVector]], over columns that answer [[NullWords]] and
 * [[LongCompare]]). Pure functions of the entry layout and Spark's expressions. Uses: `log` (the
 * entry layout, [[io.deltareplay.internal.log.FileEntry]]).
 */
package object skipping
