package io.deltareplay.internal

/**
 * State kept per SparkSession, made on first use and dropped with the session, and the bounded
 * caches it is kept in; the signal that a foreground read begins ([[ReadsBegin]]), which work that
 * yields to reads registers with. Uses: nothing of the other rooms.
 */
package object session
