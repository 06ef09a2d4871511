//! The file stores behind `parley_domain::files::FileStore`: a folder of
//! this machine (`file://`) or any S3-compatible object store (`s3://`:
//! AWS, MinIO, Garage, R2), both through `object_store`, so that one
//! code path streams to either.
//!
//! A body is written as a multipart upload in parts of [`PART`] bytes
//! ([`LOCAL_PART`] in a folder) with at most [`IN_FLIGHT`] parts on their
//! way: memory per upload stays bounded whatever the file's size, and an
//! upload that fails or goes past its limit is aborted, which leaves
//! nothing behind (object_store
//! stages a local upload in a temporary file and an S3 one as parts the
//! abort removes).

use std::future::Future;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt, WriteMultipart};
use parley_domain::files::{ByteStream, FileError, FileStore, HEAD_BYTES, Stored};

/// S3's smallest part but the last.
const PART: usize = 5 * 1024 * 1024;
/// A folder's parts: nothing requires them large, and each upload holds
/// its part in memory while it fills, so twenty at once stay small.
const LOCAL_PART: usize = 256 * 1024;
/// Parts of one upload on their way at once.
const IN_FLIGHT: usize = 2;

#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("must start with file:// or s3://, not {0}")]
    Scheme(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the files folder {0} cannot be made: {1}")]
    Folder(String, std::io::Error),
    #[error("the object store cannot be set up: {0}")]
    Store(#[from] object_store::Error),
}

struct Files {
    store: Arc<dyn ObjectStore>,
    shown: String,
    /// The folder of a `file://` store: files there are made private.
    folder: Option<PathBuf>,
}

/// An object store's access key, when the configuration gives one.
#[derive(Clone)]
pub struct S3Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
}

/// The store `url` names: `file://<folder>` (relative to the working
/// directory, or absolute as `file:///srv/parley/files`), or
/// `s3://<bucket>/<prefix>?endpoint=…&region=…` with `credentials`, or
/// else those of the usual `AWS_*` variables (or the machine's role).
pub fn open(url: &str, credentials: Option<S3Credentials>) -> Result<Arc<dyn FileStore>, FilesError> {
    check(url)?;
    if let Some(folder) = url.strip_prefix("file://") {
        return open_folder(FsPath::new(folder), url);
    }
    if url.starts_with("s3://") {
        return open_s3(url, credentials);
    }
    Err(FilesError::Scheme(crate::scheme_of(url)))
}

/// Whether `url` names a store `open` can open, without touching it: the
/// configuration's check at start, and `open`'s own.
pub fn check(url: &str) -> Result<(), FilesError> {
    if let Some(folder) = url.strip_prefix("file://") {
        return if folder.is_empty() { Err(FilesError::Invalid("file:// needs a folder".into())) } else { Ok(()) };
    }
    if !url.starts_with("s3://") {
        return Err(FilesError::Scheme(crate::scheme_of(url)));
    }
    let parsed = url::Url::parse(url).map_err(|e| FilesError::Invalid(e.to_string()))?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(FilesError::Invalid("s3:// needs a bucket".into()));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(FilesError::Invalid(
            "s3:// takes no credentials in the URL: set PARLEY_S3_ACCESS_KEY_ID and PARLEY_S3_SECRET_ACCESS_KEY".into(),
        ));
    }
    if let Some((other, _)) = parsed.query_pairs().find(|(k, _)| k != "endpoint" && k != "region") {
        return Err(FilesError::Invalid(format!("s3:// takes endpoint and region, not {other}")));
    }
    // The object store client takes the endpoint as a whole http(s) URL
    // (and fails hard on anything else): refused here, at start.
    match parsed.query_pairs().find(|(k, _)| k == "endpoint").map(|(_, v)| v.into_owned()) {
        Some(endpoint)
            if endpoint.chars().any(char::is_whitespace)
                || !url::Url::parse(&endpoint).is_ok_and(|e| matches!(e.scheme(), "http" | "https") && e.host_str().is_some()) =>
        {
            Err(FilesError::Invalid("s3:// endpoint= must be an http:// or https:// address".into()))
        }
        _ => Ok(()),
    }
}

fn open_folder(folder: &FsPath, url: &str) -> Result<Arc<dyn FileStore>, FilesError> {
    if folder.as_os_str().is_empty() {
        return Err(FilesError::Invalid("file:// needs a folder".into()));
    }
    let shown = folder.display().to_string();
    std::fs::create_dir_all(folder).map_err(|e| FilesError::Folder(shown.clone(), e))?;
    private(folder, 0o700).map_err(|e| FilesError::Folder(shown.clone(), e))?;
    let folder = folder.canonicalize().map_err(|e| FilesError::Folder(shown, e))?;
    let store = LocalFileSystem::new_with_prefix(&folder)?;
    Ok(Arc::new(Files { store: Arc::new(store), shown: url.to_owned(), folder: Some(folder) }))
}

fn open_s3(url: &str, credentials: Option<S3Credentials>) -> Result<Arc<dyn FileStore>, FilesError> {
    let parsed = url::Url::parse(url).map_err(|e| FilesError::Invalid(e.to_string()))?;
    let bucket = parsed.host_str().filter(|b| !b.is_empty()).ok_or_else(|| FilesError::Invalid("s3:// needs a bucket".into()))?;
    // The HTTP client speaks TLS through ring, as every client here does
    // (the first to need it installs it).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    if let Some(c) = credentials {
        builder = builder.with_access_key_id(c.access_key_id).with_secret_access_key(c.secret_access_key);
    }
    for (key, value) in parsed.query_pairs() {
        builder = match key.as_ref() {
            "endpoint" => builder.with_allow_http(value.starts_with("http://")).with_endpoint(value.as_ref()),
            "region" => builder.with_region(value.as_ref()),
            other => return Err(FilesError::Invalid(format!("s3:// takes endpoint and region, not {other}"))),
        };
    }
    let store: Arc<dyn ObjectStore> = Arc::new(builder.build()?);
    let prefix = parsed.path().trim_matches('/');
    let store: Arc<dyn ObjectStore> = if prefix.is_empty() { store } else { Arc::new(PrefixStore::new(store, prefix)) };
    // What is shown leaves the query's endpoint in, and no credentials
    // (they come from the environment, never from the URL).
    Ok(Arc::new(Files { store, shown: url.to_owned(), folder: None }))
}

/// A folder's file, read in pieces of [`READ_PIECE`]: object_store's
/// local reads come in 8 KiB pieces, each a write of its own to the
/// client, which made a download a fraction as fast as the disk.
async fn read_file(file: &FsPath) -> Result<(u64, ByteStream), FileError> {
    use tokio::io::AsyncReadExt;
    let opened = tokio::fs::File::open(file).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => FileError::NotFound,
        _ => FileError::Store(e.to_string()),
    })?;
    let size = opened.metadata().await.map_err(|e| FileError::Store(e.to_string()))?.len();
    let pieces = futures::stream::try_unfold(opened, |mut f| async move {
        let mut piece = bytes::BytesMut::with_capacity(READ_PIECE);
        while piece.len() < READ_PIECE {
            if f.read_buf(&mut piece).await? == 0 {
                break;
            }
        }
        Ok((!piece.is_empty()).then(|| (piece.freeze(), f)))
    });
    Ok((size, pieces.boxed()))
}

/// How much of a folder's file one piece of a download holds.
const READ_PIECE: usize = 256 * 1024;

#[cfg(unix)]
fn private(path: &FsPath, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn private(_path: &FsPath, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

fn store_error(e: object_store::Error) -> FileError {
    match e {
        object_store::Error::NotFound { .. } => FileError::NotFound,
        other => FileError::Store(other.to_string()),
    }
}

/// A key as the store takes it: the domain makes keys of random letters,
/// so anything else is refused rather than interpreted.
fn path(key: &str) -> Result<Path, FileError> {
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(FileError::NotFound);
    }
    Ok(Path::from(key))
}

impl Files {
    async fn write(&self, key: &str, mut body: ByteStream, max: u64) -> Result<Stored, FileError> {
        let location = path(key)?;
        let upload = self.store.put_multipart(&location).await.map_err(store_error)?;
        let part = if self.folder.is_some() { LOCAL_PART } else { PART };
        let mut writer = WriteMultipart::new_with_chunk_size(upload, part);
        let mut size = 0u64;
        let mut head = Vec::new();
        while let Some(chunk) = body.next().await {
            let refusal = match chunk {
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Some(FileError::TimedOut),
                Err(e) => Some(FileError::Cut(e.to_string())),
                Ok(chunk) => {
                    size += chunk.len() as u64;
                    if size > max {
                        Some(FileError::TooLarge(max))
                    } else {
                        let wanted = HEAD_BYTES.saturating_sub(head.len()).min(chunk.len());
                        head.extend_from_slice(&chunk[..wanted]);
                        match writer.wait_for_capacity(IN_FLIGHT).await {
                            Ok(()) => {
                                writer.put(chunk);
                                None
                            }
                            Err(e) => Some(store_error(e)),
                        }
                    }
                }
            };
            if let Some(refusal) = refusal {
                if let Err(e) = writer.abort().await {
                    tracing::warn!(error = %e, "an aborted upload could not be cleaned up");
                }
                return Err(refusal);
            }
        }
        writer.finish().await.map_err(store_error)?;
        if let Some(folder) = &self.folder
            && let Err(e) = private(&folder.join(key), 0o600)
        {
            tracing::warn!(error = %e, "a stored file could not be made private");
        }
        Ok(Stored { size, head })
    }
}

impl FileStore for Files {
    fn describe(&self) -> &str {
        &self.shown
    }

    fn shared(&self) -> bool {
        self.folder.is_none()
    }

    fn put(&self, key: &str, body: ByteStream, max: u64) -> std::pin::Pin<Box<dyn Future<Output = Result<Stored, FileError>> + Send + '_>> {
        let key = key.to_owned();
        Box::pin(async move { self.write(&key, body, max).await })
    }

    fn get(&self, key: &str) -> std::pin::Pin<Box<dyn Future<Output = Result<(u64, ByteStream), FileError>> + Send + '_>> {
        let key = key.to_owned();
        Box::pin(async move {
            let location = path(&key)?;
            if let Some(folder) = &self.folder {
                return read_file(&folder.join(location.as_ref())).await;
            }
            let found = self.store.get(&location).await.map_err(store_error)?;
            let size = found.meta.size;
            let stream = found.into_stream().map(|chunk| chunk.map_err(std::io::Error::other)).boxed();
            Ok((size, stream))
        })
    }

    fn delete(&self, key: &str) -> std::pin::Pin<Box<dyn Future<Output = Result<(), FileError>> + Send + '_>> {
        let key = key.to_owned();
        Box::pin(async move {
            let location = path(&key)?;
            if let Some(folder) = &self.folder {
                // What a crash left of an upload in a folder: object_store
                // stages it as `<key>#1` (`#2`… when one was there already).
                for n in 1..=3 {
                    match tokio::fs::remove_file(folder.join(format!("{key}#{n}"))).await {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                        Err(e) => return Err(FileError::Store(e.to_string())),
                    }
                }
            }
            match self.store.delete(&location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(store_error(e)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn body(chunks: Vec<Result<Bytes, std::io::Error>>) -> ByteStream {
        futures::stream::iter(chunks).boxed()
    }

    fn folder_store() -> (tempfile::TempDir, Arc<dyn FileStore>) {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&format!("file://{}", dir.path().join("files").display()), None).unwrap();
        (dir, store)
    }

    /// Every file under `dir`, staging files included.
    fn files_under(dir: &FsPath) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() { out.extend(files_under(&path)) } else { out.push(path) }
        }
        out
    }

    #[tokio::test]
    async fn deleting_a_key_removes_what_a_crash_left_of_its_upload() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&format!("file://{}", dir.path().join("files").display()), None).unwrap();
        std::fs::write(dir.path().join("files").join("abc#1"), b"half an upload").unwrap();
        store.delete("abc").await.unwrap();
        assert!(!dir.path().join("files").join("abc#1").exists());
    }

    #[tokio::test]
    async fn a_folder_keeps_a_file_private_and_streams_it_back() {
        let (dir, store) = folder_store();
        assert!(!store.shared(), "one machine's folder");
        let chunks = vec![Ok(Bytes::from_static(b"\x89PNG\r\n\x1a\n")), Ok(Bytes::from(vec![7u8; 20_000]))];
        let stored = store.put("k1", body(chunks), 1_000_000).await.unwrap();
        assert_eq!(stored.size, 20_008);
        assert_eq!(stored.head.len(), HEAD_BYTES);
        assert!(stored.head.starts_with(b"\x89PNG"));
        let (size, stream) = store.get("k1").await.unwrap();
        let read: Vec<u8> = stream.map(|c| c.unwrap().to_vec()).concat().await;
        assert_eq!((size, read.len()), (20_008, 20_008));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &FsPath| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir.path().join("files")), 0o700);
            assert_eq!(mode(&dir.path().join("files/k1")), 0o600);
        }
        store.delete("k1").await.unwrap();
        store.delete("k1").await.unwrap();
        assert!(matches!(store.get("k1").await, Err(FileError::NotFound)));
    }

    #[tokio::test]
    async fn an_upload_past_its_limit_or_cut_short_leaves_nothing() {
        let (dir, store) = folder_store();
        let big = vec![Ok(Bytes::from(vec![1u8; 600])), Ok(Bytes::from(vec![1u8; 600]))];
        assert!(matches!(store.put("k2", body(big), 1_000).await, Err(FileError::TooLarge(1_000))));
        let cut = vec![Ok(Bytes::from(vec![1u8; 600])), Err(std::io::Error::other("the client went away"))];
        assert!(matches!(store.put("k3", body(cut), 1_000).await, Err(FileError::Cut(_))));
        assert_eq!(files_under(&dir.path().join("files")), Vec::<PathBuf>::new(), "nothing stays, staging included");
        assert!(matches!(store.get("k2").await, Err(FileError::NotFound)));
    }

    #[tokio::test]
    async fn keys_and_urls_that_are_not_what_this_service_makes_are_refused() {
        let (_dir, store) = folder_store();
        for key in ["../escape", "a/b", "", "k.png"] {
            assert!(matches!(store.get(key).await, Err(FileError::NotFound)), "{key}");
        }
        assert!(matches!(open("ftp://x", None), Err(FilesError::Scheme(_))));
        assert!(matches!(open("file://", None), Err(FilesError::Invalid(_))));
        assert!(matches!(open("s3:///prefix", None), Err(FilesError::Invalid(_))));
        assert!(matches!(open("s3://bucket?colour=red", None), Err(FilesError::Invalid(_))));
        assert!(matches!(check("s3://key:secret@bucket/p"), Err(FilesError::Invalid(_))), "no credentials in the URL");
        assert!(check("s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=eu").is_ok());
        let s3 = open("s3://bucket/attachments?endpoint=http://127.0.0.1:9&region=us-east-1", None).unwrap();
        assert!(s3.shared(), "an object store is every instance's");
    }
}
