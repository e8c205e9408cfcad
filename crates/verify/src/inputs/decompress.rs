//! Compressed inputs: gzip, zstd or xz, told by their first bytes, each read to its last
//! member or frame.

use std::io::{BufRead, Read};

/// A reader that undoes gzip, zstd or xz, told by the first bytes.
pub(crate) fn decompressed<'a>(
    mut input: impl BufRead + 'a,
) -> std::io::Result<Box<dyn Read + 'a>> {
    let head = input.fill_buf()?;
    Ok(if oci_layout::decompress::is_gzip(head) {
        oci_layout::decompress::gzip(input)
    } else if oci_layout::decompress::is_zstd(head) {
        oci_layout::decompress::zstd(input)?
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z']) {
        Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(input))
    } else {
        Box::new(input)
    })
}
