//! Attachments' bytes, wherever an installation keeps them: a folder of
//! its own machine (`file://`) or any S3-compatible object store
//! (`s3://`), behind one interface, so the domain streams a file in and
//! out without knowing where it goes. The storage crate implements it.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use futures::stream::BoxStream;

/// A body arriving or leaving in pieces, never whole in memory.
pub type ByteStream = BoxStream<'static, Result<Bytes, std::io::Error>>;

/// How many of a file's first bytes `put` hands back, for telling its
/// type from its content.
pub const HEAD_BYTES: usize = 8 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The body went past the limit while it was read: nothing is kept.
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    #[error("no such file")]
    NotFound,
    /// The body could not be read to its end (the client went away):
    /// nothing is kept.
    #[error("the upload was cut short: {0}")]
    Cut(String),
    /// The body did not arrive within the time it had: nothing is kept.
    #[error("the upload took too long")]
    TimedOut,
    /// The store failed (a disk, a network, the object store's answer).
    #[error("the file store failed: {0}")]
    Store(String),
}

/// A file `put` kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub size: u64,
    /// Its first [`HEAD_BYTES`] (all of it when shorter).
    pub head: Vec<u8>,
}

type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, FileError>> + Send + 'a>>;

pub trait FileStore: Send + Sync + 'static {
    /// Where the files are, for logs and the operator (no credentials).
    fn describe(&self) -> &str;
    /// Whether every instance sharing the database sees the same files:
    /// an object store does, a folder of one machine does not.
    fn shared(&self) -> bool;
    /// Keeps `body` under `key`, counting while it reads: past `max`
    /// bytes, or when the body fails, it stops and nothing stays.
    fn put(&self, key: &str, body: ByteStream, max: u64) -> Answer<'_, Stored>;
    /// The file under `key`: its size and its bytes as they are read.
    fn get(&self, key: &str) -> Answer<'_, (u64, ByteStream)>;
    /// Removes the file under `key`; one already gone is no error.
    fn delete(&self, key: &str) -> Answer<'_, ()>;
}
