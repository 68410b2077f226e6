package io.deltareplay.internal

/**
 * Which files a query may need: filters sorted as Spark's file sources sort them
 * ([[PushedFilters]]), partition pruning and statistics skipping as one predicate over index
 * entries ([[DataSkipping]], [[FileFilter]]) and its column-wise first pass ([[SkipVector]]). Pure
 * functions of the entry layout; uses nothing but `index`'s
 * [[io.deltareplay.internal.index.FileEntry]] and Spark's expressions.
 */
package object skipping
