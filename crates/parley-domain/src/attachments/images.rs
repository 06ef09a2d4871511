//! Reading a picture's size and making its thumbnail, within bounds.
//!
//! A small file can hold an enormous image (a decompression bomb: a PNG of
//! a few kilobytes that decodes to gigabytes). The dimensions are read
//! from the header first, and a picture of more than [`MAX_PIXELS`] is
//! never decoded: it is kept as a download, not shown inline. Decoding
//! itself runs under the `image` crate's limits, so a header that lies
//! cannot make it allocate more than [`MAX_ALLOC`].

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, ImageReader, Limits};

/// The most pixels a picture may have to be decoded (about a 24
/// megapixel photo; 96 MiB once decoded as RGBA).
pub const MAX_PIXELS: u64 = 25_000_000;
/// The most the decoder may allocate for one picture: the pixel bound
/// as RGBA and a little more. It also bounds what a header does not tell
/// (a GIF's frame larger than its screen).
pub const MAX_ALLOC: u64 = MAX_PIXELS * 4 + 4 * 1024 * 1024;
/// The longest side of a thumbnail.
pub const THUMBNAIL_SIDE: u32 = 320;
/// The largest file decoded at all: a picture of 25 megapixels is well
/// under it; a larger one is kept as a download without being read back.
pub const MAX_FILE: u64 = 32 * 1024 * 1024;

/// What decoding found.
#[derive(Debug)]
pub struct Picture {
    pub width: u32,
    pub height: u32,
    /// The thumbnail, as JPEG (or PNG when the picture has transparency).
    pub thumbnail: Vec<u8>,
}

/// Why a picture is not shown inline.
#[derive(Debug, PartialEq, Eq)]
pub enum NotShown {
    /// More than [`MAX_PIXELS`], or more than the decoder may allocate.
    TooLarge,
    /// Its signature says picture, its content does not decode.
    Unreadable,
}

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(65_535);
    limits.max_image_height = Some(65_535);
    limits.max_alloc = Some(MAX_ALLOC);
    limits
}

fn reader(bytes: &[u8], format: ImageFormat) -> ImageReader<Cursor<&[u8]>> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits());
    reader
}

/// A picture's size in pixels from its first bytes, when they hold its
/// header (they do for PNG, GIF and WebP; a JPEG's may come later).
pub fn dimensions(head: &[u8], content_type: &str) -> Option<(u32, u32)> {
    let format = ImageFormat::from_mime_type(content_type)?;
    reader(head, format).into_dimensions().ok()
}

/// Whether a picture of this size is decoded at all.
pub fn decodable(width: u32, height: u32) -> bool {
    u64::from(width) * u64::from(height) <= MAX_PIXELS
}

/// Decodes a picture of `content_type` (one of `kinds::PICTURES`) and
/// makes its thumbnail. CPU-bound: run it off the threads that serve.
pub fn inspect(bytes: &[u8], content_type: &str) -> Result<Picture, NotShown> {
    let format = ImageFormat::from_mime_type(content_type).ok_or(NotShown::Unreadable)?;
    let (width, height) = reader(bytes, format).into_dimensions().map_err(|_| NotShown::Unreadable)?;
    if !decodable(width, height) {
        return Err(NotShown::TooLarge);
    }
    let image = reader(bytes, format).decode().map_err(|e| match e {
        image::ImageError::Limits(_) => NotShown::TooLarge,
        _ => NotShown::Unreadable,
    })?;
    // What was decoded, not what the header said (a GIF's screen may be
    // smaller than its frame).
    if !decodable(image.width(), image.height()) {
        return Err(NotShown::TooLarge);
    }
    let thumbnail = thumbnail(&image).ok_or(NotShown::Unreadable)?;
    Ok(Picture { width: image.width(), height: image.height(), thumbnail })
}

fn thumbnail(image: &DynamicImage) -> Option<Vec<u8>> {
    let small = image.thumbnail(THUMBNAIL_SIDE, THUMBNAIL_SIDE);
    let mut out = Cursor::new(Vec::new());
    if image.color().has_alpha() {
        small.to_rgba8().write_to(&mut out, ImageFormat::Png).ok()?;
    } else {
        let rgb = small.to_rgb8();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80).encode_image(&rgb).ok()?;
    }
    Some(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([(x % 256) as u8, (y % 256) as u8, 90]));
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, ImageFormat::Png).expect("png");
        out.into_inner()
    }

    #[test]
    fn a_picture_gets_its_size_and_a_small_thumbnail() {
        let p = inspect(&png(1200, 600), "image/png").expect("decoded");
        assert_eq!((p.width, p.height), (1200, 600));
        let thumb = image::load_from_memory(&p.thumbnail).expect("thumbnail decodes");
        assert_eq!((thumb.width(), thumb.height()), (320, 160));
        assert_eq!(image::guess_format(&p.thumbnail).ok(), Some(ImageFormat::Jpeg));
    }

    /// CRC-32 as PNG chunks carry it.
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            }
        }
        !crc
    }

    /// A PNG whose header claims `width` x `height` (its data is a
    /// tiny picture's): what a bomb looks like before decoding.
    pub(crate) fn claiming(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = png(2, 2);
        // The signature (8), IHDR's length (4) and type (4), then its data.
        bytes[16..20].copy_from_slice(&width.to_be_bytes());
        bytes[20..24].copy_from_slice(&height.to_be_bytes());
        let crc = crc32(&bytes[12..29]);
        bytes[29..33].copy_from_slice(&crc.to_be_bytes());
        bytes
    }

    #[test]
    fn a_bomb_is_refused_before_it_is_decoded() {
        // 40,000 x 40,000: 6.4 GB as RGBA, in a file of 70 bytes.
        assert_eq!(inspect(&claiming(40_000, 40_000), "image/png").err(), Some(NotShown::TooLarge));
        // Within the pixel bound, decoding finds the lie: the data ends
        // long before 4,000 rows.
        assert_eq!(inspect(&claiming(4_000, 4_000), "image/png").err(), Some(NotShown::Unreadable));
        // The header alone tells, before anything is read back.
        assert_eq!(dimensions(&claiming(40_000, 40_000), "image/png"), Some((40_000, 40_000)));
        assert!(!decodable(40_000, 40_000));
    }

    #[test]
    fn a_lying_header_is_unreadable() {
        let mut broken = png(64, 64);
        broken.truncate(60);
        assert_eq!(inspect(&broken, "image/png").err(), Some(NotShown::Unreadable));
        assert_eq!(inspect(b"GIF89a", "image/gif").err(), Some(NotShown::Unreadable));
    }
}
