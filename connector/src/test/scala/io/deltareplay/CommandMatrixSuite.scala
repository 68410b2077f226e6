package io.deltareplay

import org.scalatest.funsuite.AnyFunSuite

/** [[CommandMatrix]] on the `local[2]` session: every command, every run. */
class CommandMatrixSuite extends AnyFunSuite with CommandMatrix {
  registerCommands(commands)
}
