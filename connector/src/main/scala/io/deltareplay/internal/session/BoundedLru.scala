package io.deltareplay.internal.session

import java.util.concurrent.{CompletableFuture, ConcurrentHashMap, ExecutionException}

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

  /** Reads under way ([[getOrRead]]): a second reader of a key waits for the first one's value. */
  private val reading = new ConcurrentHashMap[K, CompletableFuture[V]]()

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
   * The value kept for `key`, or `read` (not under the lock), kept when `keep` accepts it. While
   * one caller reads a key (a commit fetched ahead by [[ReadAhead]]), another that asks for it (the
   * tail's prefetch) waits for that value instead of reading it again, and reads it itself if that
   * read fails (another caller's failure, or its thread cancelled mid-read, is not this one's).
   */
  def getOrRead(key: K, keep: V => Boolean = (_: V) => true)(read: => V): V =
    get(key).getOrElse {
      val mine = new CompletableFuture[V]()
      Option(reading.putIfAbsent(key, mine)) match {
        case Some(theirs) =>
          try theirs.get()
          catch { case _: ExecutionException => read }
        case None =>
          try {
            val value = get(key).getOrElse {
              val fresh = read
              if (keep(fresh)) put(key, fresh)
              fresh
            }
            mine.complete(value)
            value
          } catch {
            case e: Throwable =>
              mine.completeExceptionally(e)
              throw e
          } finally reading.remove(key, mine)
      }
    }

  /** Entries kept. */
  def size: Int = synchronized(kept.size)

  /** The entries kept now, least recently used first. */
  def entries: Seq[(K, V)] = synchronized {
    val out = Seq.newBuilder[(K, V)]
    kept.forEach((k, v) => out += (k -> v))
    out.result()
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
