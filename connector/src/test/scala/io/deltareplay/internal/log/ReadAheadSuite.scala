package io.deltareplay.internal.log

import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

/** [[ReadAhead]]: reads overlap, results come in order, a failure comes at its turn. */
class ReadAheadSuite extends AnyFunSuite {

  test("results in the given order; reads overlap, at most MaxFiles at once") {
    val running = new AtomicInteger()
    val most = new AtomicInteger()
    val threads = new ConcurrentLinkedQueue[String]()
    val items = (1 to 30).toVector
    // the first two reads wait for each other: they overlap, or the test fails
    val overlap = new CountDownLatch(2)
    val out = ReadAhead(items, (_: Int) => 1L) { i =>
      val now = running.incrementAndGet()
      most.accumulateAndGet(now, math.max)
      threads.add(Thread.currentThread().getName)
      overlap.countDown()
      assert(overlap.await(30, TimeUnit.SECONDS), "reads did not overlap")
      if (i % 3 == 0) Thread.`yield`() // later items may finish first
      running.decrementAndGet()
      i * 10
    }.toVector
    assert(out == items.map(_ * 10))
    assert(most.get() > 1 && most.get() <= ReadAhead.MaxFiles, most.get())
    assert(threads.asScala.forall(_.startsWith("delta-replay log read")), threads)
  }

  test("listed bytes bound what is in flight: a file over the bound is read alone") {
    val running = new AtomicInteger()
    val most = new AtomicInteger()
    val big = ReadAhead.MaxBytes
    val out = ReadAhead(Vector(1, 2, 3), (_: Int) => big) { i =>
      most.accumulateAndGet(running.incrementAndGet(), math.max)
      Thread.sleep(20) // a window in which a second read, wrongly started, would be counted
      running.decrementAndGet()
      i
    }.toVector
    assert(out == Vector(1, 2, 3) && most.get() == 1, most.get())
  }

  test("a failed read fails at its turn with its own error; one not reached fails nothing") {
    val boom = new IllegalStateException("file 3 is corrupt")
    val read = (i: Int) => if (i == 3) throw boom else i
    val it = ReadAhead(1 to 5, (_: Int) => 1L)(read)
    assert(it.next() == 1 && it.next() == 2)
    assert(intercept[IllegalStateException](it.next()) eq boom)
    // a caller that stops before the failed item (protocol and metaData found) never sees it
    val stopped = ReadAhead(1 to 5, (_: Int) => 1L)(read)
    assert(stopped.take(2).toVector == Vector(1, 2))
  }

  test("one item is read on the calling thread; none gives an empty iterator") {
    val caller = Thread.currentThread().getName
    assert(
      ReadAhead(Seq(1), (_: Int) => 1L)(_ => Thread.currentThread().getName).toSeq == Seq(caller)
    )
    assert(ReadAhead(Seq.empty[Int], (_: Int) => 1L)(identity).isEmpty)
  }

  test("reads a stopped caller left running still finish (their bytes go to the cache)") {
    val done = new CountDownLatch(4)
    val it = ReadAhead(1 to 4, (_: Int) => 1L) { i => Thread.sleep(10); done.countDown(); i }
    assert(it.next() == 1)
    assert(done.await(10, TimeUnit.SECONDS))
  }
}
