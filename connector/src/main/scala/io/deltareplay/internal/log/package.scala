package io.deltareplay.internal

/**
 * The transaction log: listing `_delta_log` (local and S3), log segments (checkpoint + commits),
 * reading commits and checkpoints, protocol and metadata ([[TableMeta]], the checksum file,
 * [[MetaCache]]), the file-action rows and their codecs ([[FileAction]], [[LiveFile]],
 * [[DvDescriptor]]), table paths and the snapshot a read loads ([[TableSnapshot]]), read-ahead and
 * the commit-text cache, store failures. Uses: `delta` (protocol checks), `session` (per- session
 * caches).
 */
package object log
