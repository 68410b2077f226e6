package io.deltareplay

import org.scalatest.funsuite.AnyFunSuite

/** [[CommandMatrix]] on the `local[2]` session: every case, every run. */
class CommandMatrixSuite extends AnyFunSuite with CommandMatrixCases {
  registerCases(cases)
}
