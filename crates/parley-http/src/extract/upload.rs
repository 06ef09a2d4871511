//! One file sent as `multipart/form-data`, handed on as a stream: the
//! body is never held whole, and the file store counts the size limit as
//! the bytes arrive.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{FromRequest, Request};
use axum::http::header;
use futures::{StreamExt, TryStreamExt};
use parley_domain::DomainError;
use parley_domain::files::ByteStream;

use crate::AppState;
use crate::error::ApiError;

/// What a form may carry beyond the file itself: its part's headers and
/// boundaries, and small fields a client adds.
pub const FORM_OVERHEAD: u64 = 64 * 1024;

/// The form's part named `file`: the name its client gave and its bytes.
pub struct FileUpload {
    pub name: String,
    pub body: ByteStream,
}

impl FromRequest<AppState> for FileUpload {
    type Rejection = ApiError;

    async fn from_request(req: Request, s: &AppState) -> Result<Self, ApiError> {
        let max = s.attachments.settings().max_size;
        let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
        let boundary = multer::parse_boundary(content_type).map_err(|_| ApiError::NotMultipart)?;
        // Refused before a byte is read when the client says how much is
        // coming; otherwise the store stops at the limit.
        let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > max.saturating_add(FORM_OVERHEAD)) {
            return Err(DomainError::TooLarge(max).into());
        }
        let limits = multer::SizeLimit::new().whole_stream(max.saturating_add(FORM_OVERHEAD).saturating_add(1));
        // Until the file's part begins, the form may bring FORM_OVERHEAD
        // bytes at most: a part's headers that never end (the parser
        // searches them again at every read) or large fields before the
        // file cost nothing beyond that.
        let budget = Arc::new(AtomicU64::new(FORM_OVERHEAD));
        let counted = {
            let (budget, mut seen) = (Arc::clone(&budget), 0u64);
            req.into_body().into_data_stream().map(move |chunk| {
                let chunk = chunk?;
                // Counted before this chunk: one chunk may hold the end of
                // the headers and the start of the file together.
                if seen > budget.load(Ordering::Relaxed) {
                    return Err(axum::Error::new(BeforeTheFile));
                }
                seen = seen.saturating_add(chunk.len() as u64);
                Ok(chunk)
            })
        };
        let mut form = multer::Multipart::with_constraints(counted, boundary, multer::Constraints::new().size_limit(limits));
        loop {
            let field = form.next_field().await.map_err(|e| not_a_form(&e, max))?;
            let Some(field) = field else { return Err(DomainError::invalid("file", "is required: send one part named file").into()) };
            if field.name() != Some("file") {
                // A small field some clients add; read and dropped.
                field.bytes().await.map_err(|e| not_a_form(&e, max))?;
                continue;
            }
            budget.store(u64::MAX, Ordering::Relaxed);
            let name = field.file_name().unwrap_or("file").to_owned();
            // A body past its read deadline is told apart (408) from one the
            // client cut short.
            let body = field
                .map_err(|e| {
                    let kind = if super::json::timed_out(&e) { std::io::ErrorKind::TimedOut } else { std::io::ErrorKind::Other };
                    std::io::Error::new(kind, e.to_string())
                })
                .boxed();
            return Ok(FileUpload { name, body });
        }
    }
}

/// More than the form's overhead arrived before the file's part.
#[derive(Debug)]
struct BeforeTheFile;

impl std::fmt::Display for BeforeTheFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("too much before the file's part")
    }
}

impl std::error::Error for BeforeTheFile {}

fn not_a_form(e: &multer::Error, max: u64) -> ApiError {
    if super::json::timed_out(e) {
        return ApiError::RequestTimeout;
    }
    if caused_by::<BeforeTheFile>(e) {
        return DomainError::invalid("file", "must come within the form's first 64 KiB").into();
    }
    match e {
        multer::Error::StreamSizeExceeded { .. } | multer::Error::FieldSizeExceeded { .. } => DomainError::TooLarge(max).into(),
        _ => DomainError::invalid("file", "is not in a readable multipart/form-data body").into(),
    }
}

/// Whether `E` is among the error's causes.
fn caused_by<E: std::error::Error + 'static>(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.is::<E>() {
            return true;
        }
        cause = c.source();
    }
    false
}
