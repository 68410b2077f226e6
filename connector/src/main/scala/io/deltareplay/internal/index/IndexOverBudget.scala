package io.deltareplay.internal.index

/**
 * A build of a driver index stopped because the chunks it had received passed `budgetBytes`: the
 * index would be bigger than the session's cache keeps. Only background builds set a bound
 * ([[IndexBuilds]]); a read that needs the index builds it whole.
 */
private[deltareplay] final class IndexOverBudget(
    val table: String,
    val version: Long,
    val receivedBytes: Long,
    val budgetBytes: Long
) extends RuntimeException(
      s"The index of $table v$version passed ${receivedBytes >> 20} MB on the driver, over the " +
        s"cache budget of ${budgetBytes >> 20} MB: its build stopped"
    )
