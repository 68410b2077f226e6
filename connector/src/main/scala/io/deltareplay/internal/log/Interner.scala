package io.deltareplay.internal.log

/** Shares identical partition-value maps between files (most files share a few). */
private[deltareplay] final class Interner {
  private val seen = new java.util.HashMap[Map[String, String], Map[String, String]]()
  def apply(m: Map[String, String]): Map[String, String] =
    if (m.isEmpty) Map.empty
    else {
      val prior = seen.putIfAbsent(m, m)
      if (prior == null) m else prior
    }
}
