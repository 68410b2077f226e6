package io.deltareplay.internal.streaming

import io.deltareplay.DeltaReplayException
import org.scalatest.funsuite.AnyFunSuite

/** The streaming read options, parsed as DeltaSource takes them; bad values name the option. */
class StreamOptionsSuite extends AnyFunSuite {
  import StreamOptions._

  private def bad(options: (String, String)*): DeltaReplayException.BadOption =
    intercept[DeltaReplayException.BadOption](StreamOptions(options.toMap))

  test("defaults: no limits, no starting point, nothing ignored") {
    assert(
      StreamOptions(Map.empty) ===
        StreamOptions(None, None, None, None, false, false, false)
    )
  }

  test("maxFilesPerTrigger: a positive whole number; keys in any case, values trimmed") {
    assert(StreamOptions(Map(MaxFilesPerTrigger -> "7")).maxFilesPerTrigger === Some(7))
    assert(StreamOptions(Map("MAXFILESPERTRIGGER" -> " 12 ")).maxFilesPerTrigger === Some(12))
    assert(
      StreamOptions(Map(MaxFilesPerTrigger -> Int.MaxValue.toString)).maxFilesPerTrigger ===
        Some(Int.MaxValue)
    )
    // zero, negative, not a number, a size, or past Int: an error naming the option and the value
    Seq("0", "-1", "many", "1.5", "10k", "", "3000000000").foreach { v =>
      val e = bad(MaxFilesPerTrigger -> v)
      assert(e.getMessage.contains(MaxFilesPerTrigger), e.getMessage)
      assert(e.getMessage.contains(s"'${v.trim}'"), e.getMessage)
    }
  }

  test("maxBytesPerTrigger: bytes or a size with a unit (k, m, g, t, with or without b)") {
    def bytes(v: String) = StreamOptions(Map(MaxBytesPerTrigger -> v)).maxBytesPerTrigger
    assert(bytes("1") === Some(1L))
    assert(bytes("1048576") === Some(1048576L))
    assert(bytes("10k") === Some(10240L) && bytes("10kb") === Some(10240L))
    assert(bytes("64M") === Some(64L << 20) && bytes("64mb") === Some(64L << 20))
    assert(bytes("1g") === Some(1L << 30) && bytes("2t") === Some(2L << 40))
    assert(StreamOptions(Map("maxbytespertrigger" -> "3k")).maxBytesPerTrigger === Some(3072L))
    Seq("0", "0k", "-5", "k", "10x", "1.5g", "ten", "9999999999t", "99999999999999999999").foreach {
      v =>
        val e = bad(MaxBytesPerTrigger -> v)
        assert(e.getMessage.contains(MaxBytesPerTrigger) && e.getMessage.contains(v), e.getMessage)
        assert(e.getMessage.contains("a positive number"), e.getMessage)
    }
  }

  test("startingVersion: a version or 'latest'; startingTimestamp: a timestamp or a date") {
    assert(StreamOptions(Map(StartingVersion -> "0")).startingVersion === Some("0"))
    assert(StreamOptions(Map(StartingVersion -> "LATEST")).startingVersion === Some("LATEST"))
    assert(StreamOptions(Map("startingversion" -> " 12 ")).startingVersion === Some("12"))
    Seq("-1", "1.0", "v3", "earliest", "", "99999999999999999999").foreach { v =>
      val e = bad(StartingVersion -> v)
      assert(e.getMessage.contains(StartingVersion) && e.getMessage.contains(s"'$v'"), e.getMessage)
    }
    Seq("2024-01-02", "2024-01-02 03:04:05", "2024-01-02T03:04:05.123456Z").foreach { ts =>
      assert(StreamOptions(Map(StartingTimestamp -> ts)).startingTimestamp === Some(ts))
    }
    Seq("yesterday", "2024-13-45", "2024-01-02 25:00:00").foreach { ts =>
      val e = bad(StartingTimestamp -> ts)
      assert(
        e.getMessage.contains(StartingTimestamp) && e.getMessage.contains(s"'$ts'"),
        e.getMessage
      )
    }
    val both = bad(StartingVersion -> "1", StartingTimestamp -> "2024-01-02")
    assert(both.getMessage.contains("not both startingVersion and startingTimestamp"))
  }

  test("startingTimestamp is read in the session time zone unless it names one") {
    val utc = timestampMicros("2024-01-02 00:00:00", "UTC").get
    assert(utc === 1704153600000000L)
    assert(
      timestampMicros("2024-01-02 00:00:00", "America/New_York").get === utc + 5L * 3600000000L
    )
    assert(timestampMicros("2024-01-02T00:00:00Z", "America/New_York").get === utc)
    assert(timestampMicros("2024-01-02", "UTC").get === utc)
    assert(timestampMicros("not a time", "UTC") === None)
  }

  test("ignoreDeletes, ignoreChanges, skipChangeCommits: true or false, any case") {
    val o = StreamOptions(
      Map(IgnoreDeletes -> "TRUE", "ignorechanges" -> "false", SkipChangeCommits -> " True ")
    )
    assert(o.ignoreDeletes && !o.ignoreChanges && o.skipChangeCommits)
    Seq(IgnoreDeletes, IgnoreChanges, SkipChangeCommits).foreach { key =>
      val e = bad(key -> "yes")
      assert(e.getMessage.contains(key) && e.getMessage.contains("'yes'"), e.getMessage)
      assert(e.getMessage.contains("true or false"), e.getMessage)
    }
  }

  test("the streaming options the registry knows are the ones parsed, lower-cased") {
    val O = io.deltareplay.DeltaReplayOptions
    assert(
      O.KnownStreamOptions -- O.KnownReadOptions === Set(
        "maxfilespertrigger",
        "maxbytespertrigger",
        "startingversion",
        "startingtimestamp",
        "ignoredeletes",
        "ignorechanges",
        "skipchangecommits"
      )
    )
  }
}
