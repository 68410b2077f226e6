package io.deltareplay.internal.log

import java.io.EOFException
import java.nio.ByteBuffer

import org.apache.parquet.bytes.ByteBufferAllocator
import org.apache.parquet.io.{InputFile, ParquetFileRange, SeekableInputStream}

/**
 * A Parquet input file whose streams serve small reads from a buffer filled `bufferSize` bytes at a
 * time. parquet-mr decodes a column's offset index with Thrift straight off the stream, a byte per
 * read call, and S3A's analytics stream answers each such call through its whole stack: on a new
 * executor that was most of the second pass of [[CheckpointSelect]] over a large checkpoint. One
 * buffered read serves the offset indexes of many columns, which a writer puts side by side. Reads
 * of at least `bufferSize` bytes (pages, the footer of a big file) and vectored reads go to the
 * file's own stream as they are.
 */
private[deltareplay] final class BufferedInputFile(inner: InputFile, bufferSize: Int)
    extends InputFile {

  override def getLength: Long = inner.getLength

  override def newStream(): SeekableInputStream = new SeekableInputStream {
    private val in = inner.newStream()
    private val length = inner.getLength
    private val buffer = new Array[Byte](bufferSize)
    private var bufferStart = 0L // file position of buffer(0)
    private var bufferEnd = 0L // one past the last buffered position
    private var pos = 0L

    override def getPos: Long = pos

    override def seek(newPos: Long): Unit = pos = newPos

    private def inBuffer: Boolean = pos >= bufferStart && pos < bufferEnd

    /** Makes the buffer hold `pos` if the file has a byte there; false at the end of the file. */
    private def buffered(): Boolean =
      inBuffer || pos < length && {
        val n = math.min(bufferSize.toLong, length - pos).toInt
        in.seek(pos)
        in.readFully(buffer, 0, n)
        bufferStart = pos
        bufferEnd = pos + n
        true
      }

    override def read(): Int =
      if (!buffered()) -1
      else {
        val b = buffer((pos - bufferStart).toInt) & 0xff
        pos += 1
        b
      }

    override def read(b: Array[Byte], off: Int, len: Int): Int =
      if (len == 0) 0
      else if (len >= bufferSize && !inBuffer) {
        in.seek(pos)
        val n = in.read(b, off, len)
        if (n > 0) pos += n
        n
      } else if (!buffered()) -1
      else {
        val n = math.min(len.toLong, bufferEnd - pos).toInt
        System.arraycopy(buffer, (pos - bufferStart).toInt, b, off, n)
        pos += n
        n
      }

    override def readFully(b: Array[Byte]): Unit = readFully(b, 0, b.length)

    override def readFully(b: Array[Byte], off: Int, len: Int): Unit = {
      var done = 0
      while (done < len) {
        val n = read(b, off + done, len - done)
        if (n < 0) throw new EOFException(s"end of file after $done of $len bytes at $pos")
        done += n
      }
    }

    override def read(buf: ByteBuffer): Int = {
      val len = buf.remaining()
      if (len == 0) 0
      else if (buf.hasArray) {
        val n = read(buf.array(), buf.arrayOffset() + buf.position(), len)
        if (n > 0) buf.position(buf.position() + n)
        n
      } else {
        val chunk = new Array[Byte](math.min(len, bufferSize))
        val n = read(chunk, 0, chunk.length)
        if (n > 0) buf.put(chunk, 0, n)
        n
      }
    }

    override def readFully(buf: ByteBuffer): Unit =
      while (buf.hasRemaining)
        if (read(buf) < 0) throw new EOFException(s"end of file at $pos")

    override def readVectored(
        ranges: java.util.List[ParquetFileRange],
        allocator: ByteBufferAllocator
    ): Unit = in.readVectored(ranges, allocator)

    override def readVectoredAvailable(allocator: ByteBufferAllocator): Boolean =
      in.readVectoredAvailable(allocator)

    override def close(): Unit = in.close()
  }
}
