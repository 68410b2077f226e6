package io.deltareplay.internal

import java.util.concurrent.{CompletableFuture, ConcurrentHashMap, ExecutionException}

import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.SparkSession

/**
 * The bytes of recently read commit files, kept per SparkSession, so that one query reads each new
 * commit once.
 *
 * A re-plan after a commit reads that commit twice otherwise: the snapshot load reads it for a
 * protocol or metaData action ([[MetaCache]]), and the index roll-forward reads it again for its
 * adds and removes ([[IndexCache]]); on an object store that is a second GET of the same object.
 * Commit files are written once and never changed, so a file is known by its path, length,
 * modification time and, where the store gives one, its ETag (the identity [[MetaCache]] uses); a
 * table deleted and written again at the same path writes new files, which miss.
 *
 * Only small files are kept ([[MaxFileBytes]]), within [[MaxBytes]] per session, least recently
 * read out first. `spark.deltareplay.replay.stateCache.enabled=false` turns it off with the other
 * caches.
 */
private[deltareplay] object CommitTexts {

  /** Files larger than this are read every time (a big commit is replayed, not rolled forward). */
  val MaxFileBytes: Long = 4L << 20

  /** Bytes kept per session. */
  val MaxBytes: Long = 16L << 20

  private final class Texts {
    val kept = new BoundedLru[MetaCache.FileId, Array[Byte]](Int.MaxValue, MaxBytes, _.length)

    /** Reads under way: a second reader of the same file waits for the first one's bytes. */
    val reading = new ConcurrentHashMap[MetaCache.FileId, CompletableFuture[Array[Byte]]]()
  }

  private val textsOf = new PerSession(() => new Texts)

  /** Forgets this session's commit texts. */
  def clear(spark: SparkSession): Unit = textsOf.remove(spark)

  /**
   * The bytes of `file`: kept ones, or `read()` (kept when small enough and caching is on). While
   * one thread reads a file (the load's read-ahead, [[ReadAhead]]), another that asks for it (the
   * tail's prefetch) waits for those bytes instead of reading it again (and reads it itself if that
   * read fails).
   */
  def bytes(spark: SparkSession, file: FileStatus)(read: => Array[Byte]): Array[Byte] = {
    if (file.getLen > MaxFileBytes || !ReadConf(spark, Map.empty).stateCache) return read
    val texts = textsOf(spark)
    val id = MetaCache.FileId(file)
    texts.kept.get(id).getOrElse {
      val mine = new CompletableFuture[Array[Byte]]()
      Option(texts.reading.putIfAbsent(id, mine)) match {
        case Some(theirs) =>
          // their failure (or their thread cancelled mid-read) is not this reader's: read it
          try theirs.get()
          catch { case _: ExecutionException => read }
        case None =>
          try {
            val fresh = texts.kept.get(id).getOrElse {
              val bytes = read
              // a file shorter or longer than it was listed is not the listed file: not kept
              if (bytes.length == file.getLen) texts.kept.put(id, bytes)
              bytes
            }
            mine.complete(fresh)
            fresh
          } catch {
            case e: Throwable =>
              mine.completeExceptionally(e)
              throw e
          } finally texts.reading.remove(id, mine)
      }
    }
  }
}
