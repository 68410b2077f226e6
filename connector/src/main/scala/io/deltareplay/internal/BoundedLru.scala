package io.deltareplay.internal

/**
 * A map that keeps at most `maxEntries` values and `maxBytes` of them (as `bytesOf` weighs each),
 * dropping the least recently used first: the storage of the small per-session caches
 * ([[CommitTexts]], [[NarrowedIndexes]]). Thread-safe.
 */
private[internal] final class BoundedLru[K, V](
    maxEntries: Int,
    maxBytes: Long,
    bytesOf: V => Long
) {
  private val kept = new java.util.LinkedHashMap[K, V](16, 0.75f, true)
  private var bytes = 0L

  def get(key: K): Option[V] = synchronized(Option(kept.get(key)))

  def put(key: K, value: V): Unit = synchronized {
    Option(kept.put(key, value)).foreach(old => bytes -= bytesOf(old))
    bytes += bytesOf(value)
    val oldest = kept.values().iterator()
    while ((bytes > maxBytes || kept.size > maxEntries) && oldest.hasNext) {
      bytes -= bytesOf(oldest.next())
      oldest.remove()
    }
  }

  /**
   * The value kept for `key`, or `read` (not under the lock: two callers may both read), kept when
   * `keep` accepts it.
   */
  def getOrRead(key: K, keep: V => Boolean = (_: V) => true)(read: => V): V =
    get(key).getOrElse {
      val fresh = read
      if (keep(fresh)) put(key, fresh)
      fresh
    }

  /** Drops every value whose key `drop` accepts. */
  def removeKeys(drop: K => Boolean): Unit = synchronized {
    val it = kept.entrySet().iterator()
    while (it.hasNext) {
      val e = it.next()
      if (drop(e.getKey)) {
        bytes -= bytesOf(e.getValue)
        it.remove()
      }
    }
  }
}
