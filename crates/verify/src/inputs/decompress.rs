//! Compressed inputs: gzip, zstd or xz, told by their first bytes.

use std::io::{BufRead, Read};

/// A reader that undoes gzip, zstd or xz, told by the first bytes.
pub(crate) fn decompressed<'a>(
    mut input: impl BufRead + 'a,
) -> std::io::Result<Box<dyn Read + 'a>> {
    let head = input.fill_buf()?;
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::bufread::MultiGzDecoder::new(input))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(
            ruzstd::decoding::StreamingDecoder::new(input)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?,
        )
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z']) {
        Box::new(xz2::bufread::XzDecoder::new_multi_decoder(input))
    } else {
        Box::new(input)
    })
}
