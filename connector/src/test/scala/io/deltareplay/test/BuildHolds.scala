package io.deltareplay.test

import java.util.concurrent.{CountDownLatch, TimeUnit}

import io.deltareplay.internal.index.IndexBuilds

/** Background index builds held by a test, through the builds' observer. */
object BuildHolds {

  /** An observer that holds each build before it starts until `hold` is counted down. */
  def beforeStart(hold: CountDownLatch): IndexBuilds.Observer = new IndexBuilds.Observer {
    override def beforeStart(): Unit = hold.await(10, TimeUnit.MINUTES)
  }

  /**
   * An observer that holds each attempt of a build at its first yield point (inside its work on the
   * driver): counts `arrived` down, then waits for `release`.
   */
  def atFirstYieldPoint(arrived: CountDownLatch, release: CountDownLatch): IndexBuilds.Observer =
    new IndexBuilds.Observer {
      override def atYieldPoint(): Unit = if (arrived.getCount > 0) {
        arrived.countDown()
        release.await(10, TimeUnit.MINUTES)
      }
    }
}
