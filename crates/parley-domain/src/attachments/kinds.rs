//! What a file is, told from its first bytes alone: the client's type and
//! name are never believed. The kinds are what a site chooses to take.

use serde::{Deserialize, Serialize};

/// A family of file types a site may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// PNG, JPEG, GIF, WebP (shown inline) and other images (downloads).
    Images,
    Pdf,
    /// Text in UTF-8: what has no other signature and reads as text.
    Text,
    /// Word, Excel and PowerPoint (both generations), OpenDocument, RTF.
    Office,
    /// ZIP, 7z, gzip, tar and their kin.
    Archives,
    Audio,
    Video,
}

impl FileKind {
    pub const ALL: [FileKind; 7] =
        [FileKind::Images, FileKind::Pdf, FileKind::Text, FileKind::Office, FileKind::Archives, FileKind::Audio, FileKind::Video];

    /// What a site takes unless it says otherwise.
    pub const DEFAULT: [FileKind; 4] = [FileKind::Images, FileKind::Pdf, FileKind::Text, FileKind::Office];

    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Images => "images",
            FileKind::Pdf => "pdf",
            FileKind::Text => "text",
            FileKind::Office => "office",
            FileKind::Archives => "archives",
            FileKind::Audio => "audio",
            FileKind::Video => "video",
        }
    }

    pub fn parse(s: &str) -> Option<FileKind> {
        FileKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What the first bytes of a file say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sniffed {
    /// The media type reported to clients (text is always `text/plain`:
    /// HTML or SVG is text like any other, never something to render).
    pub content_type: &'static str,
    pub kind: FileKind,
    /// Whether it is one of the image formats browsers show inline and
    /// Parley decodes (PNG, JPEG, GIF, WebP).
    pub picture: bool,
    /// The extension of files of this type (`txt` for text).
    pub extension: &'static str,
}

/// Archives taken (when a site takes archives): the common ones. Every
/// other type infer calls an archive (installers and packages: MSI, CAB,
/// DEB, RPM, CRX; Flash; databases) is refused.
const ARCHIVES: [&str; 11] = [
    "application/zip",
    "application/x-tar",
    "application/gzip",
    "application/x-bzip2",
    "application/x-7z-compressed",
    "application/x-xz",
    "application/vnd.rar",
    "application/zstd",
    "application/x-lz4",
    "application/x-lzip",
    "application/epub+zip",
];

/// Extensions a text file may keep: none that a desktop would run or a
/// browser render (`.hta`, `.js`, `.bat`, `.svg`, `.html` become `.txt`).
const TEXT_EXTENSIONS: [&str; 8] = ["txt", "csv", "tsv", "log", "md", "json", "yaml", "yml"];

impl Sniffed {
    /// `name` with an extension that says what the file is: kept when it
    /// fits the type, else the type's own appended, so a file is never
    /// offered under an extension that would open it as something else.
    pub fn fitting_name(&self, name: &str) -> String {
        let given = name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).unwrap_or_default();
        let fits = match self.kind {
            FileKind::Text => TEXT_EXTENSIONS.contains(&given.as_str()),
            _ => given == self.extension || (self.extension == "jpg" && given == "jpeg") || (self.extension == "tif" && given == "tiff"),
        };
        if fits { name.to_owned() } else { format!("{name}.{}", self.extension) }
    }
}

/// The types shown inline, when decoded within bounds.
pub const PICTURES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

const OFFICE: [&str; 10] = [
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.ms-excel",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.ms-powerpoint",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.oasis.opendocument.text",
    "application/vnd.oasis.opendocument.spreadsheet",
    "application/vnd.oasis.opendocument.presentation",
    "application/rtf",
];

/// Tells the type of a file from its first bytes (`head`, at most
/// [`crate::files::HEAD_BYTES`]); `whole` when `head` is the entire file.
/// `None`: nothing this service takes (an executable, a font, binary
/// data without a known signature).
pub fn sniff(head: &[u8], whole: bool) -> Option<Sniffed> {
    if let Some(t) = infer::get(head) {
        let (mime, extension) = (t.mime_type(), t.extension());
        let kind = match t.matcher_type() {
            _ if PICTURES.contains(&mime) => {
                return Some(Sniffed { content_type: mime, kind: FileKind::Images, picture: true, extension });
            }
            _ if mime == "application/pdf" => FileKind::Pdf,
            _ if OFFICE.contains(&mime) => FileKind::Office,
            _ if ARCHIVES.contains(&mime) => FileKind::Archives,
            infer::MatcherType::Text => return text(head, whole),
            infer::MatcherType::Image => FileKind::Images,
            infer::MatcherType::Audio => FileKind::Audio,
            infer::MatcherType::Video => FileKind::Video,
            _ => return None,
        };
        return Some(Sniffed { content_type: mime, kind, picture: false, extension });
    }
    text(head, whole)
}

/// Text: UTF-8 (a character cut by the end of `head` aside) without
/// control characters other than tab, line ends and form feed.
fn text(head: &[u8], whole: bool) -> Option<Sniffed> {
    let valid = match std::str::from_utf8(head) {
        Ok(s) => s,
        // Only the last character may be cut, and only when more follows.
        Err(e) if !whole && e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    let plain = valid.chars().all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r' | '\u{c}'));
    (plain && !head.is_empty()).then_some(Sniffed { content_type: "text/plain", kind: FileKind::Text, picture: false, extension: "txt" })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn types_come_from_content() {
        assert_eq!(sniff(PNG, false).map(|s| (s.content_type, s.picture)), Some(("image/png", true)));
        assert_eq!(sniff(b"%PDF-1.7\n", false).map(|s| s.kind), Some(FileKind::Pdf));
        assert_eq!(sniff(b"hello\nworld", true).map(|s| s.content_type), Some("text/plain"));
        assert_eq!(sniff("caf\u{e9}".as_bytes(), true).map(|s| s.kind), Some(FileKind::Text));
        assert_eq!(sniff(b"PK\x03\x04\x14\0\0\0\0\0", true).map(|s| s.kind), Some(FileKind::Archives));
    }

    #[test]
    fn markup_is_text_and_never_a_picture() {
        let svg = b"<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>";
        assert_eq!(sniff(svg, true).map(|s| (s.content_type, s.picture)), Some(("text/plain", false)));
        let html = b"<!DOCTYPE html><html><script>alert(1)</script></html>";
        assert_eq!(sniff(html, true).map(|s| (s.content_type, s.picture)), Some(("text/plain", false)));
    }

    #[test]
    fn binaries_and_broken_text_are_nothing() {
        assert_eq!(sniff(b"MZ\x90\0\x03\0\0\0\x04\0", true), None, "a Windows executable");
        assert_eq!(sniff(b"\x7fELF\x02\x01\x01\0", true), None);
        assert_eq!(sniff(b"abc\0def", true), None);
        assert_eq!(sniff(b"", true), None);
        // A character cut by the end of the head is fine, unless it is the whole file.
        let cut = &"ab\u{e9}".as_bytes()[..3];
        assert!(sniff(cut, false).is_some());
        assert!(sniff(cut, true).is_none());
    }

    #[test]
    fn names_get_an_extension_that_fits_what_the_file_is() {
        let text = sniff(b"<html><script>alert(1)</script></html>", true).expect("text");
        assert_eq!(text.fitting_name("invoice.pdf.hta"), "invoice.pdf.hta.txt");
        assert_eq!(text.fitting_name("run.BAT"), "run.BAT.txt");
        assert_eq!(text.fitting_name("notes.txt"), "notes.txt");
        assert_eq!(text.fitting_name("data.CSV"), "data.CSV");
        let pdf = sniff(b"%PDF-1.7\n", false).expect("pdf");
        assert_eq!(pdf.fitting_name("guide.pdf"), "guide.pdf");
        assert_eq!(pdf.fitting_name("setup.exe"), "setup.exe.pdf");
        let png = sniff(PNG, false).expect("png");
        assert_eq!(png.fitting_name("shot"), "shot.png");
    }

    #[test]
    fn installers_and_packages_are_refused_even_as_archives() {
        // An MSI (OLE storage), a Debian package, a CAB.
        assert_eq!(sniff(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\0\0\0\0\0\0\0\0", false).map(|s| s.kind), None);
        assert_eq!(sniff(b"!<arch>\ndebian-binary   ", false).map(|s| s.kind), None);
        assert_eq!(sniff(b"MSCF\0\0\0\0\0\0\0\0\0\0\0\0", false).map(|s| s.kind), None);
    }

    #[test]
    fn kinds_round_trip() {
        for k in FileKind::ALL {
            assert_eq!(FileKind::parse(k.as_str()), Some(k));
        }
    }
}
