package io.deltareplay.internal.read

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.mapred.JobConf
import org.apache.spark.util.SerializableConfiguration

/**
 * The Hadoop configuration of a scan's file readers, shared by all of them as it is. Spark's
 * Parquet reader makes a task attempt context for each file it opens, and Hadoop's context copies
 * every property of any configuration that is not a `JobConf` (a large share of a read of many
 * small files' CPU). This one is a `JobConf`, so the contexts use it as it is.
 *
 * Shared means no reader may change it for itself. Spark's reader writes one thing to its context's
 * configuration, the Parquet filter it pushes for the file at hand, so only scans that push no
 * Parquet filter share it (the others keep Spark's copy per file). A write that would change a
 * value afterwards throws, naming the key, rather than let one file's setting reach another's
 * reader; a write of the value already there (a file system setting itself up the same way for
 * every file) goes through.
 */
private[deltareplay] final class SharedJobConf(from: Configuration) extends JobConf(from) {
  // set after JobConf's constructor, which may write while copying
  @volatile private var shared = false
  shared = true

  override def set(name: String, value: String, source: String): Unit = {
    if (shared && get(name) != value) refuse(s"changed '$name' in")
    super.set(name, value, source)
  }

  override def unset(name: String): Unit = {
    if (shared && get(name) != null) refuse(s"removed '$name' from")
    super.unset(name)
  }

  private def refuse(what: String): Nothing =
    throw new IllegalStateException(
      s"a file reader $what the Hadoop configuration its scan's readers share; set " +
        s"${io.deltareplay.DeltaReplayOptions.ShareHadoopConfKey}=false to give each file its own copy"
    )
}

private[deltareplay] object SharedJobConf {

  /**
   * `c`'s configuration as a [[SharedJobConf]], made once for each JVM that holds `c`: a broadcast
   * value is deserialized as a plain `Configuration`, and replaced here. Two threads may both make
   * one; either serves.
   */
  def share(c: SerializableConfiguration): Unit = c.value match {
    case _: SharedJobConf =>
    case other => c.value = new SharedJobConf(other)
  }
}
