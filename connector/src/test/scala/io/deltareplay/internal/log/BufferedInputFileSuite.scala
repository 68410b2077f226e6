package io.deltareplay.internal.log

import java.nio.ByteBuffer
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[BufferedInputFile]] returns the file's bytes at every position for every kind of read (single
 * bytes across buffer ends, arrays and byte buffers shorter and longer than the buffer, seeks back
 * and forth), and the end of the file as the stream contract says.
 */
class BufferedInputFileSuite extends AnyFunSuite {

  test("reads of every kind and size give the file's bytes; the end of the file is reported") {
    val bytes = Array.tabulate[Byte](10000)(i => (i * 31 + i / 7).toByte)
    val file = Files.createTempFile("buffered", ".bin")
    try {
      Files.write(file, bytes)
      val input = HadoopInputFile.fromPath(new Path(file.toUri), new Configuration())
      val buffered = new BufferedInputFile(input, 1000)
      assert(buffered.getLength === bytes.length)
      val in = buffered.newStream()
      val random = new scala.util.Random(7)
      for (_ <- 1 to 400) {
        val at = random.nextInt(bytes.length)
        in.seek(at)
        random.nextInt(4) match {
          case 0 => // single bytes, across the buffer's end
            (at until math.min(at + 30, bytes.length)).foreach(i =>
              assert(in.read() === (bytes(i) & 0xff))
            )
          case 1 => // arrays shorter and longer than the buffer
            val n = math.min(1 + random.nextInt(2500), bytes.length - at)
            val out = new Array[Byte](n)
            in.readFully(out)
            assert(out.toSeq === bytes.slice(at, at + n).toSeq)
          case 2 =>
            val n = math.min(1 + random.nextInt(2500), bytes.length - at)
            val out = ByteBuffer.allocate(n)
            in.readFully(out)
            assert(out.array().toSeq === bytes.slice(at, at + n).toSeq)
          case _ =>
            val n = math.min(1 + random.nextInt(2500), bytes.length - at)
            val out = ByteBuffer.allocateDirect(n)
            in.readFully(out)
            out.flip()
            val copy = new Array[Byte](n)
            out.get(copy)
            assert(copy.toSeq === bytes.slice(at, at + n).toSeq)
        }
        assert(in.getPos >= at)
      }
      in.seek(bytes.length - 2)
      assert(in.read() === (bytes(bytes.length - 2) & 0xff))
      assert(in.read() === (bytes.last & 0xff))
      assert(in.read() === -1)
      assert(in.read(new Array[Byte](5), 0, 5) === -1)
      in.seek(bytes.length - 3)
      intercept[java.io.EOFException](in.readFully(new Array[Byte](5)))
      in.close()
    } finally Files.delete(file)
  }
}
