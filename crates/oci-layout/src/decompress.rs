//! The decoders every reader of a layer, an input of verify or a compressed module shares. Each
//! reads the whole stream or fails: every zstd frame (skippable frames skipped, as libzstd
//! does), every gzip member (bgzip and parallel gzip write many), and a stream cut short is an
//! error, never a clean stop. A tar read through them is then checked to its end with
//! [`check_tar_end`]: what follows the end-of-archive blocks must be zero padding.

use std::io::{BufRead, Read};

/// The largest zstd window accepted, as `zstd --long=31` writes (libzstd's default stops at
/// 2^27 and would refuse such a layer).
const ZSTD_WINDOW_LOG_MAX: u32 = 31;

/// A reader of every gzip member of `input`.
pub fn gzip<'a>(input: impl BufRead + 'a) -> Box<dyn Read + 'a> {
    Box::new(flate2::bufread::MultiGzDecoder::new(input))
}

/// A reader of every zstd frame of `input` (libzstd's streaming decoder, which goes on past a
/// frame's end and skips skippable frames); a last frame cut short is an `UnexpectedEof`.
pub fn zstd<'a>(input: impl BufRead + 'a) -> std::io::Result<Box<dyn Read + 'a>> {
    let mut decoder = zstd::stream::read::Decoder::with_buffer(input)?;
    decoder.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
    Ok(Box::new(decoder))
}

/// Whether `head` (a blob's first bytes) starts a gzip stream.
pub fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

/// Whether `head` starts a zstd stream: a frame, or a skippable frame (`0x184D2A5?`), as
/// `zstd:chunked` layers begin.
pub fn is_zstd(head: &[u8]) -> bool {
    head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
        || (head.len() >= 4 && head[0] & 0xf0 == 0x50 && head[1..4] == [0x2a, 0x4d, 0x18])
}

/// Reads what a tar reader left after the end-of-archive blocks: zero padding is fine, any other
/// byte is an error (as containers/image refuses trailing data after a layer's tar).
pub fn check_tar_end(mut rest: impl Read) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut offset = 0u64;
    loop {
        let n = match rest.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(at) = buf[..n].iter().position(|b| *b != 0) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "data after the tar's end ({} bytes past its end-of-archive blocks): the layer is not one tar",
                    offset + at as u64
                ),
            ));
        }
        offset += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zstd_frame(bytes: &[u8]) -> Vec<u8> {
        zstd::encode_all(bytes, 3).expect("zstd")
    }

    fn gzip_member(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(bytes).expect("gzip");
        encoder.finish().expect("gzip")
    }

    fn read_all(mut reader: Box<dyn Read + '_>) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        reader.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn every_zstd_frame_is_read_and_skippable_frames_are_skipped() {
        let mut stream = zstd_frame(b"first frame, ");
        // A skippable frame (magic 0x184D2A50, length 4, payload), as zstd:chunked writes.
        stream.extend_from_slice(&[0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4]);
        stream.extend(zstd_frame(b"second frame"));
        let decoded = read_all(zstd(&stream[..]).expect("decoder")).expect("read");
        assert_eq!(decoded, b"first frame, second frame");
    }

    #[test]
    fn a_zstd_stream_cut_short_is_an_error_not_an_end() {
        let mut stream = zstd_frame(b"first frame, ");
        let second = zstd_frame(&[7u8; 4096]);
        stream.extend_from_slice(&second[..second.len() / 2]);
        let error = read_all(zstd(&stream[..]).expect("decoder")).expect_err("cut short");
        assert!(!error.to_string().is_empty());
    }

    #[test]
    fn every_gzip_member_is_read_and_a_cut_member_is_an_error() {
        let mut stream = gzip_member(b"one, ");
        stream.extend(gzip_member(b"two"));
        assert_eq!(read_all(gzip(&stream[..])).expect("read"), b"one, two");
        let cut = &stream[..stream.len() - 6];
        assert!(read_all(gzip(cut)).is_err());
    }

    #[test]
    fn magic_bytes_tell_the_compression() {
        assert!(is_zstd(&zstd_frame(b"x")));
        assert!(is_zstd(&[0x5e, 0x2a, 0x4d, 0x18]));
        assert!(!is_zstd(&[0x5e, 0x2a, 0x4d]));
        assert!(is_gzip(&gzip_member(b"x")));
        assert!(!is_gzip(b"ustar"));
    }

    #[test]
    fn zero_padding_after_a_tar_is_fine_and_other_bytes_are_not() {
        assert!(check_tar_end(&[0u8; 10240][..]).is_ok());
        let mut rest = vec![0u8; 1024];
        rest.extend_from_slice(b"garbage");
        let error = check_tar_end(&rest[..]).expect_err("garbage");
        assert!(error.to_string().contains("1024 bytes past"), "{error}");
    }
}
