package io.deltareplay.internal.skipping

/*
 * What the column-wise first pass ([[SkipVector]]) asks of a column vector beyond Spark's
 * `ColumnVector`: index columns that can answer in their own layout implement these.
 */

/**
 * A vector whose rows are null exactly where its null flags say ([[SkipVector]] reads them as bit
 * words instead of row by row).
 */
private[deltareplay] trait NullWords {

  /** Sets the bits of `words` of the rows that are null. */
  def orNulls(words: Array[Long]): Unit
}

/**
 * Whole numbers compared with a literal in one loop over the column's own layout ([[SkipVector]] on
 * a million entries: no call per row through `ColumnVector`).
 */
private[deltareplay] trait LongCompare extends NullWords {

  /**
   * Sets bit `i` of `words`, for rows `i < n`, where the sign of `compare(value(i), literal)` is
   * one of `signs` (bit 0 less, bit 1 equal, bit 2 greater) or the row is null.
   */
  def markCompared(literal: Long, signs: Int, words: Array[Long], n: Int): Unit
}
