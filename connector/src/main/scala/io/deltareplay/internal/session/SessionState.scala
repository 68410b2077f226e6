package io.deltareplay.internal.session

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.sql.SparkSession

/**
 * Everything this connector keeps for one SparkSession, in one object: the snapshot indexes and
 * narrowed indexes, the counts computed in replay tasks, protocol and metadata, commit texts,
 * checkpoint footers, the commit tails parsed ahead, the background index builds and the checkpoint
 * each table's newest load listed from. Each room declares its part ([[SessionState.Part]]: how it
 * is made, how it is released, how many entries it holds); the state makes a part on first use and
 * drops it with the session (weakly held). [[SessionState.clear]] releases every part at once: the
 * next read of any table is a cold one (tests start each suite so).
 *
 * What is kept outside it belongs to the JVM, not to a session, and stays out on purpose: the
 * listener that makes background builds yield to foreground queries (`IndexBuilds`: one per
 * SparkContext, whose queries come from every session of the application); the scratch directories
 * of executor planning (`Scratch`: one per application, deleted at JVM exit); the option names
 * already warned about (`RouteDeltaReads`: one warning per process, as Spark's own for deprecated
 * settings); the LIST requests sent (`S3Listing.requests`: a process counter beside S3A's own
 * statistics, read as differences); and each decoding thread's last statistics document
 * (`StatsFromJson`: a per-thread cache, mostly on executors). Clearing a session leaves them.
 */
private[deltareplay] final class SessionState private () {
  private val parts = new ConcurrentHashMap[SessionState.Part[_], AnyRef]()

  /** This session's value of `part`, made now if it has none. */
  def apply[T <: AnyRef](part: SessionState.Part[T]): T =
    parts.computeIfAbsent(part, _ => part.make()).asInstanceOf[T]

  /** Releases and forgets every part. */
  def clear(): Unit = {
    val held = new java.util.ArrayList[(SessionState.Part[_], AnyRef)]()
    parts.forEach((p, v) => held.add(p -> v))
    parts.clear()
    held.forEach { case (p, v) => p.releaseValue(v) }
  }

  /** Entries held by each part made so far, by the part's name. */
  def entries: Map[String, Long] = {
    val out = Map.newBuilder[String, Long]
    parts.forEach((p, v) => out += p.name -> p.sizeOf(v))
    out.result()
  }
}

private[deltareplay] object SessionState {
  private val states = new java.util.WeakHashMap[SparkSession, SessionState]()

  /** The state of `spark`, made on first use. */
  def of(spark: SparkSession): SessionState =
    states.synchronized(states.computeIfAbsent(spark, _ => new SessionState))

  /** Releases everything `spark`'s state holds (cached indexes unpersisted, builds forgotten). */
  def clear(spark: SparkSession): Unit = of(spark).clear()

  /**
   * One room's share of the state: `make` builds it, `release` frees what it holds outside the
   * driver heap when the state is cleared, `size` counts its entries (for tests and inspection).
   */
  final class Part[T <: AnyRef](
      val name: String,
      val make: () => T,
      release: T => Unit = (_: T) => (),
      size: T => Long = (_: T) => 0L
  ) {

    /** `spark`'s value of this part. */
    def apply(spark: SparkSession): T = of(spark)(this)

    private[SessionState] def releaseValue(v: AnyRef): Unit = release(v.asInstanceOf[T])
    private[SessionState] def sizeOf(v: AnyRef): Long = size(v.asInstanceOf[T])
  }
}
